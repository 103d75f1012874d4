"""Do C2's ratios hold in the machine's slow state? If they did, a slow hour could pool its slow
scans with the fast ones; if not, the fast-state statistic must leave them out and a slow hour
costs precision.

    python bench/state_ratios.py --builds BC BD BE        # C2 runs of quick builds (data/quick_builds.json)
    python bench/state_ratios.py --run RUN [RUN ...]      # stored runs of a claim read by near_min

Each round of a server start scans every collation once, in a random order, within about a
second. A scan is fast as the analysis reads it (`stats.observations.fast_state`: within 15% of
its start's fastest, in a start whose fastest lies within 15% of the run's fast level, the lower
quartile of the starts' fastest), slow when it takes over SLOW (1.5x) of the run's fast level.
For each comparison: the geometric mean of the round ratios (treatment / baseline) over the
rounds whose two scans were both fast, and over those whose two scans were both slow; the
rounds in between are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from claimlab.claims import load_claims
from claimlab.errors import ClaimlabError
from claimlab.stats.observations import side_fast_state
from claimlab.stopping import fast_level
from claimlab.store import find_run, read_manifest, read_results

ROOT = Path(__file__).resolve().parents[1]
SLOW = 1.5
START = ["repetition", "seq", "attempt"]


def state_ratios(results: pd.DataFrame, claim) -> pd.DataFrame:
    """One row per comparison of `claim` read by its fastest scans (`near_min`): its round ratio
    with both scans fast and with both slow, and how many rounds each (NaN ratio: no such round)."""
    rows = []
    for comparison in claim.comparisons:
        if comparison.statistic != "near_min":
            continue
        scans = results[results["metric"] == comparison.metric]
        scans = scans.assign(fast=False, slow=False)
        for _, side in scans.groupby(["run_id", "condition"]):
            bests = side.groupby(START)["value"].min()
            level = np.exp(fast_level(np.log(bests.to_numpy())))
            scans.loc[side.index, "fast"] = side_fast_state(side, [], "near_min")
            scans.loc[side.index, "slow"] = side["value"] > SLOW * level
        rounds = scans.pivot_table(index=["run_id", *START, "iteration"], columns="condition",
                                   values=["value", "fast", "slow"], aggfunc="first")
        base, treat = comparison.baseline.label, comparison.treatment.label
        logs = np.log(rounds["value", treat].astype(float) / rounds["value", base].astype(float))
        row = {"comparison": comparison.name}
        for state in ("fast", "slow"):
            both = (rounds[state][[base, treat]] == True).all(axis=1)   # noqa: E712 (NaN: not measured)
            row[f"{state}_ratio"] = float(np.exp(logs[both].mean())) if both.any() else np.nan
            row[f"{state}_rounds"] = int(both.sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=["comparison", "fast_ratio", "fast_rounds", "slow_ratio", "slow_rounds"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--builds", nargs="+", metavar="BUILD", help="quick builds of data/quick_builds.json")
    which.add_argument("--run", nargs="+", metavar="RUN_ID", help="stored runs")
    parser.add_argument("--data", type=Path, help="where runs are stored (default data/raw)")
    args = parser.parse_args(argv)
    claims = load_claims(ROOT / "data" / "claims.yaml")
    if args.builds:
        listed = json.loads((ROOT / "data" / "quick_builds.json").read_text())
        unknown = sorted(set(args.builds) - set(listed))
        if unknown:
            raise ClaimlabError(f"data/quick_builds.json: no build {', '.join(unknown)}")
        runs = [(name, run) for name in args.builds for run in listed[name]["runs"]]
    else:
        runs = [("", run) for run in args.run]
    pd.set_option("display.width", 200)
    for name, run in runs:
        path = find_run(run, args.data or ROOT / "data" / "raw")
        manifest = read_manifest(path)
        claim = claims.get(manifest.get("claim"))
        if claim is None or not any(c.statistic == "near_min" for c in claim.comparisons):
            if not args.builds:
                raise ClaimlabError(f"{run}: its claim has no comparison read by its fastest scans (near_min)")
            continue
        print(f"{name} {run} {manifest.get('default_target')}".strip())
        print(state_ratios(read_results(path), claim).to_string(index=False, float_format="{:.3f}".format),
              end="\n\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClaimlabError as exc:
        sys.exit(f"state_ratios: {exc}")
