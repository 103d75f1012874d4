"""Multiplicity and power for the paired t on block log ratios (see `intervals`).

- Holm's step-down adjustment within a claim's declared family (Holm, Scand. J. Statist.
  1979): family-wise control, since each comparison is a verdict on its own. scipy offers only
  false-discovery-rate control.
- Power of the paired t from the noncentral t (e.g. Julious, "Sample sizes for clinical trials",
  2010, ch. 3): the minimal detectable effect at this run's block count and the blocks needed
  to detect the published ratio, or to show equivalence within the margin.
- The chance that another run of the same design reads the same (`label_chances`,
  `agreement_chance`, `blocks_for_agreement`): what "do two runs agree?" asks of a
  comparison whose ratio lies near a decision edge.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import scipy

from .verdicts import Labeller

POWER = 0.8
NEEDED_LIMIT = 10_000
AGREEMENT_DRAWS = 4000
AGREEMENT_SEED = 20261125


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
    critical = scipy.stats.t.isf(alpha / 2, df)
    shift = abs(log_ratio) / (sd / math.sqrt(n))
    # wrong side P(T < -c) written as P(T' > c) with the shift negated: scipy's nct.cdf gives
    # NaN deep in the far tail (scipy 1.17, df 1 or 5, shift 10), its sf does not
    power = float(scipy.stats.nct.sf(critical, df, shift) + scipy.stats.nct.sf(critical, df, -shift))
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
    # Power rises to 1 with the shift: widen the bracket until it holds the target. A fixed one
    # (t_{alpha/2, 1} + 10 standard errors) fell short at 2 blocks below alpha = 0.018 (a family
    # of four at 2 blocks), where brentq then raised instead of answering.
    high = se * (scipy.stats.t.isf(alpha / 2, n - 1) + 10)
    while paired_power(high, sd, n, alpha) < power:
        high *= 2
    return math.expm1(scipy.optimize.brentq(lambda d: paired_power(d, sd, n, alpha) - power, 0.0, high))


def blocks_needed(log_ratio: float, sd: float, alpha: float, power: float = POWER) -> float:
    """Blocks for the paired t to detect `log_ratio` (NaN beyond NEEDED_LIMIT)."""
    return _smallest_n(lambda n: paired_power(log_ratio, sd, n, alpha) >= power)


def blocks_for_margin(sd: float, margin: float, alpha: float, power: float = POWER) -> float:
    """Blocks for the interval of a true ratio 1 to fall within the band [1 / (1 + margin),
    1 + margin] (`verdicts.equivalence_band`) with this power.

    The interval's far end |mean| + t * se stays inside +-L = +-log(1 + margin) with the given
    probability when se <= L / (t + z_{(1+power)/2}) (normal approximation for the mean).
    """
    bound = math.log1p(margin)

    def enough(n: int) -> bool:
        z = scipy.stats.t.isf(alpha / 2, n - 1) + scipy.stats.norm.ppf((1 + power) / 2)
        return sd / math.sqrt(n) * z <= bound

    return _smallest_n(enough)


def label_chances(decide: Labeller, log_ratio: float, sd: float, n: int,
                  confidence: float, between: float = 0.0, draws: int = AGREEMENT_DRAWS,
                  seed: int = AGREEMENT_SEED) -> dict[str, float]:
    """The chance of each label a run of n blocks gives, from the rule `decide` (`verdicts.labeller`).

    The paired t's own model (see `intervals`): the run's mean log ratio is normal about
    `log_ratio` with variance sd^2 / n + between^2 (`between`: the spread of run means that
    blocks do not average away), its block spread s^2 is sd^2 chi2(n - 1) / (n - 1),
    independent of the mean, and its interval mean +/- t s / sqrt(n). The draws come from a
    fixed seed and are the same for every n (common random numbers), so the chances are
    reproducible and change smoothly with n.
    """
    if n < 2:
        raise ValueError("a run needs at least 2 blocks for an interval")
    rng = np.random.default_rng(seed)
    z, u = rng.standard_normal(draws), rng.random(draws)
    df = n - 1
    mean = log_ratio + z * math.sqrt(sd ** 2 / n + between ** 2)
    half = scipy.stats.t.isf((1 - confidence) / 2, df) * sd * np.sqrt(scipy.stats.chi2.ppf(u, df) / df) / math.sqrt(n)
    counts = Counter(decide.labels(np.exp(mean - half), np.exp(mean + half)).tolist())
    return {label: count / draws for label, count in counts.most_common()}


def agreement_chance(chances: dict[str, float]) -> float:
    """The chance that two independent runs give the same label: the sum of its squares
    (Goodman, "A comment on replication, p-values and evidence", Statistics in Medicine 1992,
    asked the same of a p-value)."""
    return float(sum(p * p for p in chances.values()))


def blocks_for_agreement(decide: Labeller, log_ratio: float, sd: float,
                         confidence: float, start: int, between: float = 0.0,
                         goal: float = 0.95) -> float:
    """Fewest blocks from `start` (the design's own count) on at which two runs agree with at
    least `goal` chance (NaN beyond NEEDED_LIMIT: a ratio on an edge, or a `between` that blocks
    cannot average away).

    Why from the design's count: agreement is not monotone in n. Runs too small to decide
    anything agree too, on "inconclusive"; the chance dips where runs start deciding and then
    climbs as the interval clears the nearest edge, which the doubling and bisection assume."""
    return _smallest_n(lambda n: agreement_chance(
        label_chances(decide, log_ratio, sd, n, confidence, between)) >= goal, start)


def _smallest_n(enough, start: int = 2) -> float:
    """Smallest n >= start with enough(n), for a predicate monotone from start on, by doubling
    then bisection."""
    low, high = start - 1, start
    while not enough(high):
        if high >= NEEDED_LIMIT:
            return math.nan
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return float(high)
