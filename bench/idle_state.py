"""Why does C1's sysbench sometimes leave the vCPUs idle, and does pinning change it?

    python bench/idle_state.py --minutes 20                    # MariaDB, C1's quick workload
    python bench/idle_state.py --target mysql --minutes 10 --out data/c1_idle_state_mysql.json
    python bench/idle_state.py --minutes 4 --arms "one vCPU" "one vCPU 1" unpinned   # which vCPU
    python bench/idle_state.py --read data/c1_idle_state.json  # the summary of a stored series
    python bench/idle_state.py --profile full --minutes 6 --arms "one vCPU 1" \
        "one vCPU 1, 3-s bursts" "one vCPU 1, quick's tables" "one vCPU 1, quick's tables, 3-s bursts"

One server start with C1's three levels loaded and C1's interleaved sysbench (every thread
alternating its transactions between the levels), then bursts until the time is up. Each burst
runs one arm, the arms in a fresh random order each cycle so that every arm sees the same hours:
- unpinned: server and sysbench on every vCPU, two threads, as C1 ran until 2026-11-29;
- unpinned, 4 threads: the same with more client threads, to keep the vCPUs fed;
- one vCPU: server and sysbench both on vCPU 0 (`design.cpus`);
- apart: the server on vCPU 0, sysbench on vCPU 1;
- one vCPU 1 (only when asked, `--arms`): both on vCPU 1, as C1 runs;
- one vCPU 1 with 3-s bursts, quick's tables, or both (when asked, with `--profile full`): what
  of the full profile's workload reads C1's effect smaller than quick's.
Per burst: each level's QPS, the busy share of each vCPU and of the machine (/proc/stat), the
server's and sysbench's CPU seconds, and context switches. Then per arm: each level's QPS, the
bursts more than `stats.speed.BUSY_DROP` under the arm's median busy share ("idle bursts") and
their QPS against the rest, whether in those bursts one vCPU idles while the other works (the
scheduler leaving one unused) or both idle alike (client and server waiting on wake-ups), and
each level's ratio to latin1 with the burst-to-burst SD of its log: the noise a C1 design
measuring that way would average.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

from claimlab import params, provenance
from claimlab.design import conditions
from claimlab.runner import runnable_conditions
from claimlab.servers import Launcher
from claimlab.stats.speed import BUSY_DROP
from claimlab.workloads import interleaved_session

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed_state import _pin_server  # noqa: E402  (a sibling script's step, not a library's)

ROOT = Path(__file__).resolve().parents[1]
# arm -> (server's vCPUs, sysbench's vCPUs, sysbench threads, sysbench options over the profile's);
# None: every vCPU. The last four, run with `--profile full` (three 100,000-row tables, 5-s
# bursts), tell apart what makes the full profile read C1's effect smaller than quick: its tables
# or its bursts' length. Quick's tables are loaded beside the full ones, in the same server start.
QUICK_TABLES = (("tables", 2), ("table_size", 10000))
QUICK_BURSTS = (("time", 3), ("warmup_time", 1))   # quick's warm-up too: it may not outlast a burst
ARMS = {"unpinned": (None, None, 2, ()), "unpinned, 4 threads": (None, None, 4, ()),
        "one vCPU": ({0}, {0}, 2, ()), "apart": ({0}, {1}, 2, ()), "one vCPU 1": ({1}, {1}, 2, ()),
        "one vCPU 1, 3-s bursts": ({1}, {1}, 2, QUICK_BURSTS),
        "one vCPU 1, quick's tables": ({1}, {1}, 2, QUICK_TABLES),
        "one vCPU 1, quick's tables, 3-s bursts": ({1}, {1}, 2, QUICK_TABLES + QUICK_BURSTS)}
DEFAULT_ARMS = ["unpinned", "unpinned, 4 threads", "one vCPU", "apart"]


def _cpu_busy() -> list[tuple[float, float]]:
    """Per vCPU: (busy, all) seconds since boot; busy = all - idle - iowait, as the runner's."""
    out = []
    for t in psutil.cpu_times(percpu=True):
        total = sum(t)
        out.append((total - t.idle - t.iowait, total))
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _server_cpu(pid: int) -> tuple[float, float]:
    """The server's (user, system) CPU seconds: the lexer's work is user time, a query's trip
    through the kernel (socket, wake-ups) system time."""
    times = psutil.Process(pid).cpu_times()
    return times.user, times.system


def burst(measure, pid: int, arm: str) -> dict:
    """One sysbench burst of `arm`, with the machine's and the processes' accounts."""
    server_cpus, client_cpus, _, _ = ARMS[arm]
    everything = set(range(psutil.cpu_count()))
    _pin_server(pid, server_cpus or everything)
    psutil.Process().cpu_affinity(sorted(client_cpus or everything))   # sysbench inherits it
    cpu0, srv0, cli0, ctx0 = _cpu_busy(), _server_cpu(pid), _children_cpu(), psutil.cpu_stats().ctx_switches
    started = time.time()
    levels = measure()
    cpu1, srv1, cli1, ctx1 = _cpu_busy(), _server_cpu(pid), _children_cpu(), psutil.cpu_stats().ctx_switches
    seconds = time.time() - started
    per_cpu = [(b1 - b0) / max(a1 - a0, 1e-9) for (b0, a0), (b1, a1) in zip(cpu0, cpu1)]
    spent = sum(a1 - a0 for (_, a0), (_, a1) in zip(cpu0, cpu1))
    busy = sum(b1 - b0 for (b0, _), (b1, _) in zip(cpu0, cpu1))
    return {"arm": arm, "started": round(started, 3), "seconds": round(seconds, 3),
            "qps": {cid: round(next(m.value for m in meas.metrics if m.name == "qps"), 1)
                    for cid, meas in levels.items()},
            "busy": round(busy / spent, 4), "busy_per_cpu": [round(b, 4) for b in per_cpu],
            "server_cpu_s": round(sum(srv1) - sum(srv0), 3),
            "server_system_s": round(srv1[1] - srv0[1], 3), "client_cpu_s": round(cli1 - cli0, 3),
            "ctx_switches_per_s": round((ctx1 - ctx0) / seconds)}


def measure(target: str, minutes: float, profile: str = "quick", seed: int = 1,
            arms: list[str] = DEFAULT_ARMS) -> dict:
    exp = params.with_default_target(params.load(ROOT / "params" / "charset_mismatch.yaml", profile),
                                     target, "--target")
    conds, skipped = runnable_conditions(exp, conditions(exp))
    conds = [c for c in conds if c.target == target]
    rng = random.Random(seed)
    bursts = []
    with tempfile.TemporaryDirectory(prefix="claimlab-idle-") as tmp, contextlib.ExitStack() as stack:
        server = Launcher(Path(tmp)).prepare(exp.targets[target], conds[0].server)
        server.start()
        stack.callback(server.stop)
        stack.callback(psutil.Process().cpu_affinity, [])
        sessions, tables = {}, {}
        for threads, options in sorted({ARMS[arm][2:] for arm in arms}):
            workloads = {c.id: dataclasses.replace(c.workloads[0], threads=threads, **dict(options))
                         for c in conds}
            first = next(iter(workloads.values()))
            tables[options] = (first.tables, first.table_size)
            for workload in workloads.values():   # loaded once per table shape (a loaded schema is kept)
                workload.prepare(server)
            sessions[threads, options] = stack.enter_context(interleaved_session(server, workloads, seed))
            sessions[threads, options](warmup=True)
        end = time.monotonic() + 60 * minutes
        while time.monotonic() < end:
            for arm in rng.sample(arms, len(arms)):
                bursts.append(burst(sessions[ARMS[arm][2:]], server.pid, arm))
                row = bursts[-1]
                print(f"{len(bursts):4d} {arm:20s} busy {row['busy']:.3f} {row['busy_per_cpu']} "
                      f"qps {row['qps']}", file=sys.stderr)
        version = server.facts().version
    layouts = {}
    for arm in arms:
        server_cpus, client_cpus, threads, options = ARMS[arm]
        layouts[arm] = {"server_cpus": server_cpus and sorted(server_cpus),
                        "client_cpus": client_cpus and sorted(client_cpus), "threads": threads}
        if options:   # and the tables it ran on, as loaded
            layouts[arm]["sysbench"] = dict(options)
            layouts[arm]["tables"] = list(tables[options])
    return {"target": target, "server_version": version, "profile": profile, "seed": seed,
            "cpu": provenance.cpu_label(provenance.host_facts()), "arms": layouts,
            "bursts": bursts, "skipped": skipped}


def summary(series: dict) -> list[dict]:
    """Per arm: bursts, each level's median QPS, the idle bursts and their QPS against the rest,
    the busier and the idler vCPU's busy shares in normal and idle bursts, and each level's
    ratio to the first level (latin1): its median and the SD of its log over bursts, the spread
    a design measuring that arm would average."""
    out = []
    for arm in series["arms"]:
        rows = [b for b in series["bursts"] if b["arm"] == arm]
        if not rows:
            continue
        median_busy = statistics.median(b["busy"] for b in rows)
        idle = [b for b in rows if b["busy"] < median_busy - BUSY_DROP]
        normal = [b for b in rows if b not in idle]
        base, *others = list(rows[0]["qps"])

        def qps(part, level):
            return statistics.median(b["qps"][level] for b in part)

        def cpus(part):
            return [round(statistics.median(sorted(b["busy_per_cpu"])[i] for b in part), 3)
                    for i in (1, 0)] if part else None

        def log_ratios(part, level, base=base):
            return [math.log(b["qps"][level] / b["qps"][base]) for b in part]

        out.append({
            "arm": arm, "bursts": len(rows), "median_busy": round(median_busy, 3),
            "median_qps": {lv: round(qps(rows, lv)) for lv in rows[0]["qps"]},
            "idle_bursts": len(idle),
            "idle_qps_ratio": {lv: round(qps(idle, lv) / qps(normal, lv), 3) for lv in rows[0]["qps"]}
            if idle and normal else None,
            "busy_cpus_normal": cpus(normal), "busy_cpus_idle": cpus(idle),
            "ratio_to_" + base: {lv: round(math.exp(statistics.median(log_ratios(rows, lv))), 4) for lv in others},
            "ratio_sd_log": {lv: round(statistics.stdev(log_ratios(rows, lv)), 4) for lv in others}
            if len(rows) > 1 else None,
            "ratio_idle_minus_normal": {lv: round(statistics.median(log_ratios(idle, lv))
                                                  - statistics.median(log_ratios(normal, lv)), 4)
                                        for lv in others} if idle and normal else None,
            "ctx_per_s": round(statistics.median(b["ctx_switches_per_s"] for b in rows)),
            "server_client_cpu_s": [round(statistics.median(b[k] for b in rows), 2)
                                    for k in ("server_cpu_s", "client_cpu_s")]})
        if all("server_system_s" in b for b in rows):   # not kept before 2026-11-29 12:10
            out[-1]["server_system_share"] = round(statistics.median(
                b["server_system_s"] / b["server_cpu_s"] for b in rows), 3)
    return out


def by_speed(series: dict, arm: str) -> dict:
    """An arm's bursts split at their median latin1 QPS (the vCPU's speed state in that burst):
    each half's median mismatch / latin1 ratio, the server's system share of its CPU time and its
    user and system microseconds per query, and the correlation of QPS with the ratio. Whether the
    slow state slows the kernel's share of a query (socket, wake-ups) or the server's own code."""
    rows = [b for b in series["bursts"] if b["arm"] == arm]
    if len(rows) < 4 or not all("server_system_s" in b for b in rows):
        raise ValueError(f"arm {arm!r}: needs four bursts or more with the server's system time")
    base, last = list(rows[0]["qps"])[0], "charset=mismatch"   # C1's main comparison
    bursts = []
    for b in rows:
        queries = b["seconds"] * statistics.mean(b["qps"].values())   # its levels share its time alike
        bursts.append({"qps": b["qps"][base], "ratio": b["qps"][last] / b["qps"][base],
                       "system_share": b["server_system_s"] / b["server_cpu_s"],
                       "user_us": 1e6 * (b["server_cpu_s"] - b["server_system_s"]) / queries,
                       "system_us": 1e6 * b["server_system_s"] / queries})
    digits = {"qps": None, "ratio": 4, "system_share": 3, "user_us": 1, "system_us": 2}

    def half(part):
        return {k: round(statistics.median(b[k] for b in part), n) for k, n in digits.items()}

    def correlation(key):
        return round(statistics.correlation([b["qps"] for b in bursts], [b[key] for b in bursts]), 2)

    bursts.sort(key=lambda b: b["qps"])
    middle = len(bursts) // 2
    return {"slow": half(bursts[:middle]), "fast": half(bursts[middle:]),
            "corr_qps_ratio": correlation("ratio"), "corr_qps_user_us": correlation("user_us")}


def by_minute(series: dict, arm: str) -> list[dict]:
    """An arm's bursts by the minute since the series' first burst: each level's geometric-mean ratio
    to the first level and the median QPS of the first. Whether a ratio settles within a server
    start or drifts with the start's age (MySQL's C1 effect grew over its first minutes)."""
    rows = [b for b in series["bursts"] if b["arm"] == arm]
    if not rows:
        raise ValueError(f"arm {arm!r}: no bursts in this series")
    t0, base = series["bursts"][0]["started"], list(rows[0]["qps"])[0]
    minutes: dict[int, list[dict]] = {}
    for b in rows:
        minutes.setdefault(int((b["started"] - t0) // 60), []).append(b)
    return [{"minute": m, "bursts": len(part), "qps": round(statistics.median(b["qps"][base] for b in part)),
             "ratio_to_" + base: {level: round(math.exp(statistics.fmean(
                 math.log(b["qps"][level] / b["qps"][base]) for b in part)), 4)
                 for level in part[0]["qps"] if level != base}}
            for m, part in sorted(minutes.items())]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="mariadb", help="C1's target to run (default mariadb)")
    ap.add_argument("--minutes", type=float, default=20.0, help="how long to measure (default 20)")
    ap.add_argument("--profile", default="quick", choices=("smoke", "quick", "full"),
                    help="C1's profile: its table sizes and burst length (default quick)")
    ap.add_argument("--arms", nargs="+", choices=list(ARMS), default=DEFAULT_ARMS, metavar="ARM",
                    help=f"the arms to alternate (default: {', '.join(map(repr, DEFAULT_ARMS))}; "
                         f"also {', '.join(repr(a) for a in ARMS if a not in DEFAULT_ARMS)})")
    ap.add_argument("--read", type=Path, help="summarize a stored series instead of measuring")
    ap.add_argument("--out", type=Path, help="also write the series and its summary as JSON")
    ap.add_argument("--by-speed", action="store_true",
                    help="also print each arm's bursts split by their QPS (slow and fast halves), "
                         "where the series kept the server's system time")
    ap.add_argument("--by-minute", action="store_true",
                    help="also print each arm's ratios minute by minute since the first burst")
    args = ap.parse_args(argv)
    if args.out and args.out.exists():
        sys.exit(f"{args.out}: exists; measured data is never overwritten (pick another --out)")
    if args.read:
        series = json.loads(args.read.read_text())
    else:
        series = measure(args.target, args.minutes, args.profile, arms=args.arms)
    series["summary"] = summary(series)
    for row in series["summary"]:
        print(json.dumps(row))
    if args.by_speed:
        for row in series["summary"]:
            try:
                print(json.dumps({"arm": row["arm"], "by_speed": by_speed(series, row["arm"])}))
            except ValueError as e:
                print(f"not split by speed: {e}", file=sys.stderr)
    if args.by_minute:
        for row in series["summary"]:
            for minute in by_minute(series, row["arm"]):
                print(json.dumps({"arm": row["arm"], **minute}))
    if args.out:
        args.out.write_text(json.dumps(series, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
