"""The verdict table: one row per comparison and target, from one run or several.

`analyze` pairs each comparison's sides in blocks (`observations`), summarizes the block log
ratios over runs (`intervals`), sizes the interval for the claim's declared multiplicity family
and, when the run stopped sequentially, for the level its stopping rule left (`sequential`),
and reads the verdict off that interval (`verdicts`). `between_runs` says whether runs agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from claimlab.claims import Claim
from claimlab.stopping import StopRule

from .intervals import log_ratio, run_components
from .observations import as_matrix, block_statistic_rule
from .power import (
    POWER,
    blocks_for_agreement,
    blocks_for_margin,
    blocks_needed,
    holm,
    minimal_detectable_effect,
    paired_power,
)
from .selection import Group, Policy, comparison_groups, family_sizes
from .sequential import design_label_chances, sequential_alpha
from .verdicts import EDGE_FACTOR, edge_label, equivalence_band, labeller, target_note, verdict

SMALL_EFFECT = 0.05
RERUN_NOTED = 0.95   # a verdict note gives the rerun chance below this

# One row per comparison and target. statistic: what a block contributes (claims.yaml; "mean":
# geometric means, "near_min"/"near_max": each side's fast-state values); estimate: exp of the mean
# block log ratio, treatment / baseline (a ratio of geometric means with "mean");
# ci_low/ci_high at `confidence` (the family's share of alpha, and the stopping rule's level);
# p_value: paired t of ratio 1, times nominal / used level after a sequential design (the
# interval's dual at the member's nominal level); p_family: Holm within the family;
# n_runs/n_blocks: top-level units and blocks used; pairing: "rounds" when both sides shared
# each server start, "blocks" otherwise, "mixed"; sd_unit: spread of the top-level units' log
# ratios (blocks for one run, run means for several); mde: smallest relative change detectable
# with 80% power at this size; units_needed: units for 80% power against the published ratio
# (for a null claim: to show equivalence within the margin; without a published ratio: a 5%
# change); runs_to_settle: for several runs near an edge, the runs at which two such analyses
# would read alike with 95% chance at these runs' spread (NaN otherwise); flagged_share: share
# of measurements the speed witness saw slow (NaN: no witness);
# fast_share: share of the comparison's values in the fast state (NaN unless statistic near_*;
# under observations.SLOW_HOUR the run was made in a slow hour and the note says so);
# side_state_p: whether the two sides met a slow state the fast-state band keeps unequally (the
# smaller p of `slow_side`'s two tests, Bonferroni; under 0.05 the note says so), side_bias_bound:
# the upper 95% limit of the bias such a state puts into the estimate, relative (NaN unless
# statistic near_*).
TABLE_COLUMNS = (
    "claim", "comparison", "kind", "direction", "family", "family_size", "experiment",
    "workload", "metric", "statistic", "baseline", "treatment", "target", "server_version", "n_runs",
    "n_blocks", "n_obs_baseline", "n_obs_treatment", "pairing", "estimate", "ci_low", "ci_high",
    "confidence", "p_value", "p_family", "sd_unit", "mde", "power_published", "units_needed",
    "published_ratio", "published_in_ci", "equivalence_margin", "flagged_share", "fast_share", "side_state_p",
    "side_bias_bound", "contention",
    "speed_state", "verdict", "verdict_label", "edge_label", "rerun_chance", "runs_to_settle", "verdict_note",
)
SPREAD_COLUMNS = ("claim", "comparison", "target", "n_runs", "between_run_sd", "within_run_sd",
                  "between_share", "p_runs_differ", "baseline", "baseline_corr")
RUN_COLUMNS = ("claim", "comparison", "target", "run_id", "estimate", "baseline", "baseline_level")


def analyze(results: pd.DataFrame, claim: Claim, *, confidence: float = 0.95,
            include_contention: bool = True, exclude_outliers: bool = False,
            normal_only: bool = False,
            stop_rule: StopRule | Mapping[str, StopRule | None] | None = None) -> pd.DataFrame:
    """The verdict table of `claim` from `results` of one run or several (runs: the top level).

    Rows taken under contention are kept unless `include_contention` is False; outliers are
    listed, and dropped only with `exclude_outliers`; with `normal_only`, measurements the speed
    witness flagged slow are left out (a round pair goes when either side is slow). The
    interval's level is `confidence` split evenly over the members of the comparison's family
    (Bonferroni, so the verdict is a function of the interval alone), or, when the run ended by
    `stop_rule`, the level that rule leaves at the final look (`sequential_alpha`; with several
    runs the smallest of their levels). `stop_rule` is one rule for every run, or each run's own
    by run id (None: a fixed design), since one claim's runs on two servers may have been
    designed differently. `verdict_note` counts every row left out, says why, and names the first ten of each kind.
    """
    policy = Policy(include_contention=include_contention, exclude_outliers=exclude_outliers,
                    normal_only=normal_only)
    groups = list(comparison_groups(results, claim, policy))
    sizes = family_sizes(claim, groups)
    rule_of = stop_rule.get if isinstance(stop_rule, Mapping) else lambda run: stop_rule
    rows = [_row(claim, group, sizes.get(group.family_key, 1), 1 - confidence, rule_of, policy)
            for group in groups]
    _adjust_families(rows, [group.family_key for group in groups])
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def run_levels(results: pd.DataFrame, claim: Claim, *, include_contention: bool = True,
               normal_only: bool = False) -> pd.DataFrame:
    """Each run's estimate of each comparison (the geometric mean of its blocks' ratios) beside
    its baseline level (the geometric mean of its blocks' baseline, in the comparison's metric):
    the machine's speed in that run, against which `between_runs`' baseline_corr reads the
    estimates. One row per comparison, server and run; numbers, formatted by whoever shows them."""
    return between_runs(results, claim, include_contention=include_contention, normal_only=normal_only)[1]


def between_runs(results: pd.DataFrame, claim: Claim, *, include_contention: bool = True,
                 normal_only: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Between-run against within-run spread of each comparison's block log ratios, and
    `run_levels`, from one pass over the comparison groups (building them is nearly all the work).

    between_run_sd and within_run_sd are log-scale standard deviations (about relative ones);
    between_share is the between-run share of a block's variance; p_runs_differ is the one-way
    ANOVA F test that the runs' true ratios are equal (see `intervals.run_components`).
    baseline_corr, with three runs or more, is the Pearson correlation over runs of the log
    estimate with the log baseline level: whether the runs' spread follows the machine's state.
    A description, not a test.
    """
    policy = Policy(include_contention=include_contention, normal_only=normal_only)
    spread, levels = [], []
    for group in comparison_groups(results, claim, policy):
        if group.reason or group.blocks.empty:
            continue
        per_run = group.blocks.groupby("run_id", sort=True)[["log_ratio", "baseline_log"]].mean()
        parts = run_components(as_matrix(group.blocks))
        keys = {"claim": claim.id, "comparison": group.comparison.name, "target": group.target}
        baseline = _baseline(group.comparison)
        spread.append({**keys, "n_runs": parts["n_runs"], "between_run_sd": parts["between_sd"],
                       "within_run_sd": parts["within_sd"], "between_share": parts["between_share"],
                       "p_runs_differ": parts["p_runs_differ"], "baseline": baseline,
                       "baseline_corr": _correlation(per_run["log_ratio"], per_run["baseline_log"])})
        levels += [{**keys, "run_id": run, "estimate": math.exp(values["log_ratio"]), "baseline": baseline,
                    "baseline_level": math.exp(values["baseline_log"])} for run, values in per_run.iterrows()]
    return pd.DataFrame(spread, columns=list(SPREAD_COLUMNS)), pd.DataFrame(levels, columns=list(RUN_COLUMNS))


def _baseline(comparison) -> str:
    return f"{comparison.baseline.label} {comparison.workload}/{comparison.metric}"


def _correlation(x: pd.Series, y: pd.Series) -> float:
    """Pearson's r over three points or more with some spread on both sides (else NaN)."""
    keep = x.notna() & y.notna()
    x, y = x[keep].to_numpy(dtype=float), y[keep].to_numpy(dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _row(claim: Claim, group: Group, family_size: int, alpha: float,
         rule_of: Callable[[str], StopRule | None], policy: Policy) -> dict[str, Any]:
    comparison = group.comparison
    row: dict[str, Any] = {
        "claim": claim.id, "comparison": comparison.name, "kind": comparison.kind,
        "direction": comparison.direction, "family": comparison.family,
        "experiment": comparison.experiment, "workload": comparison.workload,
        "metric": comparison.metric, "statistic": comparison.statistic,
        "baseline": comparison.baseline.label,
        "treatment": comparison.treatment.label, "target": group.target,
        "published_ratio": comparison.published_ratio,
        "equivalence_margin": comparison.equivalence_margin, "flagged_share": group.flagged_share,
        "fast_share": group.fast_share,
        "side_state_p": math.nan if group.side is None else float(group.side.p),
        "side_bias_bound": math.nan if group.side is None else math.expm1(float(group.side.bound)),
        "contention": "included" if policy.include_contention else "excluded",
        "speed_state": "normal only" if policy.normal_only else "all",
    }
    if group.reason:
        return {**row, "verdict": "not_tested", "verdict_label": "not tested", "edge_label": "",
                "rerun_chance": math.nan, "runs_to_settle": math.nan, "verdict_note": f"not tested: {group.reason}"}
    blocks = group.blocks
    summary = log_ratio(as_matrix(blocks))
    n_runs, n_blocks, df = int(summary.n_runs), int(summary.n_blocks), float(summary.df)
    extra = []
    per_run = blocks.groupby("run_id")["log_ratio"].size()
    run_rules = {run: rule_of(run) for run in per_run.index}
    sequential = {run: rule for run, rule in run_rules.items() if rule is not None}
    rule = next(iter(sequential.values())) if len(per_run) == 1 and sequential else None
    nominal = alpha / family_size
    if sequential:
        alpha = float(min(alpha / family_size if run_rules[run] is None else
                          sequential_alpha(run_rules[run], max(int(n), run_rules[run].min_blocks), family_size)
                          for run, n in per_run.items()))
        described = sorted({r.describe() for r in sequential.values()})
        extra.append(f"sequential design ({'; '.join(described)}): level {1 - alpha:.4f} at "
                     f"{'/'.join(str(n) for n in per_run)} blocks")
    else:
        alpha = alpha / family_size
    low, high = (float(x) for x in summary.interval(alpha))
    spreadless = df >= 1 and not float(summary.se) > 0
    if spreadless:   # a point "interval" would decide on 2 blocks with full confidence
        low = high = math.nan
        extra.append("the blocks' ratios do not differ at all: no interval can be estimated from them "
                     "(constant values? check the run's rows)")
    pairing = ("rounds" if blocks["paired"].all() else "blocks" if not blocks["paired"].any()
               else "mixed") if len(blocks) else ""
    units = "runs" if n_runs >= 2 else "blocks"
    if comparison.statistic != "mean":
        extra.append(f"block statistic: {block_statistic_rule(comparison.statistic)}")
    # the blocks' spread in the note: a state a whole server start holds (MySQL's code placement)
    # shows as blocks apart from the rest
    block_range = (f", ratio per block {math.exp(blocks['log_ratio'].min()):.3f} to "
                   f"{math.exp(blocks['log_ratio'].max()):.3f}" if len(blocks) >= 2 else "")
    if n_blocks:
        extra.append(f"t interval over {df + 1:.0f} {units} (df {df:.0f}{block_range}); "
                     + {"rounds": "paired round by round within each server start" if comparison.statistic == "mean"
                        else "both sides in each server start",
                        "blocks": "each side's geometric mean per block (separate server starts)",
                        "mixed": "paired by rounds where both sides shared a server start",
                        "": ""}[pairing])
    if df < 1:
        extra.append("fewer than two blocks: no interval; needs 2+ blocks with both sides")
    row.update({
        "family_size": family_size, "server_version": ", ".join(group.server_versions),
        "n_runs": n_runs, "n_blocks": n_blocks, "n_obs_baseline": group.n_obs[0],
        "n_obs_treatment": group.n_obs[1], "pairing": pairing,
        "estimate": math.exp(float(summary.mean)) if n_blocks else math.nan,
        "ci_low": low, "ci_high": high, "confidence": 1 - alpha,
        # the fixed-sample p scaled to the level the interval was read at: below the member's
        # nominal level exactly when the interval excludes 1 (after a sequential design the raw
        # p crossed it in about 6% of A/A runs, the rate the design's calibration removes)
        "p_value": math.nan if spreadless else _scaled(float(summary.p_value()), nominal / alpha),
        "published_in_ci": None if comparison.published_ratio is None or not math.isfinite(low)
        else bool(low <= comparison.published_ratio <= high),
        **_power(comparison, summary, alpha),
    })
    decision = verdict(comparison.kind, comparison.direction, comparison.published_ratio,
                       comparison.equivalence_margin, low, high)
    edge = edge_label(comparison.kind, comparison.direction, comparison.published_ratio,
                      comparison.equivalence_margin, low, high)
    rerun = _rerun_chance(comparison, float(summary.mean), row["sd_unit"], int(df) + 1, alpha, decision.label,
                          rule, family_size)
    settle = (_runs_to_settle(comparison, float(summary.mean), row["sd_unit"], n_runs, alpha)
              if edge and n_runs >= 2 and math.isfinite(row["sd_unit"]) else math.nan)
    row.update(verdict=decision.word, verdict_label=decision.label, edge_label=edge, rerun_chance=rerun,
               runs_to_settle=settle)
    notes = [decision.reason]
    if edge:
        notes.append(f"near a decision edge: an interval {EDGE_FACTOR:g}x as wide or as narrow would "
                     f"read \"{edge}\", so another run may")
        notes.append(_settle_note(settle, n_runs))   # '' unless runs together and a count
    if rerun < RERUN_NOTED:
        notes.append(f"a rerun of this design would read \"{decision.label}\" again with a chance of "
                     f"about {rerun:.0%} (this run's estimate and spread taken as true)")
    if decision.word == "inconclusive" and math.isfinite(row["units_needed"]):
        notes.append(_needed_note(row, comparison, units))
    notes += [target_note(comparison.source_target, group.server_versions), *extra, *group.notes]
    if comparison.note:
        notes.append(f"about this comparison: {comparison.note}")
    row["verdict_note"] = "; ".join(note for note in notes if note)
    return row


def _scaled(p: float, factor: float) -> float:
    return min(1.0, p * factor) if math.isfinite(p) else p


def _adjust_families(rows: list[dict[str, Any]], keys: list[tuple]) -> None:
    """Holm-adjust p-values within each family (`Group.family_key`, one per row); a member without
    a p-value counts as p = 1 (never silently leaves the family) and every row of it says so."""
    families: dict[tuple, list[dict]] = {}
    for row, key in zip(rows, keys):
        if row["verdict"] != "not_tested":
            families.setdefault(key, []).append(row)
    for members in families.values():
        pvalues = [row["p_value"] for row in members]
        missing = [row["comparison"] for row, p in zip(members, pvalues) if not np.isfinite(p)]
        adjusted = holm([p if np.isfinite(p) else 1.0 for p in pvalues])
        for row, p in zip(members, adjusted):
            row["p_family"] = float(p)
            note = (f"one of {len(members)} comparisons sharing one error rate (a family): level split evenly "
                    "(Bonferroni); p_family is Holm's") if len(members) > 1 else ""
            if missing:
                note += f"; no p-value for {', '.join(missing)}: counted as p = 1"
            if note:
                row["verdict_note"] += "; " + note.lstrip("; ")


def _power(comparison, summary, alpha: float) -> dict[str, float]:
    """MDE at this size, power for the published ratio, and units needed (from the observed
    spread of the top-level units; empty below two units)."""
    n = int(summary.df) + 1
    if n < 2 or not float(summary.se) > 0:   # no spread: nothing to plan from
        return {"sd_unit": math.nan, "mde": math.nan, "power_published": math.nan,
                "units_needed": math.nan}
    sd = float(summary.se) * math.sqrt(n)
    published = comparison.published_ratio
    if comparison.kind == "null":
        needed = blocks_for_margin(sd, comparison.equivalence_margin, alpha)
    else:
        goal = published if published is not None else 1 + SMALL_EFFECT
        needed = blocks_needed(math.log(goal), sd, alpha)
    return {"sd_unit": sd, "mde": minimal_detectable_effect(sd, n, alpha),
            "power_published": math.nan if published is None
            else paired_power(math.log(published), sd, n, alpha),
            "units_needed": needed}


def _rerun_chance(comparison, mean: float, sd: float, n: int, alpha: float, label: str,
                  rule: StopRule | None = None, family_size: int = 1) -> float:
    """The chance that another run of this design reads `label` again (`power.label_chances`;
    for one run of a sequential design, `sequential_label_chances`, which stops as its rule
    does), with this run's estimate and spread in place of the truth: a plug-in, so a verdict
    on an edge of a fixed design reads about 50%, a firm one about 100%. Against repeated runs on
    one processor it held on two AMD hosts and ran well above what an Intel host's runs agreed
    on (docs/method.md, "Near an edge, a rerun, and runs to settle")."""
    if n < 2 or not math.isfinite(sd):
        return math.nan
    return design_label_chances(comparison, mean, sd, n, 1 - alpha, rule, family_size).get(label, 0.0)


def _runs_to_settle(comparison, mean: float, sd: float, n_runs: int, alpha: float) -> float:
    """Runs, from `n_runs` on, at which two analyses of that many runs would read the same label
    with 95% chance (`power.blocks_for_agreement` with runs as the units, this analysis's estimate
    and between-run spread taken as true): what "near an edge" asks of runs already analysed
    together, where a fixed "four or more" no longer says anything. An interval 1.5x narrower
    clears the edge, so the count stays within about ten times `n_runs`; NaN past NEEDED_LIMIT."""
    decide = labeller(comparison.kind, comparison.direction, comparison.published_ratio,
                      comparison.equivalence_margin)
    return blocks_for_agreement(decide, mean, sd, 1 - alpha, n_runs)


def _settle_note(settle: float, n_runs: int) -> str:
    if not math.isfinite(settle):
        return ""
    if settle <= n_runs:
        return f"yet at these runs' spread {n_runs} runs already read alike with 95% chance"
    return f"about {int(settle)} runs analysed together would read alike with 95% chance at these runs' spread"


def _needed_note(row, comparison, units: str) -> str:
    if comparison.kind == "null":
        low, high = equivalence_band(comparison.equivalence_margin)
        goal = f"show equivalence within [{low:.3g}, {high:.3g}]"
    elif comparison.published_ratio is not None:
        goal = f"detect the published {comparison.published_ratio:g}"
    else:
        goal = f"detect a {SMALL_EFFECT:.0%} change"
    return f"about {int(row['units_needed'])} {units} would {goal} with {POWER:.0%} power"
