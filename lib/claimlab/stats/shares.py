"""How much of a gap one mechanism explains, with its interval.

C3's question after C4's: of the 5.7 -> 8.0 gap in the insert loop, how much is the binary log?
With times T57, T80 and T80' (8.0 with skip-log-bin) measured side by side in every block, the
binlog's share of the gap on the log scale is

    share = log(T80 / T80') / log(T80 / T57),

1 when the binlog is the whole gap, 0 when it is none of it, above 1 when 8.0 without it is
faster than 5.7. It is a ratio of two means of paired per-block differences, so its interval is
Fieller's: the set of shares rho for which the paired t test of part - rho * gap does not reject
a zero mean (E. C. Fieller, "Some problems in interval estimation", Journal of the Royal
Statistical Society B 16(2), 175-185, 1954; V. H. Franz, "Ratios: a short guide to confidence
limits and proper use", arXiv:0710.2024, 2007). A delta-method interval would be symmetric and
wrong exactly where it matters, when the gap itself is small against its noise; Fieller's set is
then unbounded, and the answer is "this run cannot say", not a number.

An ablation's steps are not paired by block with the gap (each configuration is its own server
start), so their shares get a bootstrap interval instead (`share_interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy

from ..errors import DataError
from .intervals import Interval, Sample, hierarchical_draws, log_ratio
from .observations import as_matrix, block_log_ratios, factor_columns

BLOCK = ["run_id", "repetition"]
VERDICT_WORDS = {"supported": "the whole interval lies above {edge:.0%}",
                 "contradicted": "the whole interval lies below {edge:.0%}",
                 "inconclusive": "the interval reaches across {edge:.0%}",
                 "unbounded": "the interval is unbounded: this run cannot tell the gap from none"}


@dataclass(frozen=True)
class Share:
    """A ratio of two paired means with Fieller's interval. `bounded` False: the denominator's
    own interval contains zero, so the set is unbounded (low/high are -inf/inf)."""

    estimate: float
    low: float
    high: float
    bounded: bool
    n_blocks: int
    confidence: float


def fieller_ratio(numerator, denominator, confidence: float = 0.95) -> Share:
    """mean(numerator) / mean(denominator) of paired values (one pair per block), and Fieller's
    interval with a t quantile on n - 1 degrees of freedom."""
    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("numerator and denominator must be paired 1-d arrays of equal length")
    n = len(a)
    if n < 2:
        raise ValueError(f"Fieller's interval needs at least 2 blocks, got {n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    ma, mb = a.mean(), b.mean()
    cov = np.cov(a, b, ddof=1) / n                 # covariance matrix of the two means
    t = scipy.stats.t.ppf(0.5 + confidence / 2, n - 1)
    quad = mb * mb - t * t * cov[1, 1]
    lin = ma * mb - t * t * cov[0, 1]
    const = ma * ma - t * t * cov[0, 0]
    estimate = ma / mb if mb != 0 else math.nan
    if quad <= 0:
        return Share(estimate, -math.inf, math.inf, False, n, confidence)
    root = math.sqrt(max(lin * lin - quad * const, 0.0))
    return Share(estimate, (lin - root) / quad, (lin + root) / quad, True, n, confidence)


def share_of_gap(gap: pd.DataFrame, part: pd.DataFrame, confidence: float = 0.95) -> Share:
    """The share of a gap one mechanism explains, from two `block_log_ratios` tables of the same
    run: `gap` log(T_slow / T_fast) per block (8.0 over 5.7) and `part` log(T_slow / T_without)
    (8.0 over 8.0 without the mechanism). Blocks missing from either are left out."""
    both = gap[BLOCK + ["log_ratio"]].merge(part[BLOCK + ["log_ratio"]], on=BLOCK, suffixes=("_gap", "_part"))
    return fieller_ratio(both["log_ratio_part"].to_numpy(), both["log_ratio_gap"].to_numpy(), confidence)


@dataclass(frozen=True)
class GapShare:
    """A mechanism's share of a gap between two levels of one factor, and the two ratios it is
    made of (geometric-mean ratios over the blocks both hold, paired t intervals)."""

    share: Share
    gap: Interval     # slow / fast
    part: Interval    # slow / without


def level_share(results: pd.DataFrame, factor: str, slow: str, fast: str, without: str, *, workload: str,
                metric: str, confidence: float = 0.95) -> GapShare:
    """The share of the gap between levels `slow` and `fast` that level `without` (`slow` with
    one mechanism removed) closes: log(T_slow / T_without) / log(T_slow / T_fast), C3's binlog
    share when slow = 8.0.40, fast = 5.7.23 and without = 8.0.40 with skip-log-bin.

    Every block gives both log ratios as `block_log_ratios` pairs the design (round by round
    where the levels ran side by side in one unit, else the sides' geometric means), so the
    two are paired block by block and Fieller's interval (`share_of_gap`; Fieller, JRSS B 16(2),
    1954; Franz, arXiv:0710.2024, 2007) holds. The rows are
    the usable values (finite, positive) of one workload and metric; the factors the three
    levels do not set are strata, as in the verdict table. Blocks of several runs are pooled:
    pass one run's rows for one run's share."""
    rows = results[(results["workload"] == workload) & (results["metric"] == metric)]
    value = pd.to_numeric(rows["value"], errors="coerce")
    rows = rows[np.isfinite(value) & (value > 0)].assign(value=value)
    strata = [c for c in factor_columns(rows) if c != factor]
    sides = {}
    for level in (slow, fast, without):
        sides[level] = rows[rows[factor].astype(str) == level] if factor in rows else rows.iloc[:0]
        if sides[level].empty:
            raise DataError(f"no usable {workload} {metric} values of {factor}={level}")
    gap = block_log_ratios(sides[fast], sides[slow], strata)
    part = block_log_ratios(sides[without], sides[slow], strata)
    both = gap[BLOCK].merge(part[BLOCK], on=BLOCK)
    if len(both) < 2:
        raise DataError(f"{factor}={slow}, {fast} and {without} share {len(both)} block(s) of {workload} "
                        f"{metric}: a share needs two or more")
    return GapShare(share_of_gap(gap, part, confidence), _ratio(gap.merge(both, on=BLOCK), confidence),
                    _ratio(part.merge(both, on=BLOCK), confidence))


def _ratio(blocks: pd.DataFrame, confidence: float) -> Interval:
    """The blocks' geometric-mean ratio with the verdict table's t interval (runs as the top level)."""
    summary = log_ratio(as_matrix(blocks))
    low, high = summary.interval(1 - confidence)
    return Interval(float(np.exp(summary.mean)), float(low), float(high), "paired t over blocks")


def share_verdict(share: Share, edge: float = 0.5) -> tuple[str, str]:
    """Whether a mechanism explains more than `edge` of a gap ("most of it": 0.5), and why:
    supported when the whole interval lies above the edge, contradicted when it lies below,
    inconclusive when it reaches across (or is unbounded: the run cannot tell the gap from 0).
    The same monotone shape as the ratio verdicts (`verdicts`): narrowing an interval never
    turns one decision into the other."""
    if not share.bounded:
        return "inconclusive", VERDICT_WORDS["unbounded"]
    word = "supported" if share.low > edge else "contradicted" if share.high < edge else "inconclusive"
    return word, VERDICT_WORDS[word].format(edge=edge)


@dataclass(frozen=True)
class ShareInterval(Interval):
    """A share's interval, with the number of bootstrap resamples that had no finite share
    (resampled slow and fast means equal: no gap to share): the percentiles are of the others."""

    nonfinite: int = 0
    n_boot: int = 0

    def __post_init__(self):
        if not 0 <= self.nonfinite <= self.n_boot:
            raise ValueError(f"nonfinite: {self.nonfinite} is not a count of the {self.n_boot} resamples")


def expanded_tail(confidence: float, n: int) -> float:
    """The lower percentile of Hesterberg's expanded percentile interval at `n` top-level units
    (see share_interval): alpha/2 for large n, smaller for few."""
    t = scipy.stats.t.isf((1 - confidence) / 2, n - 1)
    return float(scipy.stats.norm.cdf(-math.sqrt(n / (n - 1)) * t))


def share_interval(slow: Sample, before: Sample, after: Sample, fast: Sample, *,
                   confidence: float = 0.95, n_boot: int = 2000,
                   rng: np.random.Generator) -> ShareInterval:
    """Share of the slow-to-fast gap taken by going from `before` to `after`:
    log(after / before) / log(fast / slow), with a percentile bootstrap interval (Efron &
    Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13) over hierarchical resamples
    (restarts, then iterations within them: Kalibera & Jones 2013), drawn once per distinct
    sample so that a sample appearing twice (before is slow) cancels as it should.

    The percentiles are expanded for the few restarts an ablation has (Hesterberg, "What Teachers
    Should Know About the Bootstrap", The American Statistician 69(4), 2015, sec. 4.4): a plain
    percentile interval is as narrow as a z interval with the n-divisor variance, and covered
    82-91% at a nominal 95% with 3-6 restarts here (simulated: tests/unit/test_ablation_plan.py); the tail
    taken is Phi(-sqrt(n/(n-1)) t_{n-1}) at the fewest restarts of the four samples.

    Resamples without a finite share are counted in `nonfinite` and said in `note`, never
    dropped silently; a share with no finite estimate or resample at all is a DataError."""
    draws: dict[int, np.ndarray] = {}
    for sample in (slow, before, after, fast):
        if sample.n_repetitions < 2:
            raise ValueError("a share interval needs two or more repetitions per configuration")
        if id(sample) not in draws:
            draws[id(sample)] = np.log(hierarchical_draws(sample, "mean", n_boot, rng))

    def share(s, b, a, f):
        return (a - b) / (f - s)

    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = share(*(np.log(x.statistic("mean")) for x in (slow, before, after, fast)))
        boot = share(draws[id(slow)], draws[id(before)], draws[id(after)], draws[id(fast)])
    finite = np.isfinite(boot)
    if not (np.isfinite(estimate) and finite.any()):
        raise DataError("a share of the gap is undefined: the slow and fast means are equal "
                        "(in the data, or in every bootstrap resample)")
    nonfinite = int(n_boot - finite.sum())
    tail = expanded_tail(confidence, min(x.n_repetitions for x in (slow, before, after, fast)))
    low, high = np.quantile(boot[finite], (tail, 1 - tail))
    note = f"{nonfinite} of {n_boot} bootstrap resamples had no finite share" if nonfinite else ""
    return ShareInterval(float(estimate), float(low), float(high), "expanded percentile, hierarchical", note,
                         nonfinite, n_boot)
