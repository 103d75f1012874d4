"""How precise each claim's verdict is: the 95% interval half-width of every comparison.

    python bench/precision.py                          # quick profile of every claim, both servers
    python bench/precision.py --profile full --experiment binlog_default
    python bench/precision.py --run RUN_ID ...         # stored runs only, no server
    python bench/precision.py --run A1 A2 .. --against B1 B2 ..   # do two sessions agree?

The half-width is taken on the log scale, where the interval is symmetric:
exp((ln hi - ln lo) / 2) - 1, so "3%" means the interval is the estimate x/÷ 1.03. Intervals come
from `stats.analyze` at the level the comparison's multiplicity family leaves (its `confidence`
column), so a member of a two-comparison family is reported at 97.5%: the width a verdict really
uses. Goals: C2's main comparison <= 3% and every C1 comparison <= 5% at the quick
profile, C4 <= 5% at the full profile. Run it twice at different times and compare the two tables:
the verdicts should agree and C2's estimates lie within 3% of each other (`--against` puts the
two side by side: one row per claim, comparison and server, and counts the agreements apart for
the comparisons near a decision edge in neither session: `stats.edge_label`).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from claimlab import campaign, cards, params, runner, stats, wording
from claimlab.claims import load_claims
from claimlab.errors import ClaimlabError
from claimlab.provenance import cpu_label
from claimlab.stopping import StopRule
from claimlab.store import find_run, read_manifest, read_results

ROOT = Path(__file__).resolve().parents[1]
# (claim, comparison or None for all of the claim's, profile) -> goal half-width
GOALS = {("C2", "uca_ai_vs_utf8mb3", "quick"): 0.03, ("C1", None, "quick"): 0.05,
         ("C4", None, "full"): 0.05}


def half_width(low: float, high: float) -> float:
    if not (low > 0 and high > 0 and math.isfinite(low) and math.isfinite(high)):
        return math.nan
    return math.exp((math.log(high) - math.log(low)) / 2) - 1


def goal(claim: str, comparison: str, profile: str) -> float:
    return GOALS.get((claim, comparison, profile), GOALS.get((claim, None, profile), math.nan))


def table(run_dirs: list[Path], normal_only: bool = False) -> pd.DataFrame:
    """One row per comparison and run; `normal_only` leaves out what the speed witness flagged."""
    claims = load_claims(ROOT / "data" / "claims.yaml")
    rows = []
    for run_dir in run_dirs:
        manifest = read_manifest(run_dir)
        if manifest.get("claim") not in claims:
            raise ClaimlabError(f"{run_dir.name}: not a claim's run ({manifest.get('experiment')}); "
                                "precision is reported for claim experiments only")
        claim = claims[manifest["claim"]]
        rule = StopRule.of_manifest(manifest)
        result = stats.analyze(read_results(run_dir), claim, stop_rule=rule, normal_only=normal_only)
        for row in result.itertuples(index=False):
            if row.verdict == "not_tested" and not row.target:
                continue    # its conditions ran on no target of this run: not a hypothesis of it
            rows.append({"run_id": manifest["run_id"], "processor": cpu_label(manifest["provenance"]["host"]),
                         "profile": manifest["profile"], "claim": claim.id,
                         "comparison": row.comparison, "target": row.target, "estimate": row.estimate,
                         "ci_low": row.ci_low, "ci_high": row.ci_high, "confidence": row.confidence,
                         "half_width": half_width(row.ci_low, row.ci_high),
                         "goal": goal(claim.id, row.comparison, manifest["profile"]),
                         "flagged_share": row.flagged_share, "fast_share": row.fast_share, "verdict": row.verdict,
                         "verdict_label": row.verdict_label, "edge_label": row.edge_label,
                         "kind": row.kind, "direction": row.direction,
                         "published_ratio": row.published_ratio,
                         "equivalence_margin": row.equivalence_margin,
                         "sd_unit": row.sd_unit, "n_blocks": row.n_blocks, "stop_rule": rule,
                         "family_size": row.family_size, "rerun_chance": row.rerun_chance})
    return pd.DataFrame(rows)


def agreement(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Two sessions' tables side by side: estimates, how far apart, verdicts and labels."""
    keys = ["claim", "comparison", "target"]
    cols = [*keys, "estimate", "verdict", "verdict_label", "edge_label", "half_width"]
    both = first[cols].merge(second[cols], on=keys, suffixes=("_a", "_b"))
    both = both[both["target"].astype(bool)]      # comparisons not tested on either server
    both["apart"] = (both["estimate_b"] / both["estimate_a"]).map(lambda r: abs(math.log(r)))
    both["same_verdict"] = both["verdict_a"] == both["verdict_b"]
    both["same_label"] = both["verdict_label_a"] == both["verdict_label_b"]
    both["near_edge"] = (both["edge_label_a"] != "") | (both["edge_label_b"] != "")
    return both


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs="+", default=None, help="stored run ids to report on (no server)")
    ap.add_argument("--against", nargs="+", default=None,
                    help="with --run: a second session's run ids, compared comparison by comparison")
    ap.add_argument("--profile", default="quick", choices=params.PROFILES)
    ap.add_argument("--experiment", nargs="*", help="params names (default: every claim's)")
    ap.add_argument("--target", nargs="*", default=["mariadb", "mysql"], help="targets to run on")
    ap.add_argument("--data", type=Path, help="where runs are read (default: runs/, then data/raw) and written (runs/)")
    ap.add_argument("--out", type=Path, help="also write the table as CSV")
    ap.add_argument("--normal-only", action="store_true",
                    help="analyse only the measurements the speed witness did not flag")
    args = ap.parse_args(argv)
    if args.run:
        dirs = [find_run(r, args.data) for r in args.run]
    else:
        names = args.experiment or [p.stem for p in sorted((ROOT / "params").glob("*.yaml"))]
        dirs = []
        for name in names:
            exp = params.load(ROOT / "params" / f"{name}.yaml", args.profile)
            for target in args.target:
                if target not in exp.targets:
                    continue
                one = params.with_default_target(exp, target, "--target")
                dirs.append(runner.run(one, data_root=args.data, progress=sys.stderr.isatty(),
                                       should_stop=campaign.should_stop(one)).path)
    out = table(dirs, args.normal_only)
    if args.against:
        if not args.run:
            raise ClaimlabError("--against compares stored runs: give the first session's with --run")
        both = agreement(out, table([find_run(r, args.data) for r in args.against], args.normal_only))
        print(both.assign(apart=both["apart"].map("{:.1%}".format),
                          estimate_a=both["estimate_a"].map("{:.3f}".format),
                          estimate_b=both["estimate_b"].map("{:.3f}".format))[
            ["claim", "comparison", "target", "estimate_a", "estimate_b", "apart", "verdict_label_a",
             "verdict_label_b", "near_edge", "same_verdict", "same_label"]].to_string(index=False))
        print(f"same verdict: {int(both['same_verdict'].sum())} of {len(both)}; same label: "
              f"{int(both['same_label'].sum())} of {len(both)}")
        far = both[~both["near_edge"]]
        print(f"of those near an edge in neither session ({len(far)}): same label "
              f"{int(far['same_label'].sum())} of {len(far)}")
        return 0
    shown = out.assign(estimate=out["estimate"].map("{:.3f}".format),
                       interval=[f"[{lo:.3f}, {hi:.3f}] at {c:.3g}" for lo, hi, c
                                 in zip(out["ci_low"], out["ci_high"], out["confidence"])],
                       half_width=out["half_width"].map("{:.1%}".format),
                       goal=out["goal"].map(lambda g: "" if math.isnan(g) else f"<= {g:.0%}"),
                       met=[("yes" if h <= g else "NO") if not math.isnan(g) else ""
                            for h, g in zip(out["half_width"], out["goal"])],
                       flagged=out["flagged_share"].map(lambda f: "no witness" if math.isnan(f) else f"{f:.0%}"),
                       fast=out["fast_share"].map(wording.whole_percent),
                       rerun=out["rerun_chance"].map(cards.rerun_chance))
    shown["verdict"] = [v + (stats.EDGE_MARK if e else "") for v, e in zip(shown["verdict"], shown["edge_label"])]
    print(shown[["run_id", "profile", "claim", "comparison", "target", "estimate", "interval",
                 "half_width", "goal", "met", "flagged", "fast", "verdict", "rerun"]].to_string(index=False))
    if args.out:
        out.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClaimlabError as exc:   # one line, as the command line does
        sys.exit(f"precision: {exc}")
