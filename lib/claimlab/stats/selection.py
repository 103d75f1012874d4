"""Which rows make a comparison: its sides per target, the exclusion policy, and its blocks.

Nothing is dropped silently: every row left out (unusable value, outlier when asked,
contention when asked, slow state when asked, a block with one side only) is named in the
group's notes, which end up in the verdict note.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from claimlab.claims import Claim, Comparison
from claimlab.wording import level_words, metric_words, workload_words

from .observations import (
    BLOCK_KEYS,
    FAST_BAND,
    OUTLIER_Z,
    block_log_ratios,
    factor_columns,
    outlier_rule,
    prepare,
    side_fast_state,
    slow_hour_note,
)
from .slow_side import SideState, block_differences, side_state, side_state_note
from .speed import flagged_share, slow_mask, speed_flags, witness_note


@dataclass(frozen=True)
class Policy:
    """What the analysis leaves out. Every exclusion is reported in the verdict note."""

    include_contention: bool = True
    exclude_outliers: bool = False
    outlier_threshold: float = OUTLIER_Z
    normal_only: bool = False   # use only measurements the speed witness saw in the normal state


DEFAULT_POLICY = Policy()
NOTE_LISTS = 10   # rows a verdict note names of each exclusion or flag; it counts them all


@dataclass(frozen=True, eq=False)
class Group:
    """One comparison on one target: its block log ratios, or the reason there are none."""

    comparison: Comparison
    target: str = ""
    blocks: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=[*BLOCK_KEYS, "log_ratio", "paired", "n_pairs", "unmatched", "baseline_log"]))
    server_versions: tuple[str, ...] = ()
    n_obs: tuple[int, int] = (0, 0)
    flagged_share: float = math.nan
    fast_share: float = math.nan   # share of its values in the fast state (a fast-state statistic only)
    side: SideState | None = None  # the two sides' fast states compared (a fast-state statistic only)
    notes: tuple[str, ...] = ()
    reason: str = ""

    @property
    def family_key(self) -> tuple[str, tuple[str, ...]]:
        """The family and the runs its blocks come from. Not the target: a comparison of two
        servers started by its levels has a target of its own ("mysql57+mysql80"), and keyed by
        target, one declared family measured in one run split into several, each at a wider level
        than the family leaves. Runs of one server analysed together share one key; another
        server's runs (another params target) make another family."""
        runs = tuple(sorted(set(self.blocks["run_id"].astype(str)))) if len(self.blocks) else (self.target,)
        return self.comparison.family, runs


def claim_metrics(claim: Claim) -> list[str]:
    """The metrics a claim's comparisons are about (results also hold cost counters)."""
    return sorted({comparison.metric for comparison in claim.comparisons})


def comparison_groups(results: pd.DataFrame, claim: Claim, policy: Policy) -> Iterator[Group]:
    """Every comparison of the claim, per target that ran both sides, in declaration order."""
    # pandas deep-copies `attrs` (the store's run state) into every frame derived from this one:
    # tens of thousands of copies an analysis, a tenth of its time. The groups need none of it.
    results = results.copy(deep=False)
    results.attrs = {}
    rows = results.assign(slow=speed_flags(results))
    rows = rows[rows["metric"].isin(claim_metrics(claim))]
    data = prepare(rows, policy.outlier_threshold)
    strata_of = factor_columns(data)
    for comparison in claim.comparisons:
        yield from _groups(data, comparison, policy, strata_of)


def family_sizes(claim: Claim, groups: list[Group]) -> dict[tuple[str, tuple[str, ...]], int]:
    """Members of each family that could be tested in the same runs (rows of both sides exist).

    A comparison whose conditions were never run on a target is not a hypothesis tested
    there; one that ran but gives no p-value still counts (see `analyze`).
    """
    sizes: dict[tuple[str, str], int] = {}
    for group in groups:
        if not group.reason:
            sizes[group.family_key] = sizes.get(group.family_key, 0) + 1
    return sizes


def _groups(data: pd.DataFrame, comparison: Comparison, policy: Policy, factors: list[str]):
    experiment = data[data["experiment"] == comparison.experiment]
    if experiment.empty:
        return [Group(comparison, reason=f"no rows of experiment {comparison.experiment}")]
    rows = experiment[(experiment["workload"] == comparison.workload)
                      & (experiment["metric"] == comparison.metric)]
    if rows.empty:
        return [Group(comparison, reason=f"no {metric_words(comparison.metric)} measured with "
                                         f"{workload_words(comparison.workload)} (present: "
                                         f"{_present(experiment, ['workload', 'metric'])})")]
    sides = []
    for condition in (comparison.baseline, comparison.treatment):
        absent = [factor for factor in condition.factors if factor not in rows.columns]
        if absent:
            return [Group(comparison, reason=f"factor {', '.join(absent)} absent from the results")]
        mask = np.ones(len(rows), dtype=bool)
        for factor, level in condition.levels:
            mask &= (rows[factor].astype(str) == level).to_numpy()
        sides.append(rows[mask])
    empty = [level_words(condition.label) for condition, side in       # said in a report's notes
             zip((comparison.baseline, comparison.treatment), sides) if side.empty]
    if empty:
        return [Group(comparison, reason=f"no rows for {' or '.join(empty)} (present: "
                                         f"{_present(rows, comparison.baseline.factors)})")]
    base, treat = sides
    targets = set(base["target"]) | set(treat["target"])
    shared = sorted(set(base["target"]) & set(treat["target"]))
    strata = [f for f in factors if f not in comparison.baseline.factors]
    if not shared:   # levels that pick their own target (C3's 5.7 and 8.0 servers)
        return [_group(comparison, "+".join(sorted(targets)), base, treat, policy, [], strata)]
    unused = sorted(targets - set(shared))
    notes = [f"rows of {', '.join(unused)} hold one side only: not used"] if unused else []
    return [_group(comparison, target, base[base["target"] == target],
                   treat[treat["target"] == target], policy, notes, strata)
            for target in shared]


def _present(rows: pd.DataFrame, columns) -> str:
    say = {"workload": workload_words, "metric": metric_words}

    def levels(column) -> str:
        values = sorted(rows[column].dropna().astype(str).unique())
        return ", ".join(say[column](v) if column in say else level_words(f"{column}={v}") for v in values)
    return " and ".join(f"{column} {levels(column)}" for column in columns)   # one clause of a note


def _group(comparison, target, base, treat, policy: Policy, notes, strata) -> Group:
    """Apply the exclusion policy to one comparison's rows on one target, and pair them in blocks."""
    both = pd.concat([base, treat])

    def listed(mask, what: str) -> str:
        # the first few by name; a note that named all of a C2 run's 117 kept outliers ran to pages
        labels = both.loc[mask].sort_values(["run_id", "seq", "iteration"])["_label"].tolist()
        more = f" and {len(labels) - NOTE_LISTS} more" if len(labels) > NOTE_LISTS else ""
        if len(labels) == 1:   # "1 outlier flagged", not "1 outliers"
            what = re.sub(r"^(\w+ )?(row|outlier)s", r"\1\2", what)
        return f"{len(labels)} {what}: {', '.join(labels[:NOTE_LISTS])}{more}" if labels else ""

    usable = both["_usable"]
    busy = both["contention"] & usable
    slow = pd.Series(slow_mask(both["slow"].astype("boolean")), index=both.index)
    notes = list(notes) + [
        listed(~usable, "rows without a positive value excluded"),
        listed(both["_outlier"], f"outliers flagged ({outlier_rule(policy.outlier_threshold)}), "
                                 + ("excluded" if policy.exclude_outliers else "kept")),
        f"contention rows included ({int(busy.sum())} of {int(usable.sum())})"
        if policy.include_contention else listed(busy, "contention rows excluded")
        or "contention rows excluded (none present)",
        witness_note(both["slow"].astype("boolean"), policy.normal_only),
    ]
    keep = usable & ~(both["_outlier"] & policy.exclude_outliers)
    keep &= policy.include_contention | ~both["contention"]
    keep &= ~(slow & policy.normal_only)
    kept = both[keep]
    kept_base, kept_treat = kept[kept.index.isin(base.index)], kept[kept.index.isin(treat.index)]
    share = flagged_share(both.loc[usable, "slow"].astype("boolean"))
    if kept_base.empty or kept_treat.empty:
        # what emptied the side first, in a clause of its own (`claimlab analyze` prints it alone)
        emptied = [f"{int(mask.sum())} {what}" for mask, what, applied in (
            (~usable, "without a positive value", True), (both["_outlier"], "outliers", policy.exclude_outliers),
            (busy, "under contention", not policy.include_contention),
            (slow & usable, "in the slow state", policy.normal_only)) if applied and mask.any()]
        return Group(comparison, target, flagged_share=share, notes=tuple(filter(None, notes)),
                     reason=f"every row of one side excluded ({', '.join(emptied)}); "
                            + "; ".join(filter(None, notes)))
    fast = None if comparison.statistic == "mean" else tuple(
        side_fast_state(side, strata, comparison.statistic) for side in (kept_base, kept_treat))
    blocks = block_log_ratios(kept_base, kept_treat, strata, comparison.statistic, fast)
    base_blocks, treat_blocks = _block_sets(kept_base, kept_treat)
    one_sided = len(base_blocks ^ treat_blocks)
    if one_sided:
        notes.append(f"{one_sided} block(s) with one side only left out")
    fast_share, side = math.nan, None
    if comparison.statistic != "mean":
        fast_share = float(pd.concat(fast).mean())
        outside = int(blocks["outside_band"].sum())
        lost = len(base_blocks & treat_blocks) - len(blocks)
        notes.append(f"{outside} value(s) outside the fast state ({FAST_BAND:.0%} of their start's fastest, "
                     f"in starts within {FAST_BAND:.0%} of the run's fast level) "
                     "left out" + (f"; {lost} block(s) with no fast-state value on one side left out"
                                   if lost else ""))
        notes.append(slow_hour_note(fast_share))
        side = side_state(*block_differences(kept_base, kept_treat, fast, strata, comparison.statistic))
        notes.append(side_state_note(side))
    unmatched = int(blocks["unmatched"].sum())
    if unmatched:
        notes.append(f"{unmatched} round(s) with one side missing or excluded left out of the pairing")
    # The servers of the blocks that pair: a run holding one side only (MariaDB's `defaults` in a
    # comparison of MySQL versions) is left out above and is not named either.
    paired = base_blocks & treat_blocks
    in_pairs = pd.Series(list(zip(*(kept[key].tolist() for key in BLOCK_KEYS))), index=kept.index).isin(paired)
    return Group(comparison, target, blocks=blocks,
                 server_versions=tuple(sorted(kept.loc[in_pairs, "server_version"].astype(str).unique())),
                 n_obs=(len(kept_base), len(kept_treat)), flagged_share=share, fast_share=fast_share, side=side,
                 notes=tuple(note for note in notes if note))


def _block_sets(base: pd.DataFrame, treat: pd.DataFrame) -> tuple[set, set]:
    """The blocks (BLOCK_KEYS) each side has rows in."""
    return tuple(set(zip(*(side[key].tolist() for key in BLOCK_KEYS))) for side in (base, treat))
