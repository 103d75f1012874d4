"""How many runs, analysed together, settle a comparison that single runs leave near an edge?

    python bench/runs_together.py --builds CV CW ... DQ --experiment collation_cost \
        --comparison utf8mb4_general_vs_utf8mb3 --sizes 1 2 4 6 --draws 40

Draws subsets of the builds' runs of one experiment (every single build for size 1, else `draws`
random subsets of `size` builds, from `--seed`), analyses each subset as `claimlab analyze` does
(`report.analyze_runs`: runs as the top level, so the interval is a t over the runs' means with
df = runs - 1), and counts each target's verdicts and the median half-width per size. The whole
set is analysed too: what all the builds together say.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import pandas as pd

from claimlab import report
from claimlab.errors import ClaimlabError
from claimlab.store import read_manifest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from precision import build_runs, half_width  # noqa: E402


def runs_by_build(builds: list[str], experiment: str, data: Path | None = None) -> dict[str, list[str]]:
    """Each build's run ids of `experiment` (one per server)."""
    found = {name: [p.name for p in paths if read_manifest(p)["experiment"] == experiment]
             for name, paths in build_runs(builds, data).items()}
    empty = [name for name, runs in found.items() if not runs]
    if empty:
        raise ClaimlabError(f"build {empty[0]} has no {experiment} run")
    return found


def verdicts(runs: list[str], comparison: str, data: Path | None = None) -> pd.DataFrame:
    """One row per target: the verdict, estimate and half-width of `comparison` over `runs` together."""
    (analysis,) = report.analyze_runs(runs, data)
    table = analysis.table[analysis.table["comparison"] == comparison]
    if table.empty:
        raise ClaimlabError(f"claim {analysis.claim.id} has no comparison {comparison!r}")
    return pd.DataFrame({"target": table["target"], "verdict": table["verdict"], "estimate": table["estimate"],
                         "half_width": [half_width(lo, hi) for lo, hi in zip(table["ci_low"], table["ci_high"])]})


def together(by_build: dict[str, list[str]], comparison: str, sizes: list[int], draws: int, seed: int,
             data: Path | None = None) -> pd.DataFrame:
    """Per size and target: how many subsets read each verdict, and their median half-width."""
    rng = random.Random(seed)
    builds = sorted(by_build)
    rows = []
    for size in sizes:
        if not 1 <= size <= len(builds):
            raise ClaimlabError(f"--sizes: {size} is not between 1 and the {len(builds)} builds named")
        subsets = [[b] for b in builds] if size == 1 else [rng.sample(builds, size) for _ in range(draws)]
        for subset in subsets:
            read = verdicts([r for b in subset for r in by_build[b]], comparison, data)
            rows += [{"size": size, **row} for row in read.to_dict("records")]
    frame = pd.DataFrame(rows)
    counts = frame.pivot_table(index=["size", "target"], columns="verdict", values="estimate",
                               aggfunc="count", fill_value=0)
    counts["subsets"] = counts.sum(axis=1)
    counts["median_half_width"] = frame.groupby(["size", "target"])["half_width"].median()
    return counts.reset_index()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", nargs="+", required=True, metavar="BUILD", help="quick builds to draw from")
    ap.add_argument("--experiment", required=True, help="e.g. collation_cost")
    ap.add_argument("--comparison", required=True, help="e.g. utf8mb4_general_vs_utf8mb3")
    ap.add_argument("--sizes", nargs="+", type=int, default=[1, 2, 4], help="builds per subset (default 1 2 4)")
    ap.add_argument("--draws", type=int, default=40, help="random subsets per size above 1 (default 40)")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--data", type=Path, help="where runs are stored (default data/raw)")
    args = ap.parse_args(argv)
    if args.draws < 1:
        ap.error("--draws: at least 1")
    try:
        by_build = runs_by_build(args.builds, args.experiment, args.data)
        table = together(by_build, args.comparison, args.sizes, args.draws, args.seed, args.data)
        whole = verdicts([r for runs in by_build.values() for r in runs], args.comparison, args.data)
    except ClaimlabError as exc:
        print(f"runs_together: {exc}", file=sys.stderr)
        return 2
    with pd.option_context("display.width", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        print(f"\nall {len(by_build)} builds together:")
        print(whole.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
