"""Does one slow probe mean a slow measurement? The speed witness flags a measurement when either
of its two probes (`witness`) runs slow; one slow probe of two is also what a transient between
two measurements looks like.

    python bench/probe_flags.py --builds CV CW ... DM     # quick builds named in data/quick_builds.json
    python bench/probe_flags.py --builds CV ... DM --by side
    python bench/probe_flags.py --run RUN_ID ...

For every measurement of every claim (C1's QPS, the others' times): its slow probes
(`stats.slow_probes`: 0, 1 or 2; with `--by side`, `stats.slow_probe_sides`: none, before, after
or both) and how much slower it ran than the median of its own server start, condition and
workload (the log ratio, positive when slower), so that start-level states stay out. Per claim and
count (or side): the measurements, their mean and median slowdown, and the share more than 5%
slower.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from claimlab import stats
from claimlab.errors import ClaimlabError
from claimlab.store import find_run, read_manifest, read_results

ROOT = Path(__file__).resolve().parents[1]
# each claim's timed metric, and whether a larger value is slower
METRICS = {"charset_mismatch": ("qps", False), "collation_cost": ("elapsed_s", True),
           "insert_57_vs_80": ("elapsed_s", True), "binlog_default": ("elapsed_s", True)}
SIDES = {(0.0, 0.0): "none", (1.0, 0.0): "before", (0.0, 1.0): "after", (1.0, 1.0): "both"}
SLOWER = 0.05


def deviations(run_dir: Path) -> pd.DataFrame | None:
    """Per measurement of a run: its slow probes (how many, and which) and its slowdown against its
    start's median of the same condition and workload; None for runs without probes."""
    experiment = read_manifest(run_dir)["experiment"]
    if experiment not in METRICS:
        return None
    metric, larger_is_slower = METRICS[experiment]
    results = read_results(run_dir, accept_modified=True)
    sides = stats.slow_probe_sides(results)
    if sides is None:
        return None
    keys = list(sides.index.names)
    value = results[results["metric"] == metric].groupby(keys)["value"].median()
    frame = sides.assign(log_value=np.log(value)).dropna()
    start = [frame.index.get_level_values(k) for k in ("run_id", "target", "repetition", "condition", "workload")]
    slowdown = frame["log_value"] - frame["log_value"].groupby(start).transform("median")
    return pd.DataFrame({"experiment": experiment,
                         "slow_probes": frame[list(stats.PROBE_METRICS)].sum(axis=1).astype(int),
                         "side": [SIDES[pair] for pair in zip(*(frame[m] for m in stats.PROBE_METRICS))],
                         "slowdown": slowdown if larger_is_slower else -slowdown}).reset_index(drop=True)


def summary(frames: list[pd.DataFrame], by: str = "slow_probes") -> pd.DataFrame:
    d = pd.concat(frames, ignore_index=True)
    return d.groupby(["experiment", by])["slowdown"].agg(
        measurements="count", mean="mean", median="median",
        over_5pct=lambda x: float((x > SLOWER).mean())).reset_index()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--builds", nargs="+", help="quick builds named in data/quick_builds.json")
    group.add_argument("--run", nargs="+", help="stored run ids")
    ap.add_argument("--data", type=Path, help="where runs are stored (default data/raw)")
    ap.add_argument("--by", choices=("count", "side"), default="count",
                    help="group by how many probes ran slow (default) or by which")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        if args.builds:
            from precision import build_runs
            dirs = [d for runs in build_runs(args.builds, args.data).values() for d in runs]
        else:
            dirs = [find_run(run, args.data or ROOT / "data" / "raw") for run in args.run]
    except ClaimlabError as exc:
        sys.exit(str(exc))
    frames = [f for f in map(deviations, dirs) if f is not None]
    if not frames:
        sys.exit("no run with speed probes among those named")
    by = "slow_probes" if args.by == "count" else "side"
    print(summary(frames, by).round(4).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
