"""One workload in one unit: load it, warm each condition up (calibrating the run's speed probe on
the first), wait for a quiet machine, then the rounds, each measuring every condition once in the
recorded random order, each measurement bracketed by the speed probe and metered, and stored as
it completes. Fast or timed rounds add rounds to a unit until their rule is met."""

from __future__ import annotations

import contextlib
import itertools
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

from . import accounting, witness
from . import workloads as wl
from .design import Unit, round_order, unit_seed
from .errors import WorkloadError
from .looks import Decided
from .records import MeasurementRecord, Metric, now

if TYPE_CHECKING:
    from .units import Context


def run_workload(ctx: Context, unit: Unit, index: int, procs: dict, attempt: int, phases,
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
        warm = warm_up([call for k in range(design.warmup)
                         for call in calls(round_order(unit, -1 - k, design.seed))],
                        side_by_side=ctx.speed_probe is not None)
        store.event("warmup", seq=unit.seq, workload=exp.workloads[index].name, measurements=len(warm),
                    seconds=round(sum(warm), 4), each_s=[round(t, 4) for t in warm])
        phases.lap("warmup_s")
        if ctx.look is not None and ctx.look.stop():
            raise Decided
        phases.lap("look_s")
        ctx.finish_stops(phases)   # the previous unit's servers are gone before anything is measured
        for proc in procs.values():
            if proc.probe is None:
                proc.probe = probe_for(ctx, proc.server, warm)
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


def warm_up(calls: list[tuple[list, Callable[..., dict]]], side_by_side: bool = True) -> list[float]:
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


def probe_for(ctx: Context, server, warmup_s: list[float]) -> witness.SpeedProbe:
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
