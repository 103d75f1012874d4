"""Runs an experiment's plan: start a server per repetition, load, warm up, measure, store.

The runner owns the order of events and the handling of faults; it computes no statistics
(it only asks `stats.should_stop` between blocks when the params request sequential stopping).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from . import accounting, provenance
from .design import Condition, Unit, conditions, schedule, unit_seed
from .errors import ClaimlabError, ServerGone, ServerStartError, TargetUnavailable
from .params import Experiment
from .servers import ExternalServer, Launcher, ServerFacts, ServerOptions, check_available, remove_socket_dir
from .stopping import StopRule
from .store import RunStore, find_run, now, project_root, read_results, runs_root
from .workloads import Measurement


class Interrupted(ClaimlabError):
    """SIGINT or SIGTERM: servers are stopped and the run can be resumed."""


@dataclass
class RunOutcome:
    run_id: str
    path: Path
    status: str
    measurements: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


@contextmanager
def _signals_raise():
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


def available_targets(exp: Experiment, conds: list[Condition]) -> dict[str, str]:
    """Targets the plan uses that cannot run here, with the reason (the rest is run)."""
    reasons = {}
    for name in sorted({c.target for c in conds}):
        try:
            check_available(exp.targets[name])
        except (TargetUnavailable, ServerGone) as exc:
            reasons[name] = str(exc)
    return reasons


def verify_settings(requested: ServerOptions, facts: ServerFacts, target: str) -> None:
    """The server's word against the option file's: measuring the wrong setting is worse than failing."""
    problems = []
    if requested.log_bin is not None and facts.log_bin != requested.log_bin:
        problems.append(f"log_bin requested {'ON' if requested.log_bin else 'OFF'}, "
                        f"server reports {'ON' if facts.log_bin else 'OFF'}")
    for name in ("character_set_server", "collation_server", "sync_binlog",
                 "innodb_flush_log_at_trx_commit", "binlog_format"):
        wanted = getattr(requested, name)
        have = facts.variables.get(name)
        if wanted is not None and have is not None and str(wanted).lower() != have.lower():
            problems.append(f"{name} requested {wanted}, server reports {have}")
    if problems:
        raise ServerStartError(f"target {target}: " + "; ".join(problems))


def run(exp: Experiment, *, data_root: Path | None = None, work_root: Path | None = None,
        resume: str | None = None, progress: bool = True, claim=None, log=None) -> RunOutcome:
    data_root = data_root or runs_root()
    conds = conditions(exp)
    skipped = available_targets(exp, conds)
    runnable = [c for c in conds if c.target not in skipped]
    if not runnable:
        raise TargetUnavailable("; ".join(skipped.values()))
    for workload in {w.name: w for c in runnable for w in c.workloads}.values():
        workload.check_tools()
    for line in external_plan(exp, runnable):
        (log or (lambda _: None))(line)
    factors = [f.name for f in exp.factors]
    design = exp.design
    blocks = design.sequential.max_blocks if design.sequential else design.repetitions
    units = schedule(runnable, blocks, design.seed)

    if resume:
        store = RunStore.open_run(find_run(resume, data_root))
        manifest = store.manifest()
        if manifest.get("experiment") != exp.name or manifest.get("profile") != exp.profile:
            raise ClaimlabError(f"run {resume} is {manifest.get('experiment')} / "
                                f"{manifest.get('profile')}, not {exp.name} / {exp.profile}")
        if manifest.get("status") == "complete":
            raise ClaimlabError(f"run {resume} is already complete; nothing to resume")
        store.event("resumed", git=provenance.git_commit(project_root()), host=provenance.host_facts())
    else:
        manifest = {
            "claim": exp.claim, "experiment": exp.name, "profile": exp.profile,
            "params_file": exp.source, "params": exp.document, "factors": factors,
            "seed": design.seed, "design": _design_dict(exp),
            "targets": {n: t.public() for n, t in exp.targets.items()},
            "conditions": [{"id": c.id, "target": c.target, "levels": dict(c.levels),
                            "server": c.server.as_dict(),
                            "workloads": {w.name: w.describe() for w in c.workloads}} for c in conds],
            "skipped_targets": skipped,
            "plan": [{"seq": u.seq, "block": u.block, "condition": u.condition.id} for u in units],
            "provenance": provenance.collect(project_root()),
        }
        store = RunStore.create(data_root, exp.name, factors, manifest)
    work_root = work_root or project_root() / "work"
    work = work_root / store.run_id
    work_root.mkdir(parents=True, exist_ok=True)
    with open(work_root / ".reaper.lock", "w") as reaper:
        # Reaping and claiming a run directory exclude each other, so a run that is starting
        # (directory made, lock not yet taken) is never mistaken for a dead one.
        fcntl.flock(reaper, fcntl.LOCK_EX)
        reaped = reap_stale(work_root)
        work.mkdir(parents=True, exist_ok=True)
        lock = open(work / ".lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)   # held for the whole run: "this run is alive"
    if reaped:
        store.event("reaped_stale_servers", pids=reaped)
    outcome = RunOutcome(store.run_id, store.path, "running", skipped=skipped)
    done = store.completed()
    launcher = Launcher(work)
    per_unit = sum(1 for _ in runnable[0].workloads) * design.iterations

    bar = tqdm(total=len(units) * per_unit, desc=f"{exp.name} [{exp.profile}]", unit="meas",
               disable=not progress, file=sys.stderr, dynamic_ncols=True)
    bar.update(len(done))
    try:
        with _signals_raise():
            current_block = 0
            for unit in units:
                if unit.block != current_block:
                    current_block = unit.block
                    if _should_stop(exp, store, claim, unit.block):
                        break
                todo = [(w, i) for w in unit.condition.workloads for i in range(design.iterations)
                        if (unit.condition.id, w.name, unit.repetition, i) not in done]
                if not todo:
                    continue
                stored = _run_unit(exp, store, launcher, unit, todo, done, bar)
                outcome.measurements += stored
        outcome.status = "complete"
        store.finish("complete", skipped_targets=skipped)
    except Interrupted as exc:
        outcome.status = "interrupted"
        exc.run_id = store.run_id   # the command line prints how to resume it
        _close_quietly(store, "interrupted", exc)
        raise
    except ClaimlabError as exc:
        outcome.status = "failed"
        _close_quietly(store, "failed", exc)
        raise
    finally:
        bar.close()
        _cleanup_work(work, exp)
        lock.close()
        _drop_external_schemas(exp, runnable, store)
    return outcome


def _close_quietly(store: RunStore, status: str, exc: Exception) -> None:
    """Record why the run stopped; if even that cannot be written (disk full), the original error
    is the one to report, and the results file is already valid."""
    try:
        store.event(status, reason=str(exc))
        store.finish(status)
    except (OSError, ClaimlabError):
        pass


def reap_stale(work_root: Path) -> list[int]:
    """Servers left by a claimlab that was killed (SIGKILL, power loss): stop them by the pid
    files in run directories whose lock nobody holds, and remove those directories. Call with
    work_root/.reaper.lock held.

    A pid is only signalled when /proc says that process was started with that directory's
    option file, so a recycled pid is never hit."""
    reaped = []
    if not work_root.is_dir():
        return reaped
    for run_dir in sorted(p for p in work_root.iterdir() if (p / ".lock").exists()):
        with open(run_dir / ".lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue   # a live run owns it
            for pid_file in run_dir.glob("*/server.pid"):
                pid = _read_pid(pid_file)
                if pid and _started_with(pid, pid_file.parent / "my.cnf"):
                    _terminate(pid)
                    reaped.append(pid)
            for home in (cnf.parent for cnf in run_dir.glob("*/my.cnf")):
                remove_socket_dir(home)
            shutil.rmtree(run_dir, ignore_errors=True)
    return reaped


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _started_with(pid: int, cnf: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"--defaults-file={cnf}".encode() in cmdline


def _terminate(pid: int, timeout: float = 30.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def external_plan(exp: Experiment, conds: list[Condition]) -> list[str]:
    """What a run will do to servers claimlab does not own, said before it starts."""
    lines = []
    for name in sorted({c.target for c in conds if exp.targets[c.target].kind == "external"}):
        schemas = sorted({w.schema() for c in conds if c.target == name for w in c.workloads})
        lines.append(f"target {name} (external): will create, use and finally drop schemas "
                     f"{', '.join(schemas)}; nothing else is touched and no global variable is changed")
    return lines


def _drop_external_schemas(exp: Experiment, conds: list[Condition], store: RunStore) -> None:
    """On someone else's server, leave nothing behind but what was there: drop our schemas."""
    for name in sorted({c.target for c in conds if exp.targets[c.target].kind == "external"}):
        server = ExternalServer(exp.targets[name])
        for schema in sorted({w.schema() for c in conds if c.target == name for w in c.workloads}):
            try:
                server.drop_schema(schema)
            except ClaimlabError as exc:
                store.event("cleanup_failed", target=name, schema=schema, reason=str(exc))


def _design_dict(exp: Experiment) -> dict:
    d = exp.design
    out = {k: getattr(d, k) for k in ("repetitions", "warmup", "iterations", "seed", "fresh_datadir",
                                       "max_attempts", "target")}
    out["sequential"] = None if d.sequential is None else vars(d.sequential)
    return out


def _should_stop(exp: Experiment, store: RunStore, claim, blocks_done: int) -> bool:
    rule = exp.design.sequential
    if rule is None or claim is None:
        return False
    from . import stats
    decision = stats.should_stop(read_results(store.path), claim, stop_rule(store.manifest()))
    store.event("sequential", blocks=blocks_done, stop=decision.stop, reason=decision.reason)
    return decision.stop


def stop_rule(manifest: dict):
    """The stopping rule a run was designed with (None for a fixed design): its analysis must use
    the same rule, so that stopping early keeps the promised error rate."""
    seq = (manifest.get("design") or {}).get("sequential")
    if not seq:
        return None
    return StopRule(**seq)


def _run_unit(exp: Experiment, store: RunStore, launcher: Launcher, unit: Unit, todo, done, bar) -> int:
    """One repetition: a fresh server process, then every workload's warm-up and iterations.

    A server that dies (or fails to start) is retried up to `max_attempts` times; measurements
    already stored are never repeated, the failed one is recorded as an event, never as a value.
    """
    cond, design = unit.condition, exp.design
    target = exp.targets[cond.target]
    stored = 0
    for attempt in range(1, design.max_attempts + 1):
        server = launcher.server(target, cond.server,
                                 fresh=design.fresh_datadir and attempt == 1)
        load_before = provenance.loadavg()
        started = now()
        phases = _Phases()
        lap = phases.lap
        meter = None
        try:
            server.start()
            facts = server.facts()
            store.record_server({"seq": unit.seq, "condition": cond.id, "repetition": unit.repetition,
                                 "attempt": attempt, "target": cond.target, "version": facts.version,
                                 "log_bin": facts.log_bin, "pid": server.pid, "started_at": started,
                                 "loadavg_before": load_before}, facts.stable_variables())
            verify_settings(server.options, facts, cond.target)
            meter = accounting.Meter(server)
            lap("start_s")
            for workload in cond.workloads:
                iterations = [i for w, i in todo if w is workload
                              and (cond.id, w.name, unit.repetition, i) not in done]
                if not iterations:
                    continue
                workload.prepare(server)
                lap("prepare_s")
                with workload.session(server, unit_seed(design.seed, unit.seq, 0)) as measure:
                    for _ in range(design.warmup):
                        measure()
                    lap("warmup_s")
                    busy, cpu, disk = accounting.wait_until_quiet(server.pid)
                    if busy:
                        store.event("contention", seq=unit.seq, condition=cond.id, other_cpu_cores=round(cpu, 2),
                                    other_disk_bytes_s=round(disk))
                    lap("quiet_s")
                    for iteration in iterations:
                        start_ts = now()
                        meter.start()
                        m = measure()
                        costs = meter.stop()
                        end_ts = now()
                        _store_measurement(exp, store, unit, cond, workload.name, iteration, attempt,
                                           facts.version, Measurement(m.metrics + tuple(costs), m.intervals),
                                           start_ts, end_ts, contention=busy or accounting.contended(costs))
                        done.add((cond.id, workload.name, unit.repetition, iteration))
                        stored += 1
                        bar.update(1)
                    lap("measure_s")
            server.stop()
            lap("stop_s")
            store.event("unit_done", seq=unit.seq, condition=cond.id, repetition=unit.repetition,
                        attempt=attempt, loadavg_after=provenance.loadavg(),
                        phases=phases.rounded())
            return stored
        except (ServerGone, ServerStartError) as exc:
            store.event("attempt_failed", seq=unit.seq, condition=cond.id, repetition=unit.repetition,
                        attempt=attempt, reason=str(exc))
            if attempt == design.max_attempts:
                raise
            time.sleep(0.5)
        finally:
            if meter is not None:
                meter.close()
            server.stop()
    return stored


class _Phases:
    """Wall time per phase of a unit (start, load, warm-up, quiet check, measured, stop)."""

    def __init__(self):
        self.totals = dict.fromkeys(("start_s", "prepare_s", "warmup_s", "quiet_s", "measure_s", "stop_s"), 0.0)
        self._clock = time.monotonic()

    def lap(self, phase: str) -> None:
        now_ = time.monotonic()
        self.totals[phase] += now_ - self._clock
        self._clock = now_

    def rounded(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in self.totals.items()}


def _store_measurement(exp, store, unit, cond, workload, iteration, attempt, version, m, start_ts,
                       end_ts, contention: bool) -> None:
    base = {"run_id": store.run_id, "claim": exp.claim, "experiment": exp.name, "condition": cond.id,
            **dict(cond.levels), "target": cond.target, "server_version": version,
            "workload": workload, "repetition": unit.repetition, "iteration": iteration,
            "seq": unit.seq, "attempt": attempt, "started_at": start_ts, "ended_at": end_ts,
            "contention": contention}
    rows = [base | {"metric": x.name, "value": repr(float(x.value)), "unit": x.unit} for x in m.metrics]
    intervals = [{"run_id": store.run_id, "condition": cond.id, "workload": workload,
                  "repetition": unit.repetition, "iteration": iteration, "seq": unit.seq, **iv}
                 for iv in m.intervals]
    store.append_measurement(rows, intervals)


def _cleanup_work(work: Path, exp: Experiment) -> None:
    """Data directories are scratch: the measurements live in runs/, not in them."""
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.parent.rmdir()
    except OSError:
        pass
