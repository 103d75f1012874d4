"""Runs an experiment's plan: a server start per cell and block (side by side: the block's
servers started together), load, warm up, measure, store.

The runner owns the order of events and the handling of faults; it computes no statistics. With
a sequential design the caller passes `should_stop(results) -> bool | (bool, reason)`, asked
after every complete block with the run's results so far (read here, in a thread, while the next
block's servers start and warm up: the statistics do no I/O).

Faults: a server that dies (ServerGone) or does not start (ServerStartError) is retried on a new
server process, up to `max_attempts` starts per unit; those can pass on a second try. Everything
else ends the run, closed as `failed` (or `interrupted` on SIGINT/SIGTERM) and resumable:
- a setting the server reports differently from the option file (SettingsMismatch) is
  deterministic: a restart would repeat it;
- a WorkloadError (an SQL error, a wrong row count, sysbench failing while its server answers)
  is not retried either: each one seen here was a property of the workload and server (a
  refused collation, a plan change, a lost row) that a second try repeats or, worse, hides.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import shutil
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from . import accounting, datacache, provenance, witness
from . import workloads as wl
from .design import Condition, Unit, plan, round_order, unit_seed
from .errors import (
    ClaimlabError,
    Interrupted,
    ServerGone,
    ServerStartError,
    SettingsMismatch,
    WorkloadError,
)
from .params import Experiment
from .records import FORMAT_VERSION, MeasurementRecord, Metric, RunManifest, now
from .servers import (
    ExternalServer,
    Launcher,
    Placer,
    ServerOptions,
    reap,
    reaping,
    stop_all,
    verify_settings,
)
from .servers.reaper import mark
from .store import (
    RunStore,
    find_run,
    load_manifest,
    lock_writer,
    project_root,
    read_results,
    run_state,
    runs_root,
    unwritten,
)

__all__ = ["run", "RunOutcome", "Interrupted", "verify_settings", "signals_raise"]


@dataclass
class RunOutcome:
    run_id: str
    path: Path
    status: str
    measurements: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


@contextmanager
def signals_raise():
    """Turn SIGTERM (and SIGINT) into an exception so `finally` blocks stop the servers."""
    def handler(signum, frame):
        raise Interrupted(f"interrupted by {signal.Signals(signum).name}")
    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:   # not the main thread (e.g. inside some kernels): leave signals alone
        previous = {}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _document_text(document) -> str:
    return json.dumps(document, sort_keys=True, default=str)


def check_resumable(exp: Experiment, manifest: RunManifest, path: Path) -> None:
    """Everything `--resume` must know before it touches the run; raises with one line.

    The run is rebuilt from what was recorded: the params document must be the one the manifest
    holds (seed, levels, rows and options all come from it), and data files of a run that was
    closed (interrupted, failed) must still match the checksums written when it stopped, so a
    value edited by hand is never re-blessed by the resumed run's checksums."""
    rid = manifest.run_id
    if manifest.experiment != exp.name or manifest.profile != exp.profile:
        raise ClaimlabError(f"run {rid} is {manifest.experiment} / {manifest.profile}, "
                            f"not {exp.name} / {exp.profile}")
    if manifest.status == "complete":
        raise ClaimlabError(f"run {rid} is already complete; nothing to resume")
    if manifest.format_version != FORMAT_VERSION:
        raise ClaimlabError(f"run {rid} was written in results format {manifest.format_version}; "
                            f"this claimlab resumes format {FORMAT_VERSION} runs only")
    if _document_text(manifest.params) != _document_text(exp.document):
        raise ClaimlabError(f"run {rid}: {exp.source} differs from the params the run was started with "
                            "(kept in its manifest); restore the file or start a new run")
    if manifest.default_target is not None and manifest.default_target != exp.default_target:
        raise ClaimlabError(f"run {rid} ran on target {manifest.default_target}, not {exp.default_target}")
    # closed (interrupted, failed): its checksums; killed (still `running`): what it recorded writing
    changed = run_state(path).changed if manifest.status in ("interrupted", "failed") else unwritten(path)
    if changed:
        raise ClaimlabError(f"run {rid}: {', '.join(changed)} changed after the run stopped "
                            "(checksum mismatch); refusing to resume over edited data")


def run(exp: Experiment, *, data_root: Path | None = None, work_root: Path | None = None,
        resume: str | None = None, progress: bool = True, should_stop=None, log=None) -> RunOutcome:
    """Measure an experiment's plan (or resume one). `should_stop(results)` is asked after every
    complete block of a sequential design from its `min_blocks` on (no look before can stop it);
    it returns a bool or (bool, reason)."""
    if (exp.design.sequential is None) != (should_stop is None):
        raise ValueError(f"{exp.name}: a stopping callback goes with a sequential design, and only "
                         "with one (claimlab.stats.stopping_for(exp))")
    data_root = data_root or runs_root()
    the_plan = plan(exp)
    runnable, skipped, units = list(the_plan.conditions), the_plan.skipped, list(the_plan.units)
    blocks, first_look = the_plan.blocks, the_plan.first_look
    for workload in {w.name: w for c in runnable for w in c.workloads}.values():
        workload.check_tools()
    design = exp.design
    k = design.starts_per_block
    work_root = (work_root or project_root() / "work").absolute()

    writer = store = None
    if resume:
        path = find_run(resume, data_root)
        writer = lock_writer(path)     # one writer per run, whatever --work: a live run refuses here
        try:
            manifest = load_manifest(path)
            check_resumable(exp, manifest, path)    # reads only
        except BaseException:
            writer.close()
            raise
    else:
        manifest = the_plan.manifest.with_(work_root=str(work_root))
        path = None
    run_id = manifest.run_id
    work = work_root / run_id
    lock = bar = ctx = placer = None
    launcher = Launcher(work)
    try:   # on an external target, a run that another holds is refused before anything is written
        _lock_externals(exp, runnable, launcher)
    except BaseException:
        launcher.close()
        if writer is not None:
            writer.close()
        raise
    for line in the_plan.external_lines():
        (log or (lambda _: None))(line)
    if not resume:
        try:
            store = RunStore.create(data_root, manifest)
        except BaseException:
            launcher.close()
            raise
        path = store.path
    outcome = RunOutcome(run_id, path, "running", skipped=skipped)
    try:
        # the servers of this run's earlier sessions, wherever their --work was
        earlier = Path(manifest.work_root) if resume and manifest.work_root else None
        reaped = reap(earlier) if earlier is not None and earlier != work_root else []
        lock, here = claim_work(work_root, work, run_id)   # refuses a live run before anything is written
        reaped += here
        if store is None:
            store = RunStore.open_run(path, writer)
            store.event("resumed", git=provenance.git_commit(project_root()), host=provenance.host_facts())
            if manifest.work_root != str(work_root):
                store.update_manifest(work_root=str(work_root))
        if reaped:
            store.event("reaped_stale_servers", pids=reaped)
        placer = _placer(exp, runnable, store, log)
        ctx = _Context(exp, store, launcher, store.completed(), manifest.speed_probe, placer=placer)
        if design.fast_rounds is not None:   # a resumed run's fast level is read from its stored starts
            ctx.start_bests = store.start_bests(design.fast_rounds.metric, design.fast_rounds.fastest)
        total = the_plan.measurements
        # a sequential design's total (and ETA) is its cap: it usually stops before
        upto = f", stops when decided, at most {blocks} blocks" if design.sequential else ""
        bar = tqdm(total=total, desc=f"{exp.name} [{exp.profile}{upto}]", unit="meas",
                   disable=not progress, file=sys.stderr, dynamic_ncols=True)
        bar.update(len(ctx.done))
        ctx.bar = bar
        with signals_raise():
            current_block = 0
            for unit, following in zip(units, [*units[1:], None]):
                if unit.block != current_block:
                    current_block = unit.block
                    if should_stop is not None and unit.block >= first_look:
                        ctx.look = _Look(should_stop, store, unit.block * k)
                if not (ctx.look is not None and ctx.look.answered(look_wait(ctx.start_cost, blocks - unit.block))
                        and ctx.look.stop()):
                    outcome.measurements += _run_unit(ctx, unit)
                    store.sync()
                if ctx.look is not None and ctx.look.stop():
                    bar.total = bar.n       # decided: the bar ends full, not at the cap's share
                    bar.refresh()
                    break
                ctx.look = None
                if following is not None and ctx.placer is not None:
                    _draw_ahead(ctx, following)
            else:
                if should_stop is not None:
                    _at_cap(should_stop, store, blocks * k)
            last = _Phases()
            ctx.finish_stops(last)
            store.event("last_stop", phases={k: v for k, v in last.rounded().items() if v})
        outcome.status = "complete"
        store.finish("complete", skipped_targets=skipped)
    except BaseException as exc:
        if store is None or lock is None:
            if writer is not None:
                writer.close()
            raise          # refused before anything was touched
        outcome.status = "interrupted" if isinstance(exc, (Interrupted, KeyboardInterrupt)) else "failed"
        if isinstance(exc, Interrupted):
            exc.run_id = store.run_id   # the command line prints how to resume it
        _close_quietly(store, outcome.status, exc)
        raise
    finally:
        if ctx is not None:
            if ctx.look is not None:
                ctx.look.abandon()
            stop_all([proc.server for s in ctx.stopping for proc in s.procs])   # failed: nothing saved
        if bar is not None:
            bar.close()
        if lock is not None and store is not None:
            _drop_external_schemas(exp, runnable, store)   # while this run still holds their lock
        launcher.close()
        if placer is not None:
            placer.close()     # after the servers stopped: none runs from a copy any more
        if lock is not None:
            cleanup_work(work)
            lock.close()
        if store is not None:
            store.close()
    return outcome


def _lock_externals(exp: Experiment, conds: list[Condition], launcher: Launcher) -> None:
    """Take each external target's named lock now, for the whole run (`Launcher`): a run refused
    there has created nothing, neither a run folder nor a schema, and drops nothing."""
    for name in sorted({c.target for c in conds if not exp.targets[c.target].local}):
        launcher.prepare(exp.targets[name], ServerOptions())


def _placer(exp: Experiment, conds: list[Condition], store: RunStore, log) -> Placer | None:
    """The run's binary placements (design.place_binary), for runs with a server of their own. A
    host without a usable tmpfs runs its servers from their binaries, and the run records why."""
    if not exp.design.place_binary or not any(exp.targets[c.target].local for c in conds):
        return None
    placer = Placer()
    if placer.available:
        return placer
    store.event("placement_unavailable", reason=placer.reason)
    (log or (lambda _: None))(f"servers start from their binaries, not a fresh copy per block: {placer.reason}")
    return None


def claim_work(work_root: Path, work: Path, run_id: str):
    """Take the run's lock (held for the whole run: "this run is alive"), reaping dead runs'
    servers first. Reaping and claiming exclude each other, so a run that is starting (directory
    made, lock not yet taken) is never mistaken for a dead one."""
    work_root.mkdir(parents=True, exist_ok=True)
    with reaping(work_root) as reaped:
        if (work / ".lock").exists():
            with open(work / ".lock", "a") as probe:
                try:
                    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise ClaimlabError(f"run {run_id} is still running (its lock is held); "
                                        "nothing was changed") from None
        work.mkdir(parents=True, exist_ok=True)
        lock = open(work / ".lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        mark(work, run_id)     # the reaper removes only what claimlab marked as its own
    return lock, reaped


def _close_quietly(store: RunStore, status: str, exc: BaseException) -> None:
    """Record why the run stopped; if even that cannot be written (disk full), the original error
    is the one to report, and the results file is already valid."""
    store.release_reserve()    # a full disk still has room for the closing records
    for close in (lambda: store.event(status, reason=f"{type(exc).__name__}: {exc}"),
                  lambda: store.finish(status)):
        try:
            close()
        except (OSError, ClaimlabError):
            pass


def _drop_external_schemas(exp: Experiment, conds: list[Condition], store: RunStore) -> None:
    """On someone else's server, leave nothing behind but what was there: drop our schemas."""
    for name in sorted({c.target for c in conds if not exp.targets[c.target].local}):
        server = ExternalServer(exp.targets[name])
        for schema in sorted({w.schema() for c in conds if c.target == name for w in c.workloads}):
            try:
                server.drop_schema(schema)
            except ClaimlabError as exc:
                store.event("cleanup_failed", target=name, schema=schema, reason=str(exc))


def _at_cap(should_stop, store: RunStore, blocks: int) -> None:
    """A sequential run that measured its cap of blocks: the state the cap left, looked at once
    more (no look follows the last block otherwise), so the record says whether the comparisons
    were decided, still open, or short of the rule's minimum of counted blocks (a fast-state
    statistic counts only the blocks with fast-state values on both sides)."""
    answer = _look_at(should_stop, store)
    decided, reason = answer if isinstance(answer, tuple) else (bool(answer), None)
    store.event("sequential_cap", blocks=blocks, decided=bool(decided), reason=reason)


def _look_at(should_stop, store: RunStore):
    """`should_stop` asked about the run's results so far, read from results.csv here."""
    return should_stop(read_results(store.path))


class _Look:
    """A sequential look (`should_stop(results)`), taken in a thread while the next block's
    servers start and warm up, and settled before anything of that block is measured: the
    look reads results.csv, to which nothing is appended meanwhile. A look reads and
    analyses the whole run (0.1 s and more), which the block no longer waits for in full; the
    block's start waits a while first (`look_wait`), so a quick "stop" starts nothing unused."""

    def __init__(self, should_stop, store: RunStore, blocks_done: int):
        self.store, self.blocks_done = store, blocks_done
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="claimlab-look")
        self._future = self._pool.submit(_look_at, should_stop, store)
        self._stop: bool | None = None

    def answered(self, within: float = 0.0) -> bool:
        """Whether the answer is in, waiting for it at most `within` seconds. A failed look is
        answered too (`stop` raises its error); an interrupt while waiting goes on up."""
        return bool(futures_wait([self._future], timeout=within).done)

    def stop(self) -> bool:
        """The answer (waited for once, then recorded): whether the run is decided."""
        if self._stop is None:
            try:
                answer = self._future.result()
            finally:
                self._pool.shutdown()
            stop, reason = answer if isinstance(answer, tuple) else (bool(answer), None)
            self.store.event("sequential", blocks=self.blocks_done, stop=bool(stop), reason=reason)
            self._stop = bool(stop)
        return self._stop

    def abandon(self) -> None:
        """The run ends another way (a failure, an interrupt): its answer is no longer needed."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def look_wait(start_cost: float | None, looks_left: int) -> float:
    """How long the next block's start waits for the sequential look taken before it.

    A look that stops the run leaves the block started beside it unmeasured: its copies, start,
    warm-up and shutdown wasted (about 3 s for C2's two MySQL starts, 0.5 s for a MariaDB start),
    where a look takes 0.1-0.5 s. Waiting is worth the start's cost at the chance that this look
    stops the run, taken as even over the looks still to come and the cap (`looks_left`: this one
    and those after it that precede a block). So a run with few looks left waits for its answer
    and a long sequential run starts beside it, as it did before. Nothing known yet: no wait."""
    if not start_cost or looks_left < 1:
        return 0.0
    return start_cost / (looks_left + 1)


class _Decided(Exception):
    """The block's look decided the run while the block's servers were starting: measure nothing."""


@dataclass
class _Context:
    exp: Experiment
    store: RunStore
    launcher: Launcher
    done: set
    speed_probe: dict | None      # {"sql", "n", "target_s"} once calibrated (kept on resume)
    bar: object = None
    stopping: list = field(default_factory=list)   # _Stopping: units whose servers are shutting down
    slots: dict = field(default_factory=dict)      # (cell, start) -> the data directory slot it used last
    look: _Look | None = None                      # the sequential look this block settles first
    window: accounting.LoadWindow | None = None    # the quiet check's, opened as the last unit ended
    placer: Placer | None = None                   # a fresh copy of each binary per block (None: off)
    drawn: tuple | None = None                     # (seq, attempt, placements) drawn for a unit ahead
    start_bests: dict = field(default_factory=dict)   # (condition, workload) -> each start's fastest (fast_rounds)
    start_cost: float | None = None                # the last measured unit's copies, start, prepare and warm-up (s)

    def stopping_homes(self) -> set[Path]:
        return {proc.server.home for s in self.stopping for proc in s.procs if hasattr(proc.server, "home")}

    def stopping_pids(self) -> list[int]:
        return [proc.server.pid for s in self.stopping for proc in s.procs if proc.server.pid]

    def finish_stops(self, phases: "_Phases", homes: set[Path] | None = None) -> None:
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
class _Stopping:
    """A unit's servers, asked to shut down and awaited only when something needs them gone:
    the next unit's measurements (nothing is measured beside a shutdown), a server that reuses
    their data directory, the end of the run. Meanwhile the next unit's servers start and warm
    up. `save`: the unit loaded long enough that its data directory is worth keeping (datacache)."""

    seq: int
    procs: list
    save: bool


@dataclass
class _Process:
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


def _run_unit(ctx: _Context, unit: Unit) -> int:
    """One server start (side by side: one per cell; with `starts_per_block` k, k per cell; all
    started together): every condition of the unit, warm-up, then the rounds.

    Server starts are numbered per unit (`attempt`) across resumes, so the rows of two server
    processes never share (seq, attempt) with their condition; servers.jsonl maps each to its pid.
    A server lost or not started restarts every server of the unit. A unit that ends well leaves
    its servers shutting down (`_Stopping`), awaited before the next unit measures anything."""
    exp, store, design = ctx.exp, ctx.store, ctx.exp.design
    missing = [(c.id, w.name, rep, i) for rep in unit.repetitions for c in unit.conditions
               for w in c.workloads for i in range(design.iterations)]
    if all(key in ctx.done for key in missing):
        return 0
    first = store.starts().get(unit.seq, 0) + 1
    stored = 0
    for k in range(design.max_attempts):
        attempt = first + k
        phases = _Phases()
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
                procs[c0.cell, r] = _Process(group, server, cache_key, slot=slot,
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
                                     "pid": proc.server.pid, "started_at": started, "loadavg_before": load_before,
                                     "datadir_from_cache": proc.from_cache, "slot": proc.slot,
                                     "placement": proc.placement},
                                    proc.facts.stable_variables())
                verify_settings(proc.server.options, proc.facts, c0.target)
                proc.meter = accounting.Meter(proc.server)
            phases.lap("start_s")
            if ctx.look is not None and ctx.look.answered() and ctx.look.stop():
                raise _Decided    # answered while the servers started: no warm-up for nothing
            for index in range(len(exp.workloads)):
                stored += _run_workload(ctx, unit, index, procs, attempt, phases, window if index == 0 else None)
            ctx.window = accounting.LoadWindow([proc.server.pid for proc in procs.values()])
            for proc in procs.values():
                proc.close_sessions()   # before the shutdown, which waits for open sessions
                proc.server.request_stop()
            # worth keeping: what making the data directory took, initialised (3 s and more on
            # MySQL, whose cached copy also lets the next start skip the wait for this one's
            # shutdown, see `_slot`) and loaded
            made = phases.totals["prepare_s"] + max(p.server.initialise_s for p in procs.values())
            ctx.stopping.append(_Stopping(unit.seq, list(procs.values()), save=datacache.worth_keeping(made)))
            handed_over = True
            phases.lap("stop_s")
            store.event("unit_done", seq=unit.seq, cell=unit.cell, repetition=unit.repetition,
                        attempt=attempt, loadavg_after=provenance.loadavg(), phases=phases.rounded())
            ctx.start_cost = sum(phases.totals[p] for p in ("place_s", "start_s", "prepare_s", "warmup_s"))
            return stored
        except _Decided:
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


def _draw(ctx: _Context, unit: Unit, attempt: int) -> list:
    """A fresh copy of the binary of each of the unit's local servers (servers.placement), in the
    order its servers are prepared, drawn from the run, unit, attempt and server; None for an
    external one. A placement's state then holds one block, not the whole run."""
    placed = []
    for n, (group, _) in enumerate(itertools.product(unit.cells, range(unit.starts))):
        target = ctx.exp.targets[group[0].target]
        placed.append(None if not target.local else ctx.placer.place(
            ctx.launcher.installation(target).binary, f"s{n}", f"{ctx.store.run_id}/{unit.seq}/{attempt}/{n}"))
    return placed


def _draw_ahead(ctx: _Context, unit: Unit) -> None:
    """The next unit's copies, drawn while the last unit's servers shut down and before the next
    sequential look starts: a copy is Python work, which a look's thread slows several-fold (C2 on
    MariaDB: mariadbd's copies took 0.04-0.09 s in the twelve units before the first look,
    0.16-0.49 s in the 24 beside one)."""
    attempt = ctx.store.starts().get(unit.seq, 0) + 1
    ctx.drawn = (unit.seq, attempt, _draw(ctx, unit, attempt))


def _drawn(ctx: _Context, unit: Unit, attempt: int, phases: "_Phases") -> list:
    """The unit's copies: those drawn ahead for this very attempt (their time counts in this unit's
    `place_s`), or drawn now (the run's first unit, a retry). Nothing when placement is off."""
    if ctx.placer is None:
        return []
    ahead, ctx.drawn = ctx.drawn, None
    if ahead is not None and ahead[:2] == (unit.seq, attempt):
        phases.totals["place_s"] += sum(p.seconds for p in ahead[2] if p is not None)
        return ahead[2]
    return _draw(ctx, unit, attempt)


def _slot(ctx: _Context, group, start: int) -> tuple[int, Path] | None:
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

    def start(proc: _Process) -> None:
        proc.from_cache = datacache.restore(proc.server, proc.cache_key)
        proc.server.start()

    if len(procs) == 1:
        start(procs[0])
        return
    with ThreadPoolExecutor(len(procs)) as pool:
        for future in [pool.submit(start, proc) for proc in procs]:
            future.result()


def _run_workload(ctx: _Context, unit: Unit, index: int, procs: dict, attempt: int, phases,
                  window: accounting.LoadWindow | None = None) -> int:
    """One workload in one unit: load, warm up each condition, then the rounds, each round
    measuring every condition once on each of its cell's servers (`procs`, keyed by cell and
    start), in the recorded random order.
    `window`: the quiet check's window, if one is open already (since the servers' start)."""
    exp, store, design = ctx.exp, ctx.store, ctx.exp.design
    pairs = {c.id: (c, c.workloads[index]) for c in unit.conditions}
    todo = {(r, cid, i) for r in range(unit.starts) for cid, (c, w) in pairs.items()
            for i in range(design.iterations) if (cid, w.name, procs[c.cell, r].repetition, i) not in ctx.done}
    if not todo:
        return 0
    for r in range(unit.starts):
        for c, w in pairs.values():
            w.prepare(procs[c.cell, r].server)
    phases.lap("prepare_s")
    stored = 0
    joint = len(procs) == 1 and wl.interleaved([w for _, w in pairs.values()])
    with contextlib.ExitStack() as stack:
        if joint:   # one sysbench process measures every level at once
            together = stack.enter_context(wl.interleaved_session(
                procs[unit.conditions[0].cell, 0].server, {cid: w for cid, (c, w) in pairs.items()},
                unit_seed(design.seed, unit.seq, 0)))
        else:
            sessions = {(r, cid): stack.enter_context(w.session(procs[c.cell, r].server,
                                                                unit_seed(design.seed, unit.seq, n)))
                        for n, (r, (cid, (c, w))) in enumerate(itertools.product(range(unit.starts),
                                                                                 pairs.items()))}

        def calls(order: list) -> list[tuple[list, Callable[..., dict]]]:
            """What one round runs: one call for all levels, or one call per (start, level) in order."""
            if joint:
                return [(order, together)]
            return [([(r, c)], lambda warmup=False, r=r, c=c: {c.id: sessions[r, c.id](warmup)})
                    for r, c in order]

        pids = [proc.server.pid for proc in procs.values()]
        # the quiet check reads the span of the warm-up (and of the start, for the first workload)
        window = window.include(pids) if window is not None else accounting.LoadWindow(pids)
        # one after the other while the warm-up calibrates the speed probe (the run's first unit)
        warm = _warm_up([call for k in range(design.warmup)
                         for call in calls(round_order(unit, -1 - k, design.seed))],
                        side_by_side=ctx.speed_probe is not None)
        store.event("warmup", seq=unit.seq, workload=exp.workloads[index].name, measurements=len(warm),
                    seconds=round(sum(warm), 4), each_s=[round(t, 4) for t in warm])
        phases.lap("warmup_s")
        if ctx.look is not None and ctx.look.stop():
            raise _Decided
        phases.lap("look_s")
        ctx.finish_stops(phases)   # the previous unit's servers are gone before anything is measured
        for proc in procs.values():
            if proc.probe is None:
                proc.probe = _probe(ctx, proc.server, warm)
        phases.lap("probe_s")
        busy, cpu, disk = accounting.wait_until_quiet(pids, since=window)
        if busy:
            store.event("contention", seq=unit.seq, cell=unit.cell, other_cpu_cores=round(cpu, 2),
                        other_disk_bytes_s=round(disk))
        phases.lap("quiet_s")
        probing = measured_s = 0.0   # measured_s: the stamps' time, over every start (timed_rounds)
        last = None     # (server, probe time) of the probe that closed the previous measurement
        rule, timed = design.fast_rounds, design.timed_rounds
        values: dict[tuple[int, str], list[float]] = {}   # (start, condition) -> rule.metric's values

        def measure(rnd: int, order: list) -> None:
            nonlocal probing, measured_s, last, stored
            for conds, call in calls(order) if order else ():
                r0, c0 = conds[0]
                proc = procs[c0.cell, r0]
                # Back to back on one server, the probe after one measurement is the probe before
                # the next: nothing runs between them but storing a row.
                if last is not None and last[0] is proc:
                    before = last[1]
                else:
                    before = proc.probe.time()
                    probing += before
                # the stamps bracket the measured work alone: the meter's snapshots are overhead
                proc.meter.start()
                start_ts, began = now(), time.perf_counter()
                measured = call()
                measured_s += time.perf_counter() - began
                end_ts = now()
                costs = proc.meter.stop()
                after = proc.probe.time()
                probing += after
                last = (proc, after)
                kept = accounting.shared_by_levels(costs) if joint else costs
                for r, c in conds:
                    w, m = pairs[c.id][1], measured[c.id]
                    metrics = m.metrics + tuple(kept) + (Metric("probe_before_s", before, "s"),
                                                         Metric("probe_after_s", after, "s"))
                    store.append(MeasurementRecord(
                        run_id=store.run_id, claim=exp.claim, experiment=exp.name, condition=c.id,
                        levels=c.levels, target=c.target, server_version=proc.facts.version, workload=w.name,
                        repetition=proc.repetition, iteration=rnd, seq=unit.seq, attempt=attempt,
                        started_at=start_ts, ended_at=end_ts, contention=busy or accounting.contended(costs),
                        metrics=metrics, intervals=m.intervals))
                    ctx.done.add((c.id, w.name, proc.repetition, rnd))
                    stored += 1
                    if ctx.bar is not None:
                        ctx.bar.update(1)
                    if rule is not None:
                        values.setdefault((r, c.id), []).append(_metric(m.metrics, rule.metric, w.name))

        for rnd in range(design.iterations):
            measure(rnd, [(r, c) for r, c in round_order(unit, rnd, design.seed) if (r, c.id, rnd) in todo])
        full = unit.starts * len(pairs) * design.iterations

        def levels() -> dict:   # the run's fast level of each condition, this unit's rounds so far included
            return rule.levels(values, _earlier(ctx.start_bests, pairs))

        if (rule is not None or timed is not None) and len(todo) == full:   # a unit resumed halfway is not extended
            rnd = design.iterations
            added = {"fast_rounds": 0, "timed_rounds": 0}
            while True:
                if rule is not None and rule.another(rnd, values, levels()):
                    added["fast_rounds"] += 1
                elif timed is not None and timed.another(rnd, measured_s / unit.starts):
                    added["timed_rounds"] += 1
                else:
                    break
                order = round_order(unit, rnd, design.seed)
                if ctx.bar is not None:
                    ctx.bar.total += len(order)
                    ctx.bar.refresh()
                measure(rnd, order)
                rnd += 1
            if added["fast_rounds"]:
                store.event("fast_rounds", seq=unit.seq, workload=exp.workloads[index].name,
                            added=added["fast_rounds"], still_short=rule.short(values, levels()))
            if added["timed_rounds"]:
                store.event("timed_rounds", seq=unit.seq, workload=exp.workloads[index].name,
                            added=added["timed_rounds"], measured_s=round(measured_s / unit.starts, 3))
        if rule is not None:
            for (_, cid), seen in values.items():
                ctx.start_bests.setdefault((cid, pairs[cid][1].name), []).append(rule.best(seen))
        phases.lap("measure_s")
        phases.move("measure_s", "probe_s", probing)
    return stored


def _metric(metrics, name: str, workload: str) -> float:
    for metric in metrics:
        if metric.name == name:
            return metric.value
    raise WorkloadError(f"{workload}: design.fast_rounds.metric {name!r} is not among its metrics "
                        f"({', '.join(m.name for m in metrics)})")


def _earlier(start_bests: dict, pairs: dict) -> dict:
    """The fastest value of each earlier start of the run, per condition of the unit, for its
    workload (`FastRounds.levels`)."""
    return {cid: start_bests.get((cid, workload.name), []) for cid, (_, workload) in pairs.items()}


def _warm_up(calls: list[tuple[list, Callable[..., dict]]], side_by_side: bool = True) -> list[float]:
    """Run the warm-up calls, each server's in its recorded order, the servers' side by side (one
    thread each: nothing is measured yet, and a unit of several servers then waits for the
    slowest one's warm-up, not for their sum). Returns each call's seconds. Not `side_by_side`
    when those calibrate the speed probe: calls side by side share the two CPUs and take longer,
    and a probe sized from them came out up to twice as long (C2 on MySQL, C3 and C4 at 2.2-4.1%
    of measured time against 1.6-2.4%); then the calls run one at a time in the
    recorded round order, as the rounds after them do."""
    def run(server_calls: list) -> list[float]:
        seconds = []
        for call in server_calls:
            t0 = time.perf_counter()
            call(warmup=True)
            seconds.append(time.perf_counter() - t0)
        return seconds

    per_server: dict[tuple, list] = {}
    for conds, call in calls:
        r, c = conds[0]
        per_server.setdefault((c.cell, r), []).append(call)
    if len(per_server) <= 1 or not side_by_side:
        return run([call for _, call in calls])
    with ThreadPoolExecutor(len(per_server), thread_name_prefix="claimlab-warmup") as pool:
        return [t for future in [pool.submit(run, server_calls) for server_calls in per_server.values()]
                for t in future.result()]


def _probe(ctx: _Context, server, warmup_s: list[float]) -> witness.SpeedProbe:
    """The run's speed probe: calibrated once (on the first server start that needs it, from its
    warm-up calls' lengths) and recorded, so every measurement of the run, resumed or not, is
    witnessed by the same amount of work."""
    if ctx.speed_probe is None:
        target_s = witness.target_seconds(warmup_s)
        n = witness.SpeedProbe.calibrate(server, target_s)
        ctx.speed_probe = {"sql": witness.SQL.format(n=n), "n": n, "target_s": round(target_s, 4),
                           "calibrated_on": server.target.name}
        ctx.store.update_manifest(speed_probe=ctx.speed_probe)
    return witness.SpeedProbe(server, ctx.speed_probe["n"])


class _Phases:
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


def cleanup_work(work: Path) -> None:
    """Data directories are scratch: the measurements live in the run directory, not in them."""
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.parent.rmdir()
    except OSError:
        pass
