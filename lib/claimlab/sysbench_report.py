"""Reading sysbench's report: its totals and per-interval series, and the interleaving wrapper's
per-level lines (sysbench_interleave.lua). Kept apart from running sysbench so the parsing is
tested on stored reports alone. A figure missing from a report is an error, never a silent gap."""

from __future__ import annotations

import re

from .errors import WorkloadError
from .records import Measurement, Metric

_TOTALS = {
    "tps": (r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", "1/s"),
    "qps": (r"queries:\s+\d+\s+\(([\d.]+) per sec\.\)", "1/s"),
    "operations": (r"queries:\s+(\d+)\s+\(", "ops"),
    "errors_per_s": (r"ignored errors:\s+\d+\s+\(([\d.]+) per sec\.\)", "1/s"),
    "reconnects_per_s": (r"reconnects:\s+\d+\s+\(([\d.]+) per sec\.\)", "1/s"),
    "latency_avg_ms": (r"avg:\s+([\d.]+)", "ms"),
    "latency_p95_ms": (r"95th percentile:\s+([\d.]+)", "ms"),
    "latency_max_ms": (r"max:\s+([\d.]+)", "ms"),
    "total_time_s": (r"total time:\s+([\d.]+)s", "s"),
}
_INTERVAL = re.compile(
    r"^\[ *(\d+)s \] thds: (\d+) tps: ([\d.]+) qps: ([\d.]+) \(r/w/o: [\d./]+\) "
    r"lat \(ms,\d+%\): ([\d.]+) err/s: ([\d.]+) reconn/s: ([\d.]+)", re.M)


def parse_sysbench(output: str, name: str = "sysbench") -> Measurement:
    """Totals and the per-interval series of one `sysbench ... run` report."""
    metrics = []
    for metric, (pattern, unit) in _TOTALS.items():
        m = re.search(pattern, output)
        if not m:
            raise WorkloadError(f"workload {name}: cannot read {metric} from sysbench's report")
        metrics.append(Metric(metric, float(m[1]), unit))
    intervals = tuple({"t_s": int(m[1]), "threads": int(m[2]), "tps": float(m[3]), "qps": float(m[4]),
                       "latency_p95_ms": float(m[5]), "errors_per_s": float(m[6]),
                       "reconnects_per_s": float(m[7])} for m in _INTERVAL.finditer(output))
    return Measurement(tuple(metrics), intervals)


_LEVEL_LINE = re.compile(r"^claimlab-level (\d+) (\d+) ([\d.]+)$", re.M)


def parse_interleaved(output: str, ids: list[str], threads: int, name: str = "sysbench") -> dict[str, Measurement]:
    """Per level, from the wrapper's per-thread lines: rates, latency and queries."""
    totals = parse_sysbench(output, name)
    values = {m.name: m.value for m in totals.metrics}
    events = re.search(r"transactions:\s+(\d+)\s+\(", output)
    per_level = {i: [0, 0.0] for i in range(len(ids))}
    lines = 0
    for m in _LEVEL_LINE.finditer(output):
        index = int(m[1])
        if index not in per_level:
            raise WorkloadError(f"workload {name}: sysbench reported an unknown level {index}")
        per_level[index][0] += int(m[2])
        per_level[index][1] += float(m[3])
        lines += 1
    if lines != threads * len(ids) or not events or int(events[1]) == 0:
        raise WorkloadError(f"workload {name}: the interleaving wrapper reported {lines} level lines, "
                            f"expected {threads * len(ids)} ({threads} threads x {len(ids)} levels)")
    # a transaction of one test sends a fixed number of queries (20 in oltp_read_write); sysbench's
    # total also counts each connection's set-up (USE, SET NAMES), which is not measured work
    queries_per_tx = round(values["operations"] / int(events[1]))
    out = {}
    for index, cid in enumerate(ids):
        n, seconds = per_level[index]
        if n == 0 or seconds <= 0:
            raise WorkloadError(f"workload {name}: level {cid} ran no transaction; make `time` longer")
        tps = threads * n / seconds
        out[cid] = Measurement((
            Metric("tps", tps, "1/s"), Metric("qps", tps * queries_per_tx, "1/s"),
            Metric("operations", n * queries_per_tx, "ops"), Metric("transactions", float(n), "count"),
            Metric("latency_avg_ms", 1000.0 * seconds / n, "ms"),
            Metric("level_time_s", seconds / threads, "s")))
    return out
