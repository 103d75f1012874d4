"""Multiplicity and power for the paired t on block log ratios (see `intervals`).

- Holm's step-down adjustment within a claim's declared family (Holm, Scand. J. Statist.
  1979): family-wise control, since each comparison is a verdict on its own. scipy offers only
  false-discovery-rate control.
- Power of the paired t from the noncentral t (e.g. Julious, "Sample sizes for clinical trials",
  2010, ch. 3): the minimal detectable effect at this run's block count and the blocks needed
  to detect the published ratio, or to show equivalence within the margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize
from scipy import stats as sps

POWER = 0.8
NEEDED_LIMIT = 10_000


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values. A NaN is refused: the caller decides what it means
    (analyze counts a member without a p-value as p = 1, and says so in every row)."""
    p = np.asarray(pvalues, dtype=float)
    if not np.all(np.isfinite(p)):
        raise ValueError("Holm's adjustment needs a p-value for every member of the family")
    order = np.argsort(p, kind="stable")
    m = len(p)
    steps = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(steps, 1.0)
    return adjusted


def paired_power(log_ratio: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t (n block log ratios with spread sd) for a true log ratio."""
    if n < 2:
        return math.nan
    if sd == 0:
        return 1.0 if log_ratio else alpha
    df = n - 1
    critical = sps.t.isf(alpha / 2, df)
    shift = abs(log_ratio) / (sd / math.sqrt(n))
    # wrong side P(T < -c) written as P(T' > c) with the shift negated: scipy's nct.cdf gives
    # NaN deep in the far tail (scipy 1.17, df 1 or 5, shift 10), its sf does not
    power = float(sps.nct.sf(critical, df, shift) + sps.nct.sf(critical, df, -shift))
    if not math.isfinite(power):
        raise FloatingPointError(f"noncentral t gave no power for df {df}, shift {shift:g}")
    return power


def minimal_detectable_effect(sd: float, n: int, alpha: float, power: float = POWER) -> float:
    """Smallest relative change (ratio - 1) that n blocks detect with the given power."""
    if n < 2:
        return math.nan
    if sd == 0:
        return 0.0
    se = sd / math.sqrt(n)
    high = se * (sps.t.isf(alpha / 2, 1) + 10)
    return math.expm1(optimize.brentq(lambda d: paired_power(d, sd, n, alpha) - power, 0.0, high))


def blocks_needed(log_ratio: float, sd: float, alpha: float, power: float = POWER) -> float:
    """Blocks for the paired t to detect `log_ratio` (NaN beyond NEEDED_LIMIT)."""
    return _smallest_n(lambda n: paired_power(log_ratio, sd, n, alpha) >= power)


def blocks_for_margin(sd: float, margin: float, alpha: float, power: float = POWER) -> float:
    """Blocks for the interval of a true ratio 1 to fall within 1 +/- margin with this power.

    The interval's far end |mean| + t * se stays inside log(1 - margin)..log(1 + margin) with the
    given probability when se <= L / (t + z_{(1+power)/2}) (normal approximation for the mean).
    """
    bound = min(math.log1p(margin), -math.log1p(-margin))

    def enough(n: int) -> bool:
        return sd / math.sqrt(n) * (sps.t.isf(alpha / 2, n - 1) + sps.norm.ppf((1 + power) / 2)) <= bound

    return _smallest_n(enough)


def _smallest_n(enough) -> float:
    """Smallest n >= 2 with enough(n) for a monotone predicate, by doubling then bisection."""
    high = 2
    while not enough(high):
        if high >= NEEDED_LIMIT:
            return math.nan
        high *= 2
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return float(max(high, 2))
