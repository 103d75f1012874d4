"""How precise each claim's verdict is: the 95% interval half-width of every comparison.

    python bench/precision.py                          # quick profile of every claim, both servers
    python bench/precision.py --profile full --experiment binlog_default
    python bench/precision.py --run RUN_ID ...         # stored runs only, no server
    python bench/precision.py --run A1 A2 .. --against B1 B2 ..   # do two sessions agree?
    python bench/precision.py --builds [I J ..]        # every pair of the shipped quick builds, and
                                                       # (three or more) each interval against the others
    python bench/precision.py --builds --calibration   # each verdict's "same on a rerun" against
                                                       # the other builds of its processor

The half-width is taken on the log scale, where the interval is symmetric:
exp((ln hi - ln lo) / 2) - 1, so "3%" means the interval is the estimate x/÷ 1.03. Intervals come
from `stats.analyze` at the level the comparison's multiplicity family leaves (its `confidence`
column), so a member of a two-comparison family is reported at 97.5%: the width a verdict really
uses. Goals (issue 12): C2's main comparison <= 3% and every C1 comparison <= 5% at the quick
profile, C4 <= 5% at the full profile. Run it twice at different times and compare the two tables:
the verdicts should agree and C2's estimates lie within 3% of each other (`--against` puts the
two side by side: one row per claim, comparison and server, and counts the agreements apart for
the comparisons near a decision edge in neither session: `stats.edge_label`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path

import pandas as pd

from claimlab import narrative, params, runner, stats
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


def builds_agreement(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per pair of builds: how many verdicts and labels agree, how many label differences
    were marked near an edge in either build, how far apart C2's main estimates are, and which C2
    estimates (any comparison, either server) are more than 3% apart: the issue's must-show."""
    rows = []
    for (a, first), (b, second) in itertools.combinations(tables.items(), 2):
        both = agreement(first, second)
        differ = both[~both["same_label"]]
        c2 = both[both["claim"] == "C2"]
        main = c2[c2["comparison"] == "uca_ai_vs_utf8mb3"]
        over = c2[c2["apart"] > math.log(1.03)]
        rows.append({"builds": f"{a} vs {b}", "compared": len(both),
                     "same_verdict": int(both["same_verdict"].sum()),
                     "same_label": int(both["same_label"].sum()), "label_differs": len(differ),
                     "marked": int(differ["near_edge"].sum()),
                     "c2_apart": ", ".join(f"{t} {x:.1%}" for t, x in zip(main["target"], main["apart"])),
                     "c2_over_3pct": ", ".join(f"{c} {t} {x:.1%}" for c, t, x in
                                               zip(over["comparison"], over["target"], over["apart"])) or "-",
                     "processors": _processors(first, second)})
    return pd.DataFrame(rows)


def _processors(first: pd.DataFrame, second: pd.DataFrame) -> str:
    """'same', 'not recorded' (either build's runs name no family: "AMD EPYC" named two hosts whose
    C2 ratios differ), or both builds' processors (`provenance.cpu_label`). C2's ratios belong to
    the processor (MySQL's main comparison 1.44 on AMD family 26, 1.55-1.71 on Intel family 6
    model 207), so builds on two are not two runs of one measurement."""
    a, b = (", ".join(sorted(set(t["processor"]))) for t in (first, second))
    if "not recorded" in a or "not recorded" in b:
        return "not recorded"
    return "same" if a == b else f"{a} / {b}"


def _pooled(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The builds' rows in one frame (a `build` column, one index), keeping the comparisons tested
    on a server with an interval (two blocks or more)."""
    both = pd.concat([t.assign(build=name) for name, t in tables.items()], ignore_index=True)
    return both[both["target"].astype(bool) & (both["n_blocks"] >= 2)]


def replication(tables: dict[str, pd.DataFrame], goal: float = 0.95) -> pd.DataFrame:
    """Per comparison and server: how often the builds' labels agreed, and how often two builds
    of the last one's design (its block count: the current profile when builds are listed in the
    order made) would agree (`stats.agreement_chance`), from the builds pooled: the mean of their
    log estimates, the root mean square of their block spreads, and the spread of their
    estimates beyond what the blocks explain. With the blocks a build would need for `goal`
    agreement: what the literal "two quick builds agree" asks of each. Builds of one design pool
    exactly; across a change of rounds per block the pooled block spread is an approximation."""
    rows = []
    claims = load_claims(ROOT / "data" / "claims.yaml")
    for (claim, comparison, target), part in _pooled(tables).groupby(["claim", "comparison", "target"], sort=True):
        if len(part) < 2:
            continue
        logs = part["estimate"].map(math.log)
        sd = math.sqrt((part["sd_unit"] ** 2).mean())
        n = int(part["n_blocks"].iloc[-1])
        between = math.sqrt(max(0.0, logs.var() - (part["sd_unit"] ** 2 / part["n_blocks"]).mean()))
        first, last = part.iloc[0], part.iloc[-1]
        published = None if pd.isna(first["published_ratio"]) else float(first["published_ratio"])
        decide = stats.labeller(first["kind"], first["direction"], published, float(first["equivalence_margin"]))
        rule = last["stop_rule"]     # the last build's design (a sequential one looks on until decided)
        chances = stats.design_label_chances(claims[claim].comparison(comparison), logs.mean(), sd, n,
                                             float(first["confidence"]), rule, int(last["family_size"]), between)
        labels = part["verdict_label"].tolist()
        pairs = list(itertools.combinations(labels, 2))
        rows.append({"claim": claim, "comparison": comparison, "target": target,
                     "estimate": math.exp(logs.mean()), "sd_block": sd, "between": between,
                     "blocks": n, "agreed": sum(a == b for a, b in pairs) / len(pairs),
                     "chance": stats.agreement_chance(chances),
                     "likeliest": max(chances, key=chances.get),
                     "design": f"sequential {rule.min_blocks}-{rule.max_blocks}" if rule else f"{n} blocks",
                     "blocks_for_goal": math.nan if rule else stats.blocks_for_agreement(
                         decide, logs.mean(), sd, float(first["confidence"]), n, between, goal)})
    return pd.DataFrame(rows)


def coverage(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per build, comparison and server: whether the build's interval holds the median of the other
    builds' estimates (needs three builds or more). Where the truth is unknown, the others' median
    stands in for it: a build's interval should hold it about as often as its level says, less
    what the reference's own noise and the hours' differences (which no one run's interval can
    see) take away. The simulations test coverage against a known truth
    (tests/unit/test_simulation.py); this asks it of the real builds."""
    rows = []
    for (claim, comparison, target), part in _pooled(tables).groupby(["claim", "comparison", "target"], sort=True):
        if len(part) < 3:
            continue
        logs = part["estimate"].map(math.log)
        for index, row in part.iterrows():
            reference = math.exp(logs.drop(index).median())
            rows.append({"build": row["build"], "claim": claim, "comparison": comparison, "target": target,
                         "estimate": row["estimate"], "ci_low": row["ci_low"], "ci_high": row["ci_high"],
                         "confidence": row["confidence"], "reference": reference,
                         "covers": bool(row["ci_low"] <= reference <= row["ci_high"])})
    return pd.DataFrame(rows)


def calibration(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per verdict of a build: its chance of reading the same on a rerun against what the
    other builds on the same processor read (`observed`: the share with the same label).

    Beside the reported chance (`rerun_chance`, a plug-in: the run's estimate taken as the truth)
    a predictive one (`predictive`) also draws the truth from the run's own interval: a rerun's
    mean then spreads with twice the run's variance, sd^2 / n for the truth and as much again for
    the rerun (Killeen, "An alternative to null-hypothesis significance tests", Psychological
    Science 2005; Goodman, Statistics in Medicine 1992, on the plug-in's optimism). Builds of one
    processor differ in design over the sessions, and neither chance knows the run-level states
    that other builds hold: both are read against the builds as they were made."""
    claims = load_claims(ROOT / "data" / "claims.yaml")
    rows = []
    for (claim, comparison, target, _), part in _pooled(tables).groupby(
            ["claim", "comparison", "target", "processor"], sort=True):
        for index, row in part.iterrows():
            others = part.drop(index=index)
            if others.empty or not math.isfinite(row["sd_unit"]):
                continue
            sd, n = float(row["sd_unit"]), int(row["n_blocks"])
            chances = stats.design_label_chances(claims[claim].comparison(comparison), math.log(row["estimate"]),
                                                 sd, n, float(row["confidence"]), row["stop_rule"],
                                                 int(row["family_size"]), between=sd / math.sqrt(n))
            rows.append({"build": row["build"], "processor": row["processor"], "claim": claim,
                         "comparison": comparison, "target": target, "verdict_label": row["verdict_label"],
                         "rerun_chance": row["rerun_chance"], "predictive": chances.get(row["verdict_label"], 0.0),
                         "observed": float((others["verdict_label"] == row["verdict_label"]).mean()),
                         "others": len(others)})
    return pd.DataFrame(rows)


CALIBRATION_BINS = (0.0, 0.8, 0.9, 0.95, 0.99, 1.0)


def calibration_bins(frame: pd.DataFrame, column: str = "rerun_chance") -> pd.DataFrame:
    """`calibration`'s verdicts binned by one chance: how many, the mean chance, the mean observed
    agreement; the last row (`all`) with the Brier score of the chance against the observed share."""
    bins = pd.cut(frame[column], list(CALIBRATION_BINS[:-1]) + [1.0 + 1e-9], right=False,
                  labels=[f"{a:.0%}-{b:.0%}" for a, b in itertools.pairwise(CALIBRATION_BINS)])
    out = frame.groupby(bins, observed=True).agg(verdicts=(column, "size"), chance=(column, "mean"),
                                                  observed=("observed", "mean"))
    out.loc["all"] = [len(frame), frame[column].mean(), frame["observed"].mean()]
    out["brier"] = math.nan
    out.loc["all", "brier"] = float(((frame[column] - frame["observed"]) ** 2).mean())
    return out


def print_calibration(tables: dict[str, pd.DataFrame]) -> None:
    frame = calibration(tables)
    print(f"Same on a rerun against the other builds of each processor ({len(frame)} verdicts of "
          f"{frame['build'].nunique()} builds):")
    for column, name in (("rerun_chance", "reported (plug-in)"), ("predictive", "predictive")):
        print(f"\n{name}:")
        print(calibration_bins(frame, column).rename_axis(None).to_string(float_format="{:.4f}".format, na_rep=""))
    print("\nper processor: mean observed, mean chance (reported, predictive), Brier (reported, predictive)")
    for processor, part in frame.groupby("processor"):
        brier = [((part[c] - part["observed"]) ** 2).mean() for c in ("rerun_chance", "predictive")]
        print(f"  {processor}: {len(part)} verdicts, observed {part['observed'].mean():.3f}, chance "
              f"{part['rerun_chance'].mean():.3f} / {part['predictive'].mean():.3f}, "
              f"Brier {brier[0]:.4f} / {brier[1]:.4f}")


def build_runs(names: list[str] | None, data: Path | None) -> dict[str, list[Path]]:
    """The runs of the quick builds listed in data/quick_builds.json (all of them by default)."""
    listed = json.loads((ROOT / "data" / "quick_builds.json").read_text())
    unknown = sorted(set(names or ()) - set(listed))
    if unknown:
        raise ClaimlabError(f"data/quick_builds.json: no build {', '.join(unknown)} "
                            f"(it lists {', '.join(listed)})")
    return {name: [find_run(run, data or ROOT / "data" / "raw") for run in listed[name]["runs"]]
            for name in names or listed}


def print_builds(tables: dict[str, pd.DataFrame]) -> None:
    pairs = builds_agreement(tables)
    print(pairs.to_string(index=False))
    total = pairs[["compared", "same_verdict", "same_label", "label_differs", "marked"]].sum()
    print(f"all {len(pairs)} pairs: same verdict {total['same_verdict']} of {total['compared']}, "
          f"same label {total['same_label']}; label differs {total['label_differs']}, "
          f"{total['marked']} of them marked near an edge in either build")
    across = int((~pairs["processors"].isin(["same", "not recorded"])).sum())
    if across:
        print(f"{across} of the pairs were measured on different processors: their C2 ratios differ by "
              "the processor, not only by the run")
    labels = pd.concat([t.assign(build=name) for name, t in tables.items()])
    labels = labels[labels["target"].astype(bool)]
    labels["shown"] = [narrative.shown_label(row) for _, row in labels.iterrows()]
    differs = labels.groupby(["claim", "comparison", "target"]).filter(lambda g: g["verdict_label"].nunique() > 1)
    for key, part in differs.groupby(["claim", "comparison", "target"], sort=True):
        print(f"{' '.join(key)}:")
        for row in part.itertuples(index=False):
            print(f"  {row.build}: {row.estimate:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}] {row.shown}; "
                  f"same on a rerun: {narrative.rerun_chance(row.rerun_chance)}")
    chance = replication(tables)
    print("\nHow often two builds agree: agreed (share of the pairs above), chance (two builds of the "
          "last one's blocks; stats.agreement_chance from the builds pooled), and the blocks a build "
          "would need for 95%:")
    print(chance.assign(estimate=chance["estimate"].map("{:.3f}".format),
                        sd_block=chance["sd_block"].map("{:.1%}".format),
                        between=chance["between"].map("{:.1%}".format),
                        agreed=chance["agreed"].map("{:.0%}".format),
                        chance=chance["chance"].map("{:.0%}".format),
                        blocks_for_goal=[("" if design.startswith("sequential") else "beyond 10000")
                                         if math.isnan(n) else f"{n:.0f}"
                                         for n, design in zip(chance["blocks_for_goal"], chance["design"])])
          .to_string(index=False))
    covered = coverage(tables)
    if not covered.empty:
        by_claim = covered.groupby("claim")["covers"]
        print(f"\nEach build's interval against the other builds' median estimate: it holds it in "
              f"{int(covered['covers'].sum())} of {len(covered)} ({covered['covers'].mean():.0%}; at levels "
              f"{covered['confidence'].min():.1%}-{covered['confidence'].max():.1%}); per claim "
              + ", ".join(f"{claim} {share:.0%}" for claim, share in by_claim.mean().items()) + "; missed:")
        for row in covered[~covered["covers"]].itertuples(index=False):
            print(f"  {row.build}, {row.claim} {row.comparison} ({row.target}): {row.estimate:.3f} "
                  f"[{row.ci_low:.3f}, {row.ci_high:.3f}] against {row.reference:.3f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs="+", default=None, help="stored run ids to report on (no server)")
    ap.add_argument("--against", nargs="+", default=None,
                    help="with --run: a second session's run ids, compared comparison by comparison")
    ap.add_argument("--builds", nargs="*", default=None,
                    help="compare every pair of these quick builds (data/quick_builds.json; default: all)")
    ap.add_argument("--calibration", action="store_true",
                    help="with --builds: each verdict's chance of reading the same on a rerun against "
                         "the other builds of its processor")
    ap.add_argument("--profile", default="quick", choices=params.PROFILES)
    ap.add_argument("--experiment", nargs="*", help="params names (default: every claim's)")
    ap.add_argument("--target", nargs="*", default=["mariadb", "mysql"], help="targets to run on")
    ap.add_argument("--data", type=Path, help="where runs are stored (default runs/)")
    ap.add_argument("--out", type=Path, help="also write the table as CSV")
    ap.add_argument("--normal-only", action="store_true",
                    help="analyse only the measurements the speed witness did not flag")
    args = ap.parse_args(argv)
    if args.builds is not None:
        if len(args.builds) == 1:
            raise ClaimlabError(f"--builds {args.builds[0]}: give two builds or more (pairs are compared), "
                                "or none for all; one build's runs: --run")
        tables = {name: table(dirs, args.normal_only) for name, dirs in build_runs(args.builds, args.data).items()}
        (print_calibration if args.calibration else print_builds)(tables)
        return 0
    if args.calibration:
        raise ClaimlabError("--calibration reads the shipped quick builds: add --builds (none for all)")
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
                                       should_stop=stats.stopping_for(one)).path)
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
                       fast=out["fast_share"].map(narrative.whole_percent),
                       rerun=out["rerun_chance"].map(narrative.rerun_chance))
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
