"""Should a quick run stop at its rule's first look when the hour is slow? What the shipped
sequential runs would have read had they stopped there, against what they read at their end.

    python bench/first_look.py --builds BF BG BH        # the builds' sequential runs (data/quick_builds.json)
    python bench/first_look.py --builds BF BG --experiment binlog_default

A run cut at its first look keeps the server starts before it (repetitions 0 .. min_blocks - 1)
and is analysed as `stats.analyze` analyses any run of that rule. Minutes are the measured span
(first scan's start to the last scan's end) of the kept starts and of the whole run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from claimlab import stats
from claimlab.claims import load_claims
from claimlab.errors import ClaimlabError
from claimlab.stopping import StopRule
from claimlab.store import read_manifest, read_results

sys.path.insert(0, str(Path(__file__).resolve().parent))
from precision import ROOT, build_runs, half_width  # noqa: E402

START = ["repetition", "seq", "attempt"]


def _span_min(results: pd.DataFrame) -> float:
    started, ended = pd.to_datetime(results["started_at"]), pd.to_datetime(results["ended_at"])
    return (ended.max() - started.min()).total_seconds() / 60


def first_look(run_dir: Path) -> pd.DataFrame:
    """One row per comparison of a sequential run: its starts, estimate and half-width at the first
    look and at the end, and the measured minutes of each (empty for a fixed design)."""
    manifest = read_manifest(run_dir)
    rule = StopRule.of_manifest(manifest)
    if rule is None:
        return pd.DataFrame()
    claim = load_claims(ROOT / "data" / "claims.yaml")[manifest["claim"]]
    results = read_results(run_dir)
    cut = results[results["repetition"] < rule.min_blocks]
    rows = {}
    for at, part in (("first", cut), ("end", results)):
        table = stats.analyze(part, claim, stop_rule=rule)
        for row in table.itertuples(index=False):
            got = rows.setdefault(row.comparison, {"run_id": run_dir.name, "target": row.target,
                                                   "comparison": row.comparison})
            got |= {f"starts_{at}": len(part[START].drop_duplicates()), f"counted_{at}": row.n_blocks,
                    f"estimate_{at}": row.estimate, f"half_width_{at}": half_width(row.ci_low, row.ci_high),
                    f"minutes_{at}": _span_min(part)}
    return pd.DataFrame(list(rows.values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", nargs="+", required=True, metavar="BUILD", help="quick builds to read")
    ap.add_argument("--experiment", default="collation_cost", help="whose runs (default collation_cost)")
    ap.add_argument("--data", type=Path, help="where runs are stored (default data/raw)")
    args = ap.parse_args(argv)
    try:
        runs = build_runs(args.builds, args.data)
        tables = [first_look(path).assign(build=name) for name, paths in runs.items() for path in paths
                  if read_manifest(path)["experiment"] == args.experiment]
    except ClaimlabError as exc:
        print(f"first_look: {exc}", file=sys.stderr)
        return 2
    tables = [t for t in tables if not t.empty]
    if not tables:
        print(f"first_look: no sequential {args.experiment} run in builds {' '.join(args.builds)}", file=sys.stderr)
        return 2
    out = pd.concat(tables, ignore_index=True)
    columns = ["build", "target", "comparison", "starts_first", "counted_first", "estimate_first",
               "half_width_first", "minutes_first", "starts_end", "counted_end", "estimate_end",
               "half_width_end", "minutes_end"]
    with pd.option_context("display.width", 250, "display.max_columns", None):
        print(out[columns].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
