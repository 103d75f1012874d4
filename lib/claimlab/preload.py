"""Tables loaded ahead of the runs: fill the data-directory cache (`datacache`) with each cell's
initialised and loaded data directory, so that a run's first server start copies one instead of
initialising and loading it.

Loading is set-up, made once per server binary, options and tables; a run's time is then the
measurement and what has to happen around it. `claimlab report` preloads before its runs (and
says how long it took), `claimlab prepare` does it alone. What preloading keeps is exactly what a
run would keep: the same cache key, only directories that took `datacache.MIN_LOAD_S` or more to
make, saved after a clean shutdown. A cell a run or an earlier preload found quicker to make than
that (`datacache.known_quick`) is not made here only to be dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import datacache
from .design import cells, conditions, runnable_conditions
from .errors import ServerGone, ServerStartError, signals_raise
from .params import Experiment
from .records import new_run_id
from .runner import claim_work, cleanup_work
from .servers import Launcher
from .store import project_root


@dataclass(frozen=True)
class Preloaded:
    """One cell's data directory: made now (`seconds`: initialising and loading it), found, or
    left to its run, which was seen to make it quickly."""

    experiment: str
    target: str
    cell: str
    seconds: float
    kept: bool        # in the cache now (False: made faster than datacache.MIN_LOAD_S, a run makes its own)
    found: bool       # it was in the cache already: nothing was started
    quick: bool = False   # made faster than MIN_LOAD_S before: not made now, nothing was started

    def __post_init__(self):
        if self.seconds < 0:
            raise ValueError(f"seconds: {self.seconds} is negative")
        if self.found and not self.kept:
            raise ValueError("found: a directory found in the cache is kept")
        if self.quick and (self.kept or self.found or self.seconds):
            raise ValueError("quick: a directory left to its run was neither made nor found")

    def outcome(self) -> str:
        if self.found:
            return "already cached"
        if self.quick:
            return "left to its run (quicker to make than to copy, seen before)"
        if self.kept:
            return f"loaded in {self.seconds:.1f} s, kept"
        return f"loaded in {self.seconds:.1f} s, not kept (quicker to make than to copy)"


def summary(made: list[Preloaded]) -> str:
    """One line for a report's log: how many directories were made and kept, how many left to runs."""
    kept = sum(p.kept for p in made)
    quick = sum(p.quick for p in made)
    left = len(made) - kept - quick
    return ", ".join(part for part in (
        f"{kept} data director{'y' if kept == 1 else 'ies'} kept in the cache for the runs to copy" if kept else "",
        f"{left} quicker to make than to copy, made again by {'its run' if left == 1 else 'their runs'}"
        if left else "",
        f"{quick} left to {'its run' if quick == 1 else 'their runs'} (quicker to make than to copy, seen before)"
        if quick else "") if part)


def preload(exp: Experiment, *, work_root=None, log=None) -> list[Preloaded]:
    """Make and cache the data directory of every cell of `exp` that can run here and is not
    cached yet. Nothing for designs that start from a fresh directory, or external targets.
    Raises TargetUnavailable when no condition can run here."""
    if exp.design.fresh_datadir:
        return []
    runnable, _ = runnable_conditions(exp, conditions(exp))
    work_root = work_root or project_root() / "work"
    run_id = f"preload-{new_run_id()}"
    work = work_root / run_id
    launcher = Launcher(work)
    lock, _ = claim_work(work_root, work, run_id)   # a crashed preload's servers are reaped as a run's
    done = []
    try:
        with signals_raise():   # SIGTERM, like Ctrl-C, unwinds: the server being loaded is stopped
            for group in cells(runnable):
                c0 = group[0]
                target = exp.targets[c0.target]
                if not target.local:
                    continue
                server = launcher.prepare(target, c0.server)
                key = datacache.cell_key(server, group)
                if key is None:
                    continue
                if datacache.has(key):
                    done.append(Preloaded(exp.name, c0.target, c0.cell, 0.0, kept=True, found=True))
                    continue
                if datacache.known_quick(key):
                    done.append(Preloaded(exp.name, c0.target, c0.cell, 0.0, kept=False, found=False, quick=True))
                    continue
                if log:
                    log(f"{exp.name}: loading {c0.target} {c0.cell}")
                try:
                    seconds = _make(server, group)
                except (ServerStartError, ServerGone) as exc:
                    # the run makes it then, with its own retries (design.max_attempts)
                    if log:
                        log(f"{exp.name}: {c0.target} {c0.cell} not loaded ahead, its run will load it: {exc}")
                    continue
                if datacache.worth_keeping(seconds):
                    kept = datacache.save(server, key)
                else:
                    kept = False
                    datacache.note_quick(key, seconds)    # the next preload leaves it to its run
                done.append(Preloaded(exp.name, c0.target, c0.cell, seconds, kept=kept, found=False))
    finally:
        launcher.close()
        cleanup_work(work)
        lock.close()
    return done


def _make(server, group) -> float:
    """Start (initialising), load every condition's tables, stop cleanly: seconds initialising
    and loading, the runner's measure of what a directory is worth (`units.run_unit`)."""
    try:
        server.start()
        began = time.monotonic()
        for c in group:
            for w in c.workloads:
                w.prepare(server)
        return time.monotonic() - began + server.initialise_s
    finally:
        server.stop()
