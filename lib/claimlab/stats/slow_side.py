"""A slow state on one side that the fast-state band keeps: found, flagged, and its bias bounded.

The fast-state statistic (`observations.fast_state`) keeps each side's values within FAST_BAND
(15%) of their server start's fastest. A slow state milder than that, x1.1 say, stays inside the
band; when it hits one side more often than the other (40% of the treatment's values, 10% of the
baseline's), the ratio of the two fast-state means moves by up to (0.4 - 0.1) log 1.1, about 3%:
simulated (10 blocks x 15 rounds, within-start spread 2%), about 2%, and the interval covered
the truth in about a fifth of runs (docs/method.md, "A slow state on one side").

What shows it: such a state lifts a side's fast-state mean above its fastest values. Per block
(server start) and side, the lift is the mean of its fast-state logs less their minimum; both
sides' lifts are read over the same number of values k (the first k of each side's fast-state
values in round order, k the smaller side's count), so the minimum is as extreme on both and,
when both sides' values have the same shape whatever their level, the two lifts have the same
expectation. Their difference per block, treatment less baseline, then estimates the bias the
one-sided state puts into the block's log ratio (the minimum stays in the fast state on both
sides while under half a side's values are slowed), and the blocks are independent: a paired t
over blocks tests "no difference" (the same test as the ratio's, `intervals.log_ratio`), and
its upper 95% confidence limit of |mean difference| bounds the bias (in logs; a rate, "near_max",
reads with the sign turned).

The lift misses a state that the band half keeps: at a within-start spread of 5% the band cuts
through the slowed values, and what shows is that the side that met the state more often has
fewer values in the fast state. So the blocks' differences of fast-state shares are tested too,
by the same paired t, and either test flags the comparison at half of SIDE_ALPHA (Bonferroni):
with no such state the flag comes up in about 5% of comparisons. The test is of the shape, not
of a mechanism: a side with its own, wider jitter inside the band is flagged too, and rightly,
since the statistic's mean then sits differently above the fastest values on the two sides.

Reference for the reading of the fastest values: Chen & Revels, "Robust benchmarking in noisy
environments", arXiv:1608.04295, 2016 (timing noise only ever adds time, so the minimum is the
least disturbed value and what lies above it measures the disturbance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy

SIDE_ALPHA = 0.05   # a one-sided state is reported when the sides differ at this level (either test)


@dataclass(frozen=True)
class SideState:
    """The two sides compared over blocks: `shift` the mean lift difference (log ratio units:
    what the one-sided state adds to the estimate, treatment's lift less baseline's), `share` the
    mean difference of the fast-state shares (treatment less baseline), `p` the smaller of the
    two paired t p-values times two (Bonferroni), `bound` the upper 95% confidence limit of
    |shift|, `blocks` the blocks compared. Arrays over simulated runs, or 0-d."""

    shift: np.ndarray
    share: np.ndarray
    p: np.ndarray
    bound: np.ndarray
    blocks: np.ndarray

    @property
    def flagged(self) -> np.ndarray:
        return self.p < SIDE_ALPHA


def side_state(lifts: np.ndarray, shares: np.ndarray) -> SideState:
    """Tests and bound from per-block lift differences and fast-share differences, each shaped
    (..., blocks), NaN where a block has none; fewer than two blocks give NaN."""
    (shift, p_lift, bound, n), (share, p_share, _, _) = (_paired_t(d) for d in (lifts, shares))
    with np.errstate(invalid="ignore"):
        p = np.minimum(1.0, 2 * np.fmin(p_lift, p_share))
    return SideState(shift, share, p, bound, n)


def _paired_t(differences: np.ndarray):
    """Mean, two-sided p-value of mean 0, upper 95% limit of |mean|, and count, over the last axis."""
    d = np.asarray(differences, dtype=float)
    present = np.isfinite(d)
    n = present.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(present, d, 0.0).sum(-1) / n
        se = np.sqrt(np.where(present, (d - mean[..., None]) ** 2, 0.0).sum(-1) / (n - 1) / n)
        df = np.where(n >= 2, n - 1, np.nan)
        t = np.where(se > 0, np.abs(mean) / se, np.where(mean == 0, 0.0, np.inf))
        return mean, 2 * scipy.stats.t.sf(t, df), np.abs(mean) + scipy.stats.t.isf(0.025, df) * se, n


def share_differences(measured_base: np.ndarray, measured_treat: np.ndarray, fast_base: np.ndarray,
                      fast_treat: np.ndarray) -> np.ndarray:
    """Per block, treatment's share of its measured values in the fast state less baseline's,
    over arrays shaped (..., rounds); NaN where a side has none measured."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((fast_treat & measured_treat).sum(-1) / measured_treat.sum(-1)
                - (fast_base & measured_base).sum(-1) / measured_base.sum(-1))


def lift_differences(keyed_base: np.ndarray, keyed_treat: np.ndarray, fast_base: np.ndarray,
                     fast_treat: np.ndarray) -> np.ndarray:
    """Per block, treatment's lift less baseline's, over arrays shaped (..., rounds) of keyed
    logs (smaller is faster) in round order with each value's fast-state flag; NaN where either
    side has fewer than two fast-state values."""
    k = np.minimum(fast_base.sum(-1), fast_treat.sum(-1))
    lifts = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for keyed, fast in ((keyed_base, fast_base), (keyed_treat, fast_treat)):
            first = fast & (np.cumsum(fast, axis=-1) <= k[..., None])     # its first k fast-state values
            lifts.append(np.where(first, keyed, 0.0).sum(-1) / k - np.where(first, keyed, np.inf).min(-1))
        return np.where(k >= 2, lifts[1] - lifts[0], np.nan)


def block_differences(base: pd.DataFrame, treat: pd.DataFrame, fast: tuple[pd.Series, pd.Series],
                      strata: list[str], statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """`lift_differences` and `share_differences` of one comparison's rows (results columns,
    `_log` or `value`), per block (run, repetition; strata are paired level by level within it
    and averaged, as the block's log ratio averages them), in the order of the blocks; `fast`
    each side's fast-state flags. Values are in round order within a server start (seq,
    attempt, iteration)."""
    keys = ["run_id", "repetition", *strata]
    grouped = []
    for side, keep in zip((base, treat), fast):
        logs = side["_log"] if "_log" in side else np.log(side["value"].astype(float))
        keyed = (logs if statistic == "near_min" else -logs).to_numpy(dtype=float)
        rows = side[keys + ["seq", "attempt", "iteration"]].assign(_keyed=keyed, _fast=keep.to_numpy(dtype=bool))
        grouped.append(dict(tuple(rows.sort_values(["seq", "attempt", "iteration"]).groupby(keys, sort=True))))
    found = []
    for key in sorted(set(grouped[0]) & set(grouped[1])):
        parts = [grouped[side][key] for side in (0, 1)]
        width = max(len(part) for part in parts)
        keyed = [np.pad(part["_keyed"].to_numpy(), (0, width - len(part)), constant_values=np.inf) for part in parts]
        flags = [np.pad(part["_fast"].to_numpy(), (0, width - len(part))) for part in parts]
        measured = [np.arange(width) < len(part) for part in parts]
        found.append((*key[:2], float(lift_differences(*keyed, *flags)),
                      float(share_differences(*measured, *flags))))
    frame = pd.DataFrame(found, columns=["run_id", "repetition", "lift", "share"])
    per_block = frame.groupby(["run_id", "repetition"], sort=True)[["lift", "share"]].mean()
    return per_block["lift"].to_numpy(), per_block["share"].to_numpy()


def side_state_note(state: SideState) -> str:
    """What a reader should make of the comparison of the sides ('' when they do not differ
    beyond chance)."""
    if not bool(state.flagged):
        return ""
    shift, share = float(state.shift), float(state.share)
    lifted = "treatment" if (shift > 0 if abs(shift) > 0 else share < 0) else "baseline"
    return (f"a slow state on one side: the {lifted} met a state the fast-state band keeps more often "
            f"than the other side (fast-state values {math.expm1(abs(shift)):.1%} further above their "
            f"fastest, {abs(share):.0%} {'fewer' if (share < 0) == (lifted == 'treatment') else 'more'} values "
            f"in the fast state, paired t over {int(state.blocks)} blocks, p = {float(state.p):.2g}): the "
            f"estimate may be biased by up to {math.expm1(float(state.bound)):.1%} (upper 95% limit)")
