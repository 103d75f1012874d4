"""One unit of a plan: one server start of each of its cells (side by side, or `starts_per_block`
of them), started together, each condition's workloads measured (rounds.py), then left shutting
down while the next unit starts. Retries a unit on a new server process when one is lost or does
not start; everything else goes up to the runner, which ends the run."""

from __future__ import annotations

import itertools
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import accounting, datacache, provenance
from .design import Condition, Unit
from .errors import ServerGone, ServerStartError, SettingsMismatch
from .looks import Decided, Look
from .params import Experiment
from .records import now
from .rounds import run_workload
from .servers import Launcher, Placer, stop_all, verify_settings
from .writer import RunStore


@dataclass
class Context:
    exp: Experiment
    store: RunStore
    launcher: Launcher
    done: set
    speed_probe: dict | None      # {"sql", "n", "target_s"} once calibrated (kept on resume)
    bar: object = None
    stopping: list = field(default_factory=list)   # Stopping: units whose servers are shutting down
    slots: dict = field(default_factory=dict)      # (cell, start) -> the data directory slot it used last
    look: Look | None = None                      # the sequential look this block settles first
    window: accounting.LoadWindow | None = None    # the quiet check's, opened as the last unit ended
    placer: Placer | None = None                   # a fresh copy of each binary per block (None: off)
    drawn: tuple | None = None                     # (seq, attempt, placements) drawn for a unit ahead
    start_bests: dict = field(default_factory=dict)   # (condition, workload) -> each start's fastest (fast_rounds)
    start_cost: float | None = None                # the last measured unit's copies, start, prepare and warm-up (s)

    def stopping_homes(self) -> set[Path]:
        return {proc.server.home for s in self.stopping for proc in s.procs if hasattr(proc.server, "home")}

    def stopping_pids(self) -> list[int]:
        return [proc.server.pid for s in self.stopping for proc in s.procs if proc.server.pid]

    def finish_stops(self, phases: "Phases", homes: set[Path] | None = None) -> None:
        """Wait for the servers shutting down (those living in `homes`, or all), then keep in the
        cache what their unit loaded. Laps `stop_s` and `cache_s` of the unit that waits."""
        waiting = [s for s in self.stopping
                   if homes is None or any(getattr(p.server, "home", None) in homes for p in s.procs)]
        if not waiting:
            return
        self.stopping = [s for s in self.stopping if s not in waiting]
        for s in waiting:
            stop_all([proc.server for proc in s.procs])
            self.store.event("stopped", seq=s.seq, pids=[proc.server.pid for proc in s.procs])
        phases.lap("stop_s")
        for s in waiting:
            for proc in s.procs:
                if s.save and not proc.from_cache and datacache.save(proc.server, proc.cache_key):
                    self.store.event("datadir_cached", seq=s.seq, key=proc.cache_key)
        phases.lap("cache_s")


@dataclass(eq=False)
class Stopping:
    """A unit's servers, asked to shut down and awaited only when something needs them gone:
    the next unit's measurements (nothing is measured beside a shutdown), a server that reuses
    their data directory, the end of the run. Meanwhile the next unit's servers start and warm
    up. `save`: the unit loaded long enough that its data directory is worth keeping (datacache)."""

    seq: int
    procs: list
    save: bool


@dataclass
class Process:
    """One cell's server within a unit (one of its `starts`): the server, what it reported, and
    its metering sessions."""

    conditions: tuple[Condition, ...]
    server: object
    cache_key: str | None
    slot: int = 0
    repetition: int = 0           # the block this process's measurements belong to
    from_cache: bool = False
    facts: object = None
    meter: object = None
    probe: object = None
    placement: dict | None = None  # the copy of its binary it runs (servers.placement), recorded

    def close_sessions(self) -> None:
        """The meter's and the probe's connections (None: not opened yet, or already closed)."""
        for session in (self.meter, self.probe):
            if session is not None:
                session.close()
        self.meter = self.probe = None


def run_unit(ctx: Context, unit: Unit) -> int:
    """One server start (side by side: one per cell; with `starts_per_block` k, k per cell; all
    started together): every condition of the unit, warm-up, then the rounds.

    Server starts are numbered per unit (`attempt`) across resumes, so the rows of two server
    processes never share (seq, attempt) with their condition; servers.jsonl maps each to its pid.
    A server lost or not started restarts every server of the unit. A unit that ends well leaves
    its servers shutting down (`Stopping`), awaited before the next unit measures anything."""
    exp, store, design = ctx.exp, ctx.store, ctx.exp.design
    missing = [(c.id, w.name, rep, i) for rep in unit.repetitions for c in unit.conditions
               for w in c.workloads for i in range(design.iterations)]
    if all(key in ctx.done for key in missing):
        return 0
    first = store.starts().get(unit.seq, 0) + 1
    stored = 0
    for k in range(design.max_attempts):
        attempt = first + k
        phases = Phases()
        procs = {}
        handed_over = False
        slots = {(group[0].cell, r): _slot(ctx, group, r) for group in unit.cells for r in range(unit.starts)}
        ctx.finish_stops(phases, homes={found[1] for found in slots.values() if found})
        for group in unit.cells:
            c0 = group[0]
            for r in range(unit.starts):
                slot = slots[c0.cell, r][0] if slots[c0.cell, r] else 0
                server = ctx.launcher.prepare(exp.targets[c0.target], c0.server, slot=slot,
                                              fresh=design.fresh_datadir and k == 0, cpus=design.cpus)
                cache_key = None if design.fresh_datadir else datacache.cell_key(server, group)
                procs[c0.cell, r] = Process(group, server, cache_key, slot=slot,
                                             repetition=unit.repetition + r)
        for proc, placed in zip(procs.values(), _drawn(ctx, unit, attempt, phases)):
            if placed is not None:
                proc.server.executable, proc.placement = placed.executable, placed.record()
        phases.lap("place_s")
        load_before = provenance.loadavg()
        started = now()
        # the first quiet check reads from the end of the last unit's measurements (or from here):
        # the shutdown, the look, the start and the warm-up; servers still shutting down are ours
        window, ctx.window = ctx.window or accounting.LoadWindow(ctx.stopping_pids()), None
        try:
            _start_all(procs.values())
            for proc in procs.values():
                proc.facts = proc.server.facts()
                c0 = proc.conditions[0]
                store.record_server({"seq": unit.seq, "condition": c0.id if len(proc.conditions) == 1 else c0.cell,
                                     "cell": c0.cell, "conditions": [c.id for c in proc.conditions],
                                     "repetition": proc.repetition, "attempt": attempt, "target": c0.target,
                                     "version": proc.facts.version, "log_bin": proc.facts.log_bin,
                                     **_program(ctx.launcher, proc.server),
                                     "pid": proc.server.pid, "started_at": started, "loadavg_before": load_before,
                                     "datadir_from_cache": proc.from_cache, "slot": proc.slot,
                                     "placement": proc.placement},
                                    proc.facts.stable_variables())
                verify_settings(proc.server.options, proc.facts, c0.target)
                proc.meter = accounting.Meter(proc.server)
            phases.lap("start_s")
            if ctx.look is not None and ctx.look.answered() and ctx.look.stop():
                raise Decided    # answered while the servers started: no warm-up for nothing
            for index in range(len(exp.workloads)):
                stored += run_workload(ctx, unit, index, procs, attempt, phases, window if index == 0 else None)
            ctx.window = accounting.LoadWindow([proc.server.pid for proc in procs.values()])
            for proc in procs.values():
                proc.close_sessions()   # before the shutdown, which waits for open sessions
                proc.server.request_stop()
            # worth keeping: what making the data directory took, initialised (3 s and more on
            # MySQL, whose cached copy also lets the next start skip the wait for this one's
            # shutdown, see `_slot`) and loaded
            made = phases.totals["prepare_s"] + max(p.server.initialise_s for p in procs.values())
            save = datacache.worth_keeping(made)
            if not save:    # a later preload leaves these to their runs
                for proc in procs.values():
                    if not proc.from_cache:
                        datacache.note_quick(proc.cache_key, made)
            ctx.stopping.append(Stopping(unit.seq, list(procs.values()), save=save))
            handed_over = True
            phases.lap("stop_s")
            store.event("unit_done", seq=unit.seq, cell=unit.cell, repetition=unit.repetition,
                        attempt=attempt, loadavg_after=provenance.loadavg(), phases=phases.rounded())
            ctx.start_cost = sum(phases.totals[p] for p in ("place_s", "start_s", "prepare_s", "warmup_s"))
            return stored
        except Decided:
            store.event("unit_not_measured", seq=unit.seq, cell=unit.cell, repetition=unit.repetition,
                        attempt=attempt, reason="the sequential look decided while its servers started")
            return stored
        except SettingsMismatch:
            raise
        except (ServerGone, ServerStartError) as exc:
            store.event("attempt_failed", seq=unit.seq, cell=unit.cell, repetition=unit.repetition,
                        attempt=attempt, reason=str(exc))
            if k == design.max_attempts - 1:
                raise
            time.sleep(0.5)
        finally:
            if not handed_over:
                for proc in procs.values():
                    proc.close_sessions()
                stop_all([proc.server for proc in procs.values()])
    return stored


def _program(launcher, server) -> dict:
    """A start's record of where its program came from (servers.Installation.provenance)."""
    if not server.target.local:
        return {}
    prov = launcher.installation(server.target).provenance()
    return {"origin": prov["origin"], "archive_sha256": prov["archive_sha256"]}


def _draw(ctx: Context, unit: Unit, attempt: int) -> list:
    """A fresh copy of the binary of each of the unit's local servers (servers.placement), in the
    order its servers are prepared, drawn from the run, unit, attempt and server; None for an
    external one. A placement's state then holds one block, not the whole run. A copy's place is
    named by its target and its rank among that target's servers: units of a design that mixes
    programs (C3's versions) order them differently, and each program has its own layout."""
    placed, ranks = [], {}
    for n, (group, _) in enumerate(itertools.product(unit.cells, range(unit.starts))):
        target = ctx.exp.targets[group[0].target]
        rank = ranks[target.name] = ranks.get(target.name, -1) + 1
        placed.append(None if not target.local else ctx.placer.place(
            ctx.launcher.installation(target).binary, f"{target.name}-{rank}",
            f"{ctx.store.run_id}/{unit.seq}/{attempt}/{n}"))
    return placed


def draw_ahead(ctx: Context, unit: Unit) -> None:
    """The next unit's copies, drawn while the last unit's servers shut down and before the next
    sequential look starts: a copy is Python work, which a look's thread slows several-fold (C2 on
    MariaDB: mariadbd's copies took 0.04-0.09 s in the twelve units before the first look,
    0.16-0.49 s in the 24 beside one)."""
    attempt = ctx.store.starts().get(unit.seq, 0) + 1
    ctx.drawn = (unit.seq, attempt, _draw(ctx, unit, attempt))


def _drawn(ctx: Context, unit: Unit, attempt: int, phases: "Phases") -> list:
    """The unit's copies: those drawn ahead for this very attempt (their time counts in this unit's
    `place_s`), or drawn now (the run's first unit, a retry). Nothing when placement is off."""
    if ctx.placer is None:
        return []
    ahead, ctx.drawn = ctx.drawn, None
    if ahead is not None and ahead[:2] == (unit.seq, attempt):
        phases.totals["place_s"] += sum(p.seconds for p in ahead[2] if p is not None)
        return ahead[2]
    return _draw(ctx, unit, attempt)


def _slot(ctx: Context, group, start: int) -> tuple[int, Path] | None:
    """Which data directory a cell's server (its `start`-th of a unit) uses this time, and its
    home (None: not a local server). Each start of a unit has two (2 * start and the next), and
    takes the other one when its last server is still shutting down and its shutdown is slow
    (Oracle MySQL) and the data it needs comes from the cache: a copy of a cached load is cheaper
    than the wait. Without a cached load a second directory would have to be initialised and
    loaded (3 s and more on MySQL), so the server waits for its predecessor."""
    c0 = group[0]
    target = ctx.exp.targets[c0.target]
    if not target.local:
        return None
    slot = ctx.slots.get((c0.cell, start), 2 * start)
    home = ctx.launcher.home(target, c0.server, slot)
    if home in ctx.stopping_homes() and not ctx.exp.design.fresh_datadir \
            and ctx.launcher.installation(target).flavor.slow_shutdown:
        other = 4 * start + 1 - slot     # 2 * start <-> 2 * start + 1
        server = ctx.launcher.prepare(target, c0.server, slot=other)
        if datacache.has(datacache.cell_key(server, group)):
            slot, home = other, server.home
    ctx.slots[c0.cell, start] = slot
    return slot, home


def _start_all(procs) -> None:
    """Restore each cached data directory and start the servers, side by side at once (a start
    is mostly waiting: for InnoDB's recovery checks and the first connection)."""
    procs = list(procs)

    def start(proc: Process) -> None:
        proc.from_cache = datacache.restore(proc.server, proc.cache_key)
        proc.server.start()

    if len(procs) == 1:
        start(procs[0])
        return
    with ThreadPoolExecutor(len(procs)) as pool:
        for future in [pool.submit(start, proc) for proc in procs]:
            future.result()


class Phases:
    """Wall time per phase of a unit (start, load, warm-up, waiting for the sequential look, probe,
    quiet check, measured, stop, saving the loaded data directory)."""

    def __init__(self):
        self.totals = dict.fromkeys(("place_s", "start_s", "prepare_s", "warmup_s", "look_s", "probe_s",
                                     "quiet_s", "measure_s", "stop_s", "cache_s"), 0.0)
        self._clock = time.monotonic()

    def lap(self, phase: str) -> None:
        now_ = time.monotonic()
        self.totals[phase] += now_ - self._clock
        self._clock = now_

    def move(self, source: str, dest: str, seconds: float) -> None:
        self.totals[source] -= seconds
        self.totals[dest] += seconds

    def rounded(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in self.totals.items()}
