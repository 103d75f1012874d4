"""From a target to a server: find (or fetch) the program a target names, say whether it can run
here, and prepare servers for a run, one data directory per configuration."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import replace
from pathlib import Path

import mysql.connector

from ..errors import ConfigError, TargetUnavailable
from .external import ExternalServer
from .flavor import Flavor
from .initcache import InitCache
from .kinds import cache_dir, kind_of
from .local import Installation, LocalServer, Server
from .options import ServerOptions, TargetSpec

# A named lock every claimlab run holds on an external server while it uses it: two runs against
# one server would otherwise share (and corrupt) the same claimlab schemas.
EXTERNAL_LOCK = "claimlab_run"


def installation(target: TargetSpec, download: bool = True) -> Installation:
    """The program a local target runs. `download`: fetch a `version:` tarball if not cached
    (a mysql-debian target is only ever fetched by `claimlab setup-mysql`)."""
    return kind_of(target).installation(target, download=download)


def flavor_of(target: TargetSpec) -> Flavor:
    """A target's product and version, known before any server starts (an external server is
    asked: it is already running)."""
    return kind_of(target).flavor(target)


def check_available(target: TargetSpec, download: bool = True) -> str:
    """A one-line description of what would run, or TargetUnavailable saying what to do."""
    return kind_of(target).describe(target, download=download)


def check_cpus(cpus: tuple[int, ...] | None, targets: list[TargetSpec], source: str) -> None:
    """Before a run starts: `design.cpus` names vCPUs this process may use, on targets claimlab
    starts itself (an external server's threads are not its to confine)."""
    if cpus is None:
        return
    offered = sorted(os.sched_getaffinity(0))
    missing = [cpu for cpu in cpus if cpu not in offered]
    if missing:
        raise ConfigError(source, "design.cpus", f"vCPU {missing[0]} is not one this machine offers "
                                                 f"(it has {', '.join(map(str, offered))})")
    for target in targets:
        if not target.local:
            raise ConfigError(source, "design.cpus",
                              f"target {target.name} is external: claimlab cannot confine a server it "
                              "does not start; set `cpus: null` in its design")


class Launcher:
    """Turns a target and a set of options into a server ready to start, reusing one data
    directory per configuration so that loaded data survives restarts between repetitions.
    On an external target it holds a named lock for as long as it lives (`close()`), so a
    second run against the same server refuses to start instead of sharing its schemas."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.initialised = InitCache(cache_dir() / "initialised")
        self._installations: dict[TargetSpec, Installation] = {}
        self._external_locks: dict[str, object] = {}

    def prepare(self, target: TargetSpec, options: ServerOptions, fresh: bool = False,
                program: Path | None = None, slot: int = 0, cpus: tuple[int, ...] | None = None) -> Server:
        """A server for `target` with `options`, not yet started (`start()` starts it).
        `program` runs instead of the installation's binary, with its layout and flavour (e.g. a
        script that starts it under valgrind: claimlab.profiling). `slot`: which of a
        configuration's data directories (`home`). `cpus`: the vCPUs the server and the sysbench
        runs against it are confined to (design.cpus); an external server cannot be."""
        if not target.local:
            if options != ServerOptions():
                raise ConfigError("(params)", f"targets.{target.name}",
                                  "conditions may not set server options on an external target")
            self._lock_external(target)
            server = ExternalServer(target)
            server.workdir = self.workdir     # where its sysbench runs record their pids (reaper)
            return server
        effective = target.options.merged(options)
        home = self.home(target, options, slot)
        if fresh and home.exists():
            shutil.rmtree(home)
        inst = self.installation(target)
        if program is not None:
            inst = replace(inst, binary=Path(program))
        return LocalServer(target, inst, home, effective, cpus, initialised=self.initialised)

    def home(self, target: TargetSpec, options: ServerOptions, slot: int = 0) -> Path:
        """Where a local server of this configuration lives. A second slot lets the next server
        of a configuration start while the previous one is still shutting down. The program is
        part of the name, as in the data cache's key: a data directory belongs to the server that
        made it, and a target name moved to another kind or version would otherwise start the
        new server on the old one's files (MariaDB on MySQL's: 'File ./ib_logfile0 was not found')."""
        inst = self.installation(target)
        identity = f"{target.options.merged(options).key()}\n{inst.binary}\n{inst.version_text}"
        key = hashlib.sha256(identity.encode()).hexdigest()[:10]
        return self.workdir / (f"{target.name}-{key}" + (f".{slot}" if slot else ""))

    def installation(self, target: TargetSpec) -> Installation:
        if target not in self._installations:       # found (and its --version run) once per run
            self._installations[target] = installation(target)
        return self._installations[target]

    def _lock_external(self, target: TargetSpec) -> None:
        if target.name in self._external_locks:
            return
        conn = ExternalServer(target).connect()
        cur = conn.cursor()
        cur.execute("SELECT GET_LOCK(%s, 0)", (EXTERNAL_LOCK,))
        if cur.fetchone()[0] != 1:
            conn.close()
            raise TargetUnavailable(f"target {target.name}: another claimlab run is using this server "
                                    f"(it holds the lock {EXTERNAL_LOCK!r}); wait for it to finish")
        self._external_locks[target.name] = conn

    def close(self) -> None:
        """Release the external servers' locks (also released when the process ends)."""
        for conn in self._external_locks.values():
            try:
                conn.close()
            except mysql.connector.Error:
                pass
        self._external_locks.clear()
