"""Runs an experiment's plan (design.plan): a server start per cell and block (side by side: the
block's servers started together), load, warm up, measure, store. This module owns the run's
life: its directory and lock, resuming, the order of units and looks, closing it whatever
happens. A unit's servers are units.py's, a workload's rounds rounds.py's, the sequential looks
looks.py's.

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

import fcntl
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from . import provenance
from .design import Condition, plan
from .errors import ClaimlabError, DataError, Interrupted, signals_raise
from .looks import Look, at_cap, look_wait
from .params import Experiment
from .records import FORMAT_VERSION, RunManifest
from .servers import (
    ExternalServer,
    Launcher,
    Placer,
    ServerOptions,
    reap,
    reaping,
    stop_all,
)
from .servers.reaper import mark
from .store import find_run, load_manifest, project_root, raw_root, run_roots, run_state, runs_root
from .units import Context, Phases, draw_ahead, run_unit
from .writer import RunStore, lock_writer, unwritten

__all__ = ["run", "RunOutcome", "Interrupted"]


@dataclass
class RunOutcome:
    run_id: str
    path: Path
    status: str
    measurements: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


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
                         "with one (claimlab.campaign.should_stop(exp))")
    data_root = data_root or runs_root()
    the_plan = plan(exp)
    runnable, skipped, units = list(the_plan.conditions), the_plan.skipped, list(the_plan.units)
    blocks, first_look = the_plan.blocks, the_plan.first_look
    for workload in {w.name: w for c in runnable for w in c.workloads}.values():
        workload.check_tools()
    design = exp.design
    k = design.starts_per_block
    work_root = (work_root or project_root() / "work").absolute()
    check_scratch(work_root, data_root)

    writer = store = None
    if resume:
        path = find_run(resume, data_root)
        if raw_root().resolve() in path.resolve().parents:   # before the lock: it would be a file in the tree
            raise DataError(f"--resume {resume}: {path} is a shipped run (data/raw): shipped runs are "
                            "never written; start a new run instead")
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
        ctx = Context(exp, store, launcher, store.completed(), manifest.speed_probe, placer=placer)
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
                        ctx.look = Look(should_stop, store, unit.block * k)
                if not (ctx.look is not None and ctx.look.answered(look_wait(ctx.start_cost, blocks - unit.block))
                        and ctx.look.stop()):
                    outcome.measurements += run_unit(ctx, unit)
                    store.sync()
                if ctx.look is not None and ctx.look.stop():
                    bar.total = bar.n       # decided: the bar ends full, not at the cap's share
                    bar.refresh()
                    break
                ctx.look = None
                if following is not None and ctx.placer is not None:
                    draw_ahead(ctx, following)
            else:
                if should_stop is not None:
                    at_cap(should_stop, store, blocks * k)
            last = Phases()
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


def check_scratch(work_root: Path, data_root: Path) -> None:
    """Refuse a scratch root that overlaps a run store. A run's scratch, work_root/<run id>, is
    removed when it ends and by the reaper after a crash: with --work runs/<experiment> it was the
    run's own directory, and every measurement went with it."""
    work = work_root.resolve()
    for store in dict.fromkeys(p.resolve() for p in (data_root, *run_roots())):
        if work == store or store in work.parents or work in store.parents:
            raise ClaimlabError(f"--work {work_root}: overlaps the run store {store}; give a scratch "
                                "directory apart from stored runs (default: work/ of the checkout)")


def cleanup_work(work: Path) -> None:
    """Data directories are scratch: the measurements live in the run directory, not in them."""
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.parent.rmdir()
    except OSError:
        pass
