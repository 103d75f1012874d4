"""Should a quick run stop at its rule's first look when the hour is slow, or at the look where a
time budget runs out, or measure fewer rounds a start? What the shipped sequential runs would
have read had they stopped there, against what they read at their end.

    python bench/first_look.py --builds BF BG BH        # the builds' sequential runs (data/quick_builds.json)
    python bench/first_look.py --builds BF BG --experiment binlog_default
    python bench/first_look.py --builds CV CW --budget 60 --target mariadb
    python bench/first_look.py --builds DR --rounds 10 --target mysql

A run cut at a look keeps the server starts before it (repetitions 0 .. b - 1) and is analysed as
`stats.analyze` analyses any run of that rule (a cut whose time says nothing of the effect keeps
its error rate: `stats.sequential_alpha`). The cut is the first look (`min_blocks` starts), or with
`--budget` the first look from which one more block, at the run's mean time a start so far, would
end past that many measured seconds (none: the run is kept whole). With `--rounds N` each start
keeps its first N rounds (what a start without rounds added would have measured) and the rule is
replayed on them: the cut is the first look at which `stats.should_stop` stops, or the run's last
start when none does (the run ended there; it would have gone on). Minutes are the measured span
(first scan's start to the last scan's end) of the kept starts and of the whole run; measured_s
the seconds inside measurements, which fewer rounds shorten where the span may not move.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
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


def _measured_s(results: pd.DataFrame) -> float:
    """Seconds spent in measurements (each one's stamps, once across its metrics): what fewer
    rounds save, where the span of a block of alternating starts would not move."""
    once = results.drop_duplicates([*START, "condition", "workload", "iteration"])
    return float((pd.to_datetime(once["ended_at"]) - pd.to_datetime(once["started_at"])).dt.total_seconds().sum())


def _first_cut(results: pd.DataFrame, rule: StopRule, starts_per_block: int,
               stops: Callable[[pd.DataFrame, int], bool]) -> int:
    """The starts kept at the first look (after `min_blocks` starts, then after every block) at
    which `stops(rows of the starts kept so far, their number)` holds; every start when none does."""
    starts = int(results["repetition"].max()) + 1
    for kept in range(rule.min_blocks, starts, starts_per_block):
        if stops(results[results["repetition"] < kept], kept):
            return kept
    return starts


def budget_cut(results: pd.DataFrame, rule: StopRule, starts_per_block: int, budget_s: float) -> int:
    """The starts a run keeps under a budget of `budget_s` measured seconds: it looks after
    `min_blocks` starts and then after every block, and stops at the first look from which one
    more block, at its mean time a start so far, would end past the budget (the rule's minimum
    at least; every start when no look is that late)."""
    def past_budget(rows: pd.DataFrame, kept: int) -> bool:
        return _span_min(rows) * 60 * (kept + starts_per_block) / kept > budget_s

    return _first_cut(results, rule, starts_per_block, past_budget)


def replay_cut(results: pd.DataFrame, claim, rule: StopRule, starts_per_block: int) -> int:
    """The starts the rule keeps when replayed on `results`: the first look at which
    `stats.should_stop` stops, or every start when none does."""
    return _first_cut(results, rule, starts_per_block, lambda rows, _: stats.should_stop(rows, claim, rule).stop)


def first_look(run_dir: Path, budget_s: float | None = None, rounds: int | None = None) -> pd.DataFrame:
    """One row per comparison of a sequential run: its starts, verdict, estimate and half-width at
    the cut (the first look, where `budget_s` runs out, or where the rule stops on each start's
    first `rounds` rounds) and at the end, and the measured minutes of each (empty for a fixed
    design)."""
    manifest = read_manifest(run_dir)
    rule = StopRule.of_manifest(manifest)
    if rule is None:
        return pd.DataFrame()
    claim = load_claims(ROOT / "data" / "claims.yaml")[manifest["claim"]]
    results = read_results(run_dir)
    per_block = manifest["design"].get("starts_per_block", 1)
    measured = results
    if rounds is not None:
        measured = results[results["iteration"] < rounds]
        kept = replay_cut(measured, claim, rule, per_block)
    elif budget_s is not None:
        kept = budget_cut(results, rule, per_block, budget_s)
    else:
        kept = rule.min_blocks
    cut = measured[measured["repetition"] < kept]
    whole = stats.analyze(results, claim, stop_rule=rule)
    rows = {}
    for at, part in (("cut", cut), ("end", results)):
        table = whole if len(part) == len(results) else stats.analyze(part, claim, stop_rule=rule)
        for row in table.itertuples(index=False):
            got = rows.setdefault(row.comparison, {"run_id": run_dir.name, "target": row.target,
                                                   "comparison": row.comparison})
            got |= {f"starts_{at}": len(part[START].drop_duplicates()), f"counted_{at}": row.n_blocks,
                    f"verdict_{at}": row.verdict, f"estimate_{at}": row.estimate,
                    f"half_width_{at}": half_width(row.ci_low, row.ci_high), f"minutes_{at}": _span_min(part),
                    f"measured_s_{at}": _measured_s(part)}
    return pd.DataFrame(list(rows.values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", nargs="+", required=True, metavar="BUILD", help="quick builds to read")
    ap.add_argument("--experiment", default="collation_cost", help="whose runs (default collation_cost)")
    ap.add_argument("--data", type=Path, help="where runs are stored (default data/raw)")
    ap.add_argument("--budget", type=float, metavar="SECONDS",
                    help="cut where this many measured seconds run out, not at the first look")
    ap.add_argument("--rounds", type=int, metavar="N",
                    help="keep each start's first N rounds and replay the rule on them")
    ap.add_argument("--target", help="only the runs on this target (e.g. mariadb)")
    args = ap.parse_args(argv)
    if args.budget is not None and not args.budget > 0:
        ap.error("--budget: a number of seconds above 0")
    if args.rounds is not None and not args.rounds > 0:
        ap.error("--rounds: a number of rounds above 0")
    if args.rounds is not None and args.budget is not None:
        ap.error("--rounds and --budget: give one of them")
    try:
        runs = build_runs(args.builds, args.data)
        tables = [first_look(path, args.budget, args.rounds).assign(build=name)
                  for name, paths in runs.items() for path in paths
                  if (manifest := read_manifest(path))["experiment"] == args.experiment
                  and args.target in (None, manifest["default_target"])]
    except ClaimlabError as exc:
        print(f"first_look: {exc}", file=sys.stderr)
        return 2
    tables = [t for t in tables if not t.empty]
    if not tables:
        on = f" on {args.target}" if args.target else ""
        print(f"first_look: no sequential {args.experiment} run{on} in builds {' '.join(args.builds)}",
              file=sys.stderr)
        return 2
    out = pd.concat(tables, ignore_index=True)
    columns = ["build", "target", "comparison", *(f"{c}_{at}" for at in ("cut", "end") for c in (
        "starts", "counted", "verdict", "estimate", "half_width", "minutes", "measured_s"))]
    with pd.option_context("display.width", 250, "display.max_columns", None):
        print(out[columns].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
