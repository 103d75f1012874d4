"""Servers claimlab runs itself (`LocalServer`: own data directory, option file and Unix socket,
no TCP), and what every server it connects to shares (`Server`; someone else's is in `external`).

The truth about a running server is what it reports (`facts()`), never the option file.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import mysql.connector

from ..errors import ServerGone, ServerStartError, SettingsMismatch, TargetUnavailable
from .flavor import Flavor
from .initcache import InitCache
from .options import ServerOptions, TargetSpec

STOP_TIMEOUT_S = 60.0
READY_POLL_S = 0.01
SOCKET_DIR_PREFIX = "claimlab-"   # private socket directories under the system tmp
# A MariaDB data directory takes about 110 MiB when initialised, MySQL 9.7's about 200 MiB.
LOW_DISK_BYTES = 1 << 30
# CR_SERVER_GONE_ERROR, CR_SERVER_LOST, CR_SERVER_LOST_EXTENDED: the connection died, not the query.
LOST_CONNECTION_ERRNOS = (2006, 2013, 2055)
# Variables that differ between two starts of the same configuration and say nothing about it.
VOLATILE_VARIABLES = frozenset({
    "port", "socket", "pid_file", "datadir", "log_error", "hostname", "tmpdir", "general_log_file",
    "slow_query_log_file", "log_bin_basename", "log_bin_index", "relay_log_basename",
    "relay_log_index", "innodb_data_home_dir", "innodb_log_group_home_dir", "basedir",
    "server_uuid", "gtid_binlog_pos", "gtid_binlog_state", "gtid_current_pos", "gtid_slave_pos",
    "gtid_executed", "gtid_purged", "timestamp", "last_insert_id", "rand_seed1", "rand_seed2",
    "secure_file_priv", "plugin_dir", "lc_messages_dir", "character_sets_dir",
    "innodb_undo_directory", "innodb_tmpdir", "mysqlx_port", "mysqlx_socket", "report_port",
})


@dataclass(frozen=True)
class Installation:
    """A server program on this machine: what runs, where it lives, and what it is."""

    binary: Path
    flavor: Flavor
    version_text: str                  # what `--version` said
    basedir: Path | None = None
    layout_lines: tuple[str, ...] = ()  # option lines naming the layout's directories
    package: str | None = None         # e.g. "mysql-server-core 9.7.4-2 from Debian sid"
    origin: str | None = None          # "vendor tarball", "source build" or "Debian package"
    archive: str | None = None         # the tarball it was extracted from
    archive_sha256: str | None = None  # and that tarball's checksum: two builds may share a version

    def describe(self) -> str:
        where = self.package + ", " if self.package else ""
        made = f"{self.origin}, " if self.origin else ""
        sha = f", {self.archive} sha256 {self.archive_sha256[:12]}" if self.archive_sha256 else ""
        return f"{self.flavor} ({made}{where}{self.basedir or self.binary}{sha})"

    def provenance(self) -> dict:
        """What a manifest records of the program a target ran."""
        said = re.sub(r"^/\S+\s+", "", self.version_text.strip())   # not the path: the cache's home
        return {"version": ".".join(map(str, self.flavor.version)), "version_text": said,
                "origin": self.origin, "package": self.package, "archive": self.archive,
                "archive_sha256": self.archive_sha256}


@dataclass(frozen=True)
class ServerFacts:
    """What a server says about itself after a start: the only trusted record of its settings."""

    version: str
    variables: dict[str, str] = field(repr=False)
    log_bin: bool

    def stable_variables(self) -> dict[str, str]:
        return {k: v for k, v in sorted(self.variables.items()) if k not in VOLATILE_VARIABLES}

    @property
    def flavor(self) -> Flavor:
        return Flavor.from_version_text(self.version)


def confined(command: list[str], cpus: tuple[int, ...] | None) -> list[str]:
    """`command` started on `cpus` only (taskset(1), util-linux, on every Debian): confined from
    its first instruction, so every thread it ever makes inherits the set. (An affinity set after
    the start races the threads started meanwhile; `preexec_fn` is unsafe in a threaded runner.)"""
    if cpus is None:
        return command
    return ["taskset", "--cpu-list", ",".join(map(str, cpus)), *command]


def verify_settings(requested: ServerOptions, facts: ServerFacts, target: str) -> None:
    """The server's word against the option file's: measuring the wrong setting is worse than
    failing. Names are compared as the server spells them (`utf8` is `utf8mb3` on 5.7). A
    mismatch is deterministic, so it raises SettingsMismatch, which is never retried."""
    problems = []
    if requested.log_bin is not None and facts.log_bin != requested.log_bin:
        problems.append(f"log_bin requested {'ON' if requested.log_bin else 'OFF'}, "
                        f"server reports {'ON' if facts.log_bin else 'OFF'}")
    for name in ("character_set_server", "collation_server", "sync_binlog",
                 "innodb_flush_log_at_trx_commit", "binlog_format"):
        wanted = getattr(requested, name)
        have = facts.variables.get(name)
        if wanted is not None and have is not None and not Flavor.same_name(str(wanted), have):
            problems.append(f"{name} requested {wanted}, server reports {have}")
    if problems:
        raise SettingsMismatch(f"target {target}: " + "; ".join(problems))


class Server:
    """A server claimlab can connect to. Local kinds are started and stopped by claimlab."""

    target: TargetSpec
    pid: int | None = None
    options: ServerOptions = ServerOptions()   # what claimlab asked for (empty for external targets)
    initialise_s: float = 0.0   # what initialising the data directory took in the last start (0: none)
    cpus: tuple[int, ...] | None = None   # the vCPUs it and the sysbench runs against it share (None: all)

    def connect_args(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def flavor(self) -> Flavor:
        raise NotImplementedError

    def connect(self, **extra):
        """A connection with an explicit charset, so the connector never guesses a collation."""
        args = dict(self.connect_args(), charset="utf8mb4", collation="utf8mb4_general_ci",
                    autocommit=True, connection_timeout=10)
        args.update(extra)
        try:
            return mysql.connector.connect(**args)
        except mysql.connector.Error as exc:
            raise ServerGone(f"target {self.target.name}: cannot connect: {exc.msg}") from None

    def lost(self, exc: mysql.connector.Error) -> bool:
        """Whether a failed statement means the server went away (retry on a new process), not
        that the statement itself was wrong. A connection the connector already found closed
        (OperationalError without a server errno: "Connection not available") counts: a killed
        server closes its sockets before its process has exited, so `alive()` may still say yes."""
        return (not self.alive() or exc.errno in LOST_CONNECTION_ERRNOS
                or (isinstance(exc, mysql.connector.errors.OperationalError) and exc.errno == -1))

    @contextlib.contextmanager
    def answering(self, doing: str) -> Iterator[None]:
        """Statements inside fail as ServerGone when the server went away (the runner retries
        those on a new process); any other connector error passes unchanged."""
        try:
            yield
        except mysql.connector.Error as exc:
            if self.lost(exc):
                raise ServerGone(f"target {self.target.name}: server went away while {doing}: "
                                 f"{exc.msg}") from None
            raise

    def facts(self) -> ServerFacts:
        conn = self.connect()
        try:
            with self.answering("reading its variables"):
                cur = conn.cursor()
                cur.execute("SELECT VERSION()")
                version = cur.fetchone()[0]
                cur.execute("SHOW GLOBAL VARIABLES")
                variables = {str(k): str(v) for k, v in cur.fetchall()}
        finally:
            conn.close()
        return ServerFacts(version=version, variables=variables,
                           log_bin=variables.get("log_bin", "OFF").upper() in ("ON", "1"))

    def alive(self) -> bool:
        return True

    def drop_schema(self, schema: str) -> None:
        """Only ever a schema claimlab owns: the prefix is checked here, where the SQL is built."""
        if not re.fullmatch(r"claimlab_[A-Za-z0-9_]{1,55}", schema):
            raise ValueError(f"refusing to drop {schema!r}: not a claimlab schema")
        conn = self.connect()
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{schema}`")
        finally:
            conn.close()

    def request_stop(self) -> None:
        """Ask for a shutdown without waiting for it (`stop()` waits); nothing to ask here."""

    def stop(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class LocalServer(Server):
    """A mariadbd or mysqld claimlab runs itself: own data directory, option file and socket.

    `skip-networking`: every client (connector, sysbench) uses the Unix socket, so no TCP port is
    opened, which also avoids caching_sha2_password's TLS requirement on MySQL."""

    def __init__(self, target: TargetSpec, installation: Installation, home: Path, options: ServerOptions,
                 cpus: tuple[int, ...] | None = None, initialised: InitCache | None = None):
        self.target, self.installation, self.home, self.options = target, installation, home, options
        self.cpus = cpus
        self.initialised = initialised     # where initialised, empty data directories are kept
        self.binary = installation.binary
        self.executable = installation.binary   # what starts: the binary, or a placed copy of it
        self.datadir = home / "data"
        self.error_log = home / "error.log"
        self.password_file = home / "root.password"
        self.pid_file = home / "server.pid"
        self.cnf = home / "my.cnf"
        # Private: a starting server deletes every `#sql*` file in its tmpdir, which would include
        # the temporary tables of another claimlab's bootstrap sharing /tmp.
        self.tmpdir = home / "tmp"
        self.proc: subprocess.Popen | None = None
        self._stopping = False
        self.sockdir: str | None = None
        self.password: str | None = None

    @property
    def flavor(self) -> Flavor:
        return self.installation.flavor

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "LocalServer":
        self.home.mkdir(parents=True, exist_ok=True)
        self.tmpdir.mkdir(exist_ok=True)
        # Unix sockets have a 108-byte path limit: keep the socket in a short private directory.
        self.sockdir = tempfile.mkdtemp(prefix=SOCKET_DIR_PREFIX)
        self.cnf.write_text(self._option_file())
        self.initialise_s = 0.0
        try:
            if not (self.datadir / "mysql").is_dir():
                began = time.monotonic()
                self._initialise()
                self.initialise_s = time.monotonic() - began
        except BaseException:
            self._cleanup_sockdir()
            raise
        log_start = self.error_log.stat().st_size if self.error_log.exists() else 0
        self.proc = subprocess.Popen(confined([str(self.executable), f"--defaults-file={self.cnf}", "--user=root"],
                                              self.cpus),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.proc.pid
        self.pid_file.write_text(f"{self.pid}\n")
        try:
            self._wait_ready(self.target.ready_timeout, log_start)
        except BaseException:
            self._kill()
            self._cleanup_sockdir()
            raise
        return self

    def request_stop(self) -> None:
        """Ask for a clean shutdown without waiting for it (`stop()` waits)."""
        if self.proc is not None and self.proc.poll() is None and not self._stopping:
            self.proc.send_signal(signal.SIGTERM)  # mysqld and mariadbd shut down cleanly on TERM
            self._stopping = True

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.request_stop()
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._kill()
        self.proc = None
        self._stopping = False
        self.pid_file.unlink(missing_ok=True)
        self._cleanup_sockdir()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def connect_args(self) -> dict[str, Any]:
        return {"unix_socket": self._socket_path(), "user": "root", "password": self.password or ""}

    # -- internals -------------------------------------------------------------------------
    def _socket_path(self) -> str:
        return os.path.join(self.sockdir, "server.sock")

    def _option_file(self) -> str:
        inst = self.installation
        lines = ["[mysqld]", f"datadir={self.datadir}", f"socket={self._socket_path()}",
                 "skip-networking", f"log-error={self.error_log}", f"pid-file={self.home / 'mysqld.pid'}",
                 f"tmpdir={self.tmpdir}", "skip-name-resolve"]
        if inst.basedir:
            lines.append(f"basedir={inst.basedir}")
        lines += list(inst.layout_lines)
        lines += self.flavor.base_lines(self.home)
        lines += self.flavor.option_lines(self.options)
        return "\n".join(lines) + "\n"

    def _initialise(self) -> None:
        """All or nothing: initialise beside the data directory and rename it into place, so a
        failed or killed initialisation never leaves a half-made system schema that a later start
        would take for a good one (MariaDB starts on it, without grant tables). The option file
        is the one the server starts with, so init-only settings apply; `--datadir` on the command
        line points it at the partial directory. A configuration initialised before is copied
        from the cache of initialised directories instead (initcache)."""
        partial = self.home / "data.partial"
        for path in (self.datadir, partial):
            if path.exists():
                shutil.rmtree(path)
        key = self.initialised.key(self) if self.initialised else None
        if not (key and self.initialised.restore(key, partial)):
            self._run_initialisation(partial)
            if key:
                self.initialised.save(key, partial)
        partial.rename(self.datadir)
        self.password_file.unlink(missing_ok=True)

    def _run_initialisation(self, partial: Path) -> None:
        log_start = self.error_log.stat().st_size if self.error_log.exists() else 0
        cmd = self.flavor.init_command(self.binary, self.cnf) + [f"--datadir={partial}"]
        timeout = self.target.init_timeout
        try:
            result = subprocess.run(confined(cmd, self.cpus), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                    timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            shutil.rmtree(partial, ignore_errors=True)
            raise ServerStartError(f"target {self.target.name}: initialising {self.datadir} did not "
                                   f"finish within {timeout:.0f} s (init_timeout): "
                                   f"{self._log_tail(log_start)}") from None
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).splitlines()
            logged = [ln for ln in self._log_lines(log_start) if "[ERROR]" in ln]
            tail = _tail(logged or [ln for ln in lines if "ERROR" in ln] or lines)
            shutil.rmtree(partial, ignore_errors=True)
            raise ServerStartError(f"target {self.target.name}: initialising {self.datadir} failed: {tail}"
                                   f"{disk_hint(self.home)}")

    def _wait_ready(self, timeout: float, log_start: int) -> None:
        """Poll every READY_POLL_S for the socket and a first connection: MariaDB is ready in
        about 0.15 s, so a coarser poll would add a good share to every server start."""
        deadline = time.monotonic() + timeout
        if self.password_file.exists():
            self.password = self.password_file.read_text().strip()
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(f"target {self.target.name}: server exited with code "
                                       f"{self.proc.returncode}: {self._log_tail(log_start)}")
            if os.path.exists(self._socket_path()):
                try:
                    conn = mysql.connector.connect(unix_socket=self._socket_path(), user="root",
                                                   password=self.password or "", charset="utf8mb4",
                                                   collation="utf8mb4_general_ci", connection_timeout=5)
                except mysql.connector.Error:
                    time.sleep(READY_POLL_S)
                    continue
                try:
                    if self.password is None:
                        self._lock_down(conn)
                finally:
                    conn.close()
                return
            time.sleep(READY_POLL_S)
        raise ServerStartError(f"target {self.target.name}: not ready after {timeout:.0f} s: "
                               f"{self._log_tail(log_start)}")

    def _lock_down(self, conn) -> None:
        """A fresh server has passwordless root and anonymous accounts: keep only root@localhost,
        with a random password that lives beside the data directory (mode 0600) and nowhere else."""
        cur = conn.cursor()
        cur.execute("SET SESSION sql_log_off = 1")   # keep the password out of a general log
        cur.execute("SELECT User, Host FROM mysql.user WHERE User IN ('', 'root') "
                    "AND NOT (User = 'root' AND Host = 'localhost')")
        for user, host in cur.fetchall():
            cur.execute("DROP USER %s@%s", (user, host))
        password = secrets.token_urlsafe(24)
        cur.execute("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (password,))
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(password)
        self.password = password

    def _log_lines(self, start: int = 0) -> list[str]:
        try:
            with open(self.error_log, "rb") as fh:
                fh.seek(start)
                return fh.read().decode(errors="replace").splitlines()
        except OSError:
            return []

    def _log_tail(self, start: int = 0) -> str:
        lines = self._log_lines(start)
        text = _tail([ln for ln in lines if "[ERROR]" in ln] or lines) if lines else "(nothing in the error log)"
        return text + disk_hint(self.home)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _cleanup_sockdir(self) -> None:
        if self.sockdir:
            shutil.rmtree(self.sockdir, ignore_errors=True)
            self.sockdir = None


def stop_all(servers: list[Server]) -> None:
    """Stop several servers, their shutdowns overlapping (each flushes its own dirty pages)."""
    for server in servers:
        server.request_stop()
    for server in servers:
        server.stop()


def binary_version(binary: Path) -> str:
    """`--version` of a server program, once per program file (not once per repetition). A
    program that cannot run (e.g. a missing libaio.so.1) is unavailable, with its own words."""
    try:
        st = binary.stat()
    except OSError:
        raise TargetUnavailable(f"{binary} does not exist") from None
    return _version_of(str(binary), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _version_of(binary: str, mtime_ns: int, size: int) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TargetUnavailable(f"{binary} --version cannot run: {exc}") from None
    text = (out.stdout or out.stderr).strip()
    if out.returncode != 0 or not re.search(r"\d+\.\d+\.\d+", out.stdout):
        raise TargetUnavailable(f"{binary} --version failed (exit {out.returncode}): "
                                f"{_tail(text.splitlines(), 1)}")
    return text


def remove_socket_dir(home: Path) -> None:
    """For a server whose claimlab died: its socket lived in a private directory outside `home`
    (a socket path has a 108-byte limit). Read it back from the option file `start` wrote, and
    remove it only if it is one claimlab made."""
    cnf = home / "my.cnf"
    if not cnf.exists():
        return
    for line in cnf.read_text().splitlines():
        if line.startswith("socket="):
            sockdir = Path(line.removeprefix("socket=")).parent
            if sockdir.name.startswith(SOCKET_DIR_PREFIX):
                shutil.rmtree(sockdir, ignore_errors=True)


def _tail(lines: list[str], n: int = 3) -> str:
    """At most `n` lines: the first and the last `n` - 1. A server logs the cause first and its
    consequences after (MariaDB on a full disk: 'error 28' first, then three lines that end in
    'Unknown/unsupported storage engine: InnoDB')."""
    lines = [ln.strip() for ln in lines if ln.strip()]
    if len(lines) > n:
        lines = lines[:1] + ["..."] + lines[1 - n:] if n > 1 else lines[:1]
    return " | ".join(lines) or "(nothing logged)"


def disk_hint(path: Path, low: int = LOW_DISK_BYTES) -> str:
    """What to do when a server failed for want of disk, which servers say only obliquely."""
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return ""
    if free >= low:
        return ""
    return f" ({free >> 20} MiB free on the file system of {path}: free some space, or pass --work on a larger one)"
