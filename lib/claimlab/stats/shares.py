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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

BLOCK = ["run_id", "repetition"]


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
    t = sps.t.ppf(0.5 + confidence / 2, n - 1)
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
