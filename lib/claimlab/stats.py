"""Effects, intervals, tests, power, verdicts, diagnostics and sequential stopping for claimlab.

Pure functions of the runner's tidy results table (one row per measurement, see
`REQUIRED_COLUMNS`): no I/O, no plotting. The design they assume is the runner's: conditions
interleaved in randomized complete blocks, where block b is repetition b (a freshly started
server) of every condition, and each repetition holds several measured iterations.

Why the pieces are as they are:

- The unit of replication is the repetition. Kalibera & Jones ("Rigorous Benchmarking in
  Reasonable Time", ISMM 2013) show that the level a process settles at carries most of the
  variance; iterations within one start are not independent evidence. So tests run on
  repetition means, and intervals resample restarts and then iterations within them.
- Intervals are bootstrap intervals of the ratio treatment / baseline, BCa (Efron, "Better
  bootstrap confidence intervals", JASA 1987) where stable, percentile otherwise, with quantile
  levels calibrated to Welch-t width as in Hesterberg's expanded percentile interval ("What
  teachers should know about the bootstrap", The American Statistician 2015), extended to two
  resampling stages. Below four restarts per side, too few to resample, a Welch t interval on
  log repetition means. The method used is always reported.
- Tests: Welch's t on log repetition means (ratios are symmetric in log space), Mann-Whitney U;
  effect sizes Hodges-Lehmann (Hodges & Lehmann, Ann. Math. Stat. 1963) and Cliff's delta
  (Cliff, Psychological Bulletin 1993); Holm's step-down correction within a claim (Holm,
  Scand. J. Statist. 1979).
- Sequential stopping: a group-sequential design with Lan-DeMets O'Brien-Fleming alpha
  spending (Lan & DeMets, Biometrika 1983; O'Brien & Fleming, Biometrics 1979) and repeated
  confidence intervals (Jennison & Turnbull, JRSS B 1989), so the runner may look after every
  block and still keep the error rate it promises.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as sps

from claimlab.claims import Claim, Comparison
from claimlab.errors import DataError
from claimlab.stopping import StopRule

REQUIRED_COLUMNS = (
    "run_id",
    "claim",
    "experiment",
    "condition",
    "target",
    "server_version",
    "workload",
    "repetition",
    "iteration",
    "seq",
    "metric",
    "value",
    "unit",
    "contention",
)
VERDICTS = ("supported", "contradicted", "inconclusive", "not_tested")
POWER = 0.8
SMALL_EFFECT = 0.05
BCA_MIN_REPETITIONS = 5
BOOTSTRAP_MIN_UNITS = 4
OUTLIER_Z = 3.5
DRIFT_FLAG_P = 0.01
NEEDED_LIMIT = 10_000
_CONDITION_KEYS = ("run_id", "experiment", "target", "workload", "metric", "condition")

# The table `analyze` returns, one row per comparison (and target). n_reps_*: server
# processes (a repetition whose server was restarted after a crash counts once per process);
# n_obs_*: measurements. Ratios are treatment / baseline; ratio_mean: of means of repetition
# means; ratio_median: of medians of all values; *_lo/*_hi: bounds at `confidence`;
# ci_method: "bca", "percentile" or "t", then "hierarchical" or "flat". p_welch_log and
# p_mannwhitney: two-sided, on repetition means (values when flat); p_holm: Welch p after Holm
# within the claim. hodges_lehmann: as a ratio; cliffs_delta: in [-1, 1]. mde: smallest
# relative change detectable with 80% power at this run's repetitions; power_published: power
# for the published ratio; n_needed_*: repetitions per side for 80% power (for a null claim,
# n_needed_published is what shows equivalence within the margin).
TABLE_COLUMNS = (
    "claim",
    "comparison",
    "kind",
    "direction",
    "experiment",
    "workload",
    "metric",
    "baseline",
    "treatment",
    "target",
    "server_version",
    "n_reps_baseline",
    "n_reps_treatment",
    "n_obs_baseline",
    "n_obs_treatment",
    "mean_baseline",
    "mean_treatment",
    "ratio_mean",
    "ratio_mean_lo",
    "ratio_mean_hi",
    "ci_method",
    "ratio_median",
    "ratio_median_lo",
    "ratio_median_hi",
    "median_ci_method",
    "confidence",
    "p_welch_log",
    "p_mannwhitney",
    "p_holm",
    "hodges_lehmann",
    "cliffs_delta",
    "mde",
    "power_published",
    "n_needed_published",
    "n_needed_5pct",
    "published_ratio",
    "published_in_ci",
    "equivalence_margin",
    "contention",
    "verdict",
    "verdict_note",
)


# --------------------------------------------------------------------------- samples


@dataclass(frozen=True, eq=False)
class Sample:
    """One side of a comparison: measured values grouped by repetition, iterations in order."""

    repetitions: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if not self.repetitions or any(len(rep) == 0 for rep in self.repetitions):
            raise ValueError("a sample needs at least one repetition, none of them empty")
        if not np.all(np.isfinite(self.pooled) & (self.pooled > 0)):
            raise ValueError("values must be finite and positive (ratios are taken in log space)")

    @classmethod
    def of(cls, repetitions: Iterable[Iterable[float]]) -> Sample:
        return cls(tuple(np.asarray(list(rep), dtype=float) for rep in repetitions))

    @property
    def n_repetitions(self) -> int:
        return len(self.repetitions)

    @property
    def n_observations(self) -> int:
        return sum(len(rep) for rep in self.repetitions)

    @functools.cached_property
    def repetition_means(self) -> np.ndarray:
        return np.array([rep.mean() for rep in self.repetitions])

    @functools.cached_property
    def pooled(self) -> np.ndarray:
        return np.concatenate(self.repetitions)

    def units(self, design: str) -> np.ndarray:
        """What counts as one independent observation: repetition means, or every value if flat."""
        return self.repetition_means if design == "hierarchical" else self.pooled

    def statistic(self, kind: str) -> float:
        """Mean of repetition means (each restart weighs the same), or median of all values."""
        return float(self.repetition_means.mean() if kind == "mean" else np.median(self.pooled))


def design_for(baseline: Sample, treatment: Sample) -> str:
    """Hierarchical when both sides have two or more restarts; flat otherwise (said, not hidden)."""
    enough = min(baseline.n_repetitions, treatment.n_repetitions) >= 2
    return "hierarchical" if enough else "flat"


# --------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class Interval:
    """A ratio treatment / baseline with its confidence interval and how it was obtained."""

    estimate: float
    low: float
    high: float
    method: str
    note: str = ""

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def ratio_interval(
    baseline: Sample,
    treatment: Sample,
    *,
    statistic: str = "mean",
    design: str = "hierarchical",
    confidence: float = 0.95,
    n_boot: int = 2000,
    rng: np.random.Generator,
) -> Interval:
    """Confidence interval for statistic(treatment) / statistic(baseline).

    `design="hierarchical"` resamples restarts with replacement, then iterations within each
    chosen restart (Kalibera & Jones 2013, sec. 5); the quantile levels are calibrated for
    what that does to the spread (see `_calibrated_alpha`). `design="flat"` treats every value
    as independent, which is right only when there is no restart effect; it serves
    single-repetition data and shows what ignoring the hierarchy costs. The flat case is plain
    `scipy.stats.bootstrap`; scipy cannot resample nested groups, hence the hand-written
    hierarchical resampler. Means with fewer than BOOTSTRAP_MIN_UNITS units per side get a
    Welch t interval instead (see `_welch_interval`).
    """
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', not {statistic!r}")
    if design not in ("hierarchical", "flat"):
        raise ValueError(f"design must be 'hierarchical' or 'flat', not {design!r}")
    estimate = math.log(treatment.statistic(statistic) / baseline.statistic(statistic))
    units = min(len(baseline.units(design)), len(treatment.units(design)))
    if units < 2:
        unit = "repetitions" if design == "hierarchical" else "values"
        raise ValueError(f"a {design} interval needs two or more {unit} per side")
    if units < BOOTSTRAP_MIN_UNITS and statistic == "mean":
        return _welch_interval(baseline, treatment, design, confidence, estimate)
    alpha = _calibrated_alpha(1 - confidence, baseline, treatment, design)
    if design == "hierarchical":
        boot = np.log(hierarchical_draws(treatment, statistic, n_boot, rng)) - np.log(
            hierarchical_draws(baseline, statistic, n_boot, rng)
        )
        levels, why = _bca_levels_hierarchical(baseline, treatment, statistic, estimate, boot, alpha)
        bounds = None if levels is None else np.quantile(boot, levels)
    else:
        boot, bounds, why = _flat_bootstrap(baseline.pooled, treatment.pooled, statistic, alpha,
                                            n_boot, rng)
    kind = "percentile" if bounds is None else "bca"
    if bounds is None:
        bounds = np.quantile(boot, (alpha / 2, 1 - alpha / 2))
    if units < BOOTSTRAP_MIN_UNITS:
        small = f"fewer than {BOOTSTRAP_MIN_UNITS} per side: likely too narrow"
        why = "; ".join(filter(None, [why, small]))
    low, high = np.exp(bounds)
    return Interval(math.exp(estimate), float(low), float(high), f"{kind}, {design}", why)


def _welch_interval(baseline: Sample, treatment: Sample, design: str, confidence: float,
                    estimate: float) -> Interval:
    """Welch t interval around the log ratio, for samples too small to bootstrap.

    Two or three restarts per side give a bootstrap distribution with a handful of distinct
    values that cannot reach past the data: its intervals covered the true ratio 77% (two)
    and 91% (three) of the time in simulation, where this interval holds its level.
    """
    logs = [np.log(sample.units(design)) for sample in (baseline, treatment)]
    variances = [values.var(ddof=1) / len(values) for values in logs]
    se = math.sqrt(sum(variances))
    half = 0.0
    if se > 0:
        df = _welch_df(variances[0], len(logs[0]), variances[1], len(logs[1]))
        half = sps.t.isf((1 - confidence) / 2, df) * se
    return Interval(math.exp(estimate), math.exp(estimate - half), math.exp(estimate + half),
                    f"t, {design}",
                    f"t: fewer than {BOOTSTRAP_MIN_UNITS} per side are too few to bootstrap")


def hierarchical_draws(sample: Sample, statistic: str, n_boot: int, rng: np.random.Generator):
    """n_boot two-stage resamples of `sample`, vectorized: restarts, then iterations within."""
    lengths = np.array([len(rep) for rep in sample.repetitions])
    width = int(lengths.max())
    padded = np.zeros((len(lengths), width))
    for index, rep in enumerate(sample.repetitions):
        padded[index, : len(rep)] = rep
    picked = rng.integers(0, len(lengths), size=(n_boot, len(lengths)))
    picked_lengths = lengths[picked]
    within = (rng.random((n_boot, len(lengths), width)) * picked_lengths[..., None]).astype(int)
    drawn = padded[picked[..., None], within]
    valid = np.arange(width) < picked_lengths[..., None]
    if statistic == "mean":
        return (np.where(valid, drawn, 0.0).sum(axis=2) / picked_lengths).mean(axis=1)
    pooled = np.sort(np.where(valid, drawn, np.nan).reshape(n_boot, -1), axis=1)
    count = picked_lengths.sum(axis=1)
    rows = np.arange(n_boot)
    return 0.5 * (pooled[rows, (count - 1) // 2] + pooled[rows, count // 2])


def _bca_levels_hierarchical(baseline, treatment, statistic, estimate, boot, alpha):
    """BCa quantile levels with restarts as jackknife units, or None and the reason why not."""
    if statistic == "median":
        return None, "percentile: the jackknife behind BCa is unreliable for medians"
    if min(baseline.n_repetitions, treatment.n_repetitions) < BCA_MIN_REPETITIONS:
        return None, f"percentile: BCa needs {BCA_MIN_REPETITIONS}+ repetitions per side"
    log_b, log_a = math.log(treatment.statistic("mean")), math.log(baseline.statistic("mean"))
    jack_a = log_b - np.log(_leave_one_out_means(baseline.repetition_means))
    jack_b = np.log(_leave_one_out_means(treatment.repetition_means)) - log_a
    return _bca_levels(estimate, boot, (jack_a, jack_b), alpha)


def _leave_one_out_means(values: np.ndarray) -> np.ndarray:
    return (values.sum() - values) / (len(values) - 1)


def _bca_levels(estimate, boot, jackknives, alpha):
    """Efron's BCa quantile levels, or (None, reason) when BCa is not stable.

    Written here because scipy.stats.bootstrap computes BCa only over its own flat resampling;
    the acceleration follows its multi-sample formula, with restarts as jackknife units.
    Unstable means: every resample on one side of the estimate, no jackknife spread, or
    adjusted levels beyond the resampled range (DiCiccio & Efron, Statistical Science 1996).
    """
    share = (np.sum(boot < estimate) + 0.5 * np.sum(boot == estimate)) / len(boot)
    if not 0 < share < 1:
        return None, "percentile: every resample on one side of the estimate"
    z0 = sps.norm.ppf(share)
    numerator = denominator = 0.0
    for jack in jackknives:
        n = len(jack)
        influence = (n - 1) * (jack.mean() - jack)
        numerator += np.sum(influence**3) / n**3
        denominator += np.sum(influence**2) / n**2
    if denominator == 0:
        return None, "percentile: jackknife has no spread"
    accel = numerator / (6 * denominator**1.5)
    z = sps.norm.ppf([alpha / 2, 1 - alpha / 2])
    shrink = 1 - accel * (z0 + z)
    levels = sps.norm.cdf(z0 + (z0 + z) / shrink)
    edge = 1 / len(boot)
    if not (np.all(shrink > 0) and np.all(np.isfinite(levels))) or not (
        edge <= levels[0] and levels[1] <= 1 - edge
    ):
        return None, "percentile: BCa levels fall outside the resampled range"
    return (float(levels[0]), float(levels[1])), ""


def _flat_bootstrap(a, b, statistic, alpha, n_boot, rng):
    """scipy.stats.bootstrap on independent values: the resamples, BCa bounds (log) or None."""
    reduce = np.mean if statistic == "mean" else np.median

    def log_ratio(x, y, axis):
        return np.log(reduce(y, axis=axis) / reduce(x, axis=axis))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        result = sps.bootstrap(
            (a, b),
            log_ratio,
            n_resamples=n_boot,
            vectorized=True,
            confidence_level=1 - alpha,
            method="BCa" if statistic == "mean" else "percentile",
            rng=rng,
        )
    boot = result.bootstrap_distribution
    if statistic == "median":
        return boot, None, "percentile: the jackknife behind BCa is unreliable for medians"
    bounds = np.array(result.confidence_interval)
    if not np.all(np.isfinite(bounds)):
        return boot, None, "percentile: BCa undefined for these data"
    return boot, bounds, ""


def _calibrated_alpha(alpha: float, baseline: Sample, treatment: Sample, design: str) -> float:
    """The alpha whose bootstrap interval has the width of a Welch t interval.

    Two known biases of bootstrap intervals, corrected by choosing the quantile levels
    (Hesterberg's expanded percentile interval, The American Statistician 2015, generalized
    to two stages): (1) resamples spread with the plug-in variance (divisor n) and intervals
    use normal tails, so with the few restarts a benchmark affords they under-cover (about 92%
    for a nominal 95% at ten per side); (2) resampling iterations inside resampled restarts
    adds the within-restart variance a second time (Davison & Hinkley 1997, sec. 3.8), so
    they over-cover when iterations are noisy. The expected variance of the resampled
    statistic is compared with Welch's unbiased estimate, and t tails replace normal ones.
    """
    parts = [_variances(sample, design) for sample in (baseline, treatment)]
    target, resampled = sum(part[0] for part in parts), sum(part[1] for part in parts)
    if min(part[2] for part in parts) < 2 or target == 0 or resampled == 0:
        return alpha
    df = _welch_df(parts[0][0], parts[0][2], parts[1][0], parts[1][2])
    z = sps.norm.isf(alpha / 2)
    widen = sps.t.isf(alpha / 2, df) / z * math.sqrt(target / resampled)
    return float(2 * sps.norm.sf(widen * z))


def _variances(sample: Sample, design: str) -> tuple[float, float, int]:
    """Relative variance of the sample's mean: Welch's estimate, and what resampling gives.

    Under two-stage resampling a resampled restart's mean varies by its plug-in within
    variance over its size, on top of the spread between restarts; flat resampling has no
    second stage. Relative (divided by the squared mean), as the ratio is taken in log space.
    """
    units = sample.units(design)
    within = 0.0
    if design == "hierarchical":
        within = float(np.mean([rep.var() / len(rep) for rep in sample.repetitions]))
    n, mean_squared = len(units), units.mean() ** 2
    target = units.var(ddof=1) / n / mean_squared if n > 1 else 0.0
    return target, (units.var() + within) / n / mean_squared, n


def _welch_df(va: float, na: int, vb: float, nb: int) -> float:
    """Welch-Satterthwaite degrees of freedom from the variances of the two means."""
    return (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))


# --------------------------------------------------------------------------- tests and effect sizes


def welch_log_p(baseline_units: np.ndarray, treatment_units: np.ndarray) -> float:
    """Two-sided Welch t-test on log values (the ratio is symmetric in log space)."""
    if min(len(baseline_units), len(treatment_units)) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = sps.ttest_ind(np.log(treatment_units), np.log(baseline_units), equal_var=False)
    return float(result.pvalue)


def mann_whitney(baseline_units: np.ndarray, treatment_units: np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney p and Cliff's delta, which is 2U / (n_a n_b) - 1 (Cliff 1993).

    Cliff's delta is P(treatment > baseline) - P(treatment < baseline); scipy has no function
    for it, but its U statistic already counts those pairs.
    """
    result = sps.mannwhitneyu(treatment_units, baseline_units, alternative="two-sided")
    delta = 2 * result.statistic / (len(baseline_units) * len(treatment_units)) - 1
    return float(result.pvalue), float(delta)


def hodges_lehmann_ratio(baseline_units: np.ndarray, treatment_units: np.ndarray) -> float:
    """Hodges-Lehmann shift of log values, as a ratio: median of all pairwise log ratios.

    Written here because scipy has no two-sample Hodges-Lehmann estimator.
    """
    pairwise = np.log(treatment_units)[:, None] - np.log(baseline_units)[None, :]
    return float(np.exp(np.median(pairwise)))


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values; NaN stays NaN and is not counted.

    scipy only offers false-discovery-rate control (Benjamini-Hochberg/Yekutieli); the claims
    need family-wise control, since each comparison is a verdict on its own.
    """
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full_like(p, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    m = len(order)
    steps = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted[order] = np.minimum(steps, 1.0)
    return adjusted


# --------------------------------------------------------------------------- power


def welch_power(log_ratio: float, sd_a: float, n_a: int, sd_b: float, n_b: int, alpha: float) -> float:
    """Power of the two-sided Welch test on log values for a true log ratio (noncentral t)."""
    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    if va + vb == 0:
        return 1.0 if log_ratio else alpha
    df = _welch_df(va, n_a, vb, n_b)
    critical = sps.t.ppf(1 - alpha / 2, df)
    shift = abs(log_ratio) / math.sqrt(va + vb)
    # scipy's nct.cdf returns NaN deep in the far tail, where the wrong-side share is ~0
    wrong_side = float(np.nan_to_num(sps.nct.cdf(-critical, df, shift), nan=0.0))
    return float(sps.nct.sf(critical, df, shift)) + wrong_side


def minimal_detectable_effect(
    sd_a: float, n_a: int, sd_b: float, n_b: int, alpha: float, power: float = POWER
) -> float:
    """Smallest relative change (ratio - 1) the run's size detects with the given power."""
    se = math.sqrt(sd_a**2 / n_a + sd_b**2 / n_b)
    if se == 0:
        return 0.0
    high = se * (sps.t.ppf(1 - alpha / 2, 1) + 10)
    log_ratio = optimize.brentq(
        lambda d: welch_power(d, sd_a, n_a, sd_b, n_b, alpha) - power, 0.0, high
    )
    return math.expm1(log_ratio)


def repetitions_needed(
    log_ratio: float, sd: float, alpha: float, power: float = POWER
) -> float:
    """Repetitions per side for the Welch test to detect `log_ratio` (NaN beyond NEEDED_LIMIT)."""
    return _smallest_n(lambda n: welch_power(log_ratio, sd, n, sd, n, alpha) >= power)


def repetitions_for_equivalence(
    sd: float, margin: float, alpha: float, power: float = POWER
) -> float:
    """Repetitions per side for the interval of a true no-difference to fit inside 1 +/- margin.

    Normal approximation with t critical values: the interval's far end |mean| + t*se must stay
    below the margin with the given probability, i.e. se <= L / (t + z_{(1+power)/2}).
    """
    bound = min(math.log1p(margin), -math.log1p(-margin))

    def enough(n: int) -> bool:
        se = sd * math.sqrt(2 / n)
        return se * (sps.t.ppf(1 - alpha / 2, 2 * n - 2) + sps.norm.ppf((1 + power) / 2)) <= bound

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


# --------------------------------------------------------------------------- verdicts


def judge(
    comparison: Comparison, low: float, high: float, *, significant: bool
) -> tuple[str, bool | None, str]:
    """Verdict, whether the published ratio lies in [low, high], and the reason in words.

    - effect with a direction: `supported` when the interval excludes 1 on the published side
      (and the test is significant after Holm); `contradicted` when it shows the opposite
      direction, or when it contains 1 but excludes the published ratio (the published effect
      is ruled out), or, without a published ratio, when it rules out any change beyond the
      equivalence margin on the claimed side; `inconclusive` otherwise.
    - two-sided effect: `supported` when the interval excludes 1; `contradicted` when it lies
      within 1 +/- margin.
    - null (no-difference) claim: `supported` when the interval lies within 1 +/- margin;
      `contradicted` when it lies entirely outside; `inconclusive` otherwise.
    A supported direction with the published magnitude outside the interval stays `supported`;
    `published_in_ci` and the reason say so.
    """
    margin = comparison.equivalence_margin
    lower_bound, upper_bound = 1 - margin, 1 + margin
    within = f"within 1 +/- {margin:g}"
    if comparison.kind == "null":
        if lower_bound <= low and high <= upper_bound:
            return "supported", None, f"no difference: interval lies {within}"
        if high < lower_bound or low > upper_bound:
            return "contradicted", None, f"a difference: interval lies outside 1 +/- {margin:g}"
        return "inconclusive", None, f"interval is not {within}, nor outside it"

    published = comparison.published_ratio
    in_ci = None if published is None else bool(low <= published <= high)
    excludes_one = high < 1 or low > 1
    if excludes_one and not significant:
        return "inconclusive", in_ci, "interval excludes 1 but the test is not significant after Holm"
    if comparison.direction == "two_sided":
        if excludes_one:
            way = "lower" if high < 1 else "higher"
            return "supported", in_ci, f"a difference: treatment is {way}"
        if lower_bound <= low and high <= upper_bound:
            return "contradicted", in_ci, f"no difference beyond the margin: interval lies {within}"
        return "inconclusive", in_ci, "interval includes 1"

    claimed_side = high < 1 if comparison.direction == "lower" else low > 1
    if claimed_side:
        if in_ci is False:
            larger = published < low if published > 1 else published > high
            size = "larger" if larger else "smaller"
            return "supported", in_ci, (
                f"direction supported; published {published:g} lies outside the interval "
                f"(effect {size} than published)"
            )
        return "supported", in_ci, f"interval excludes 1 in the published direction ({comparison.direction})"
    if excludes_one:
        return "contradicted", in_ci, "opposite direction: interval excludes 1 on the other side"
    if in_ci is False:
        return "contradicted", in_ci, f"published {published:g} lies outside the interval, which includes 1"
    if published is None and (
        low >= lower_bound if comparison.direction == "lower" else high <= upper_bound
    ):
        return "contradicted", in_ci, f"any {comparison.direction} change is smaller than {margin:.0%}"
    return "inconclusive", in_ci, "interval includes 1"


def target_note(source_target: str, server_versions: Iterable[str]) -> str:
    """Say when the server measured is not the one the source measured.

    A server matches when it is not MariaDB where the source says MySQL and its version starts
    with one of the versions named in `source_target` ("MySQL 5.7 and 8.0" matches 8.0.40).
    """
    versions = re.findall(r"\d+\.\d+(?:\.\d+)?", source_target)
    mysql = "mysql" in source_target.lower()

    def matches(server: str) -> bool:
        if mysql and "mariadb" in server.lower():
            return False
        return any(re.match(re.escape(version) + r"(?!\d)", server) for version in versions)

    servers = sorted(set(server_versions))
    if servers and all(matches(server) for server in servers):
        return ""
    return f"target differs: source measured {source_target}, this ran on {', '.join(servers)}"


# --------------------------------------------------------------------------- analysis


def analyze(
    results: pd.DataFrame,
    claim: Claim,
    *,
    seed: int = 20261122,
    n_boot: int = 2000,
    include_contention: bool = True,
    confidence: float = 0.95,
    exclude_outliers: bool = False,
    outlier_threshold: float = OUTLIER_Z,
    stop_rule: StopRule | None = None,
) -> pd.DataFrame:
    """One row per comparison of `claim` (per target when several targets ran both sides).

    Rows taken under contention are kept unless `include_contention` is False; outliers (see
    `outlier_rule`) are listed, and dropped only with `exclude_outliers`; `verdict_note`
    names every row left out and why. When the run ended by `stop_rule`, intervals and tests
    use the level that rule leaves for its final look (see `sequential_alpha`), so stopping
    early keeps the promised error rate. The same data and seed give the same table.
    """
    data = _flagged(_claim_metrics(results, claim), outlier_threshold)
    rows: list[dict[str, Any]] = []
    tested = []
    for comparison in claim.comparisons:
        for group in _select(data, comparison, include_contention, exclude_outliers):
            row = _identity(claim, comparison)
            rows.append(row)
            if group.reason:
                row.update(verdict="not_tested", verdict_note=f"not tested: {group.reason}")
                continue
            alpha = 1 - confidence
            if stop_rule is not None:
                alpha = sequential_alpha(stop_rule, group.blocks)
            rng = np.random.default_rng([seed, zlib.crc32(f"{comparison.name}|{group.target}".encode())])
            numbers, interval_note = _measure(comparison, group, alpha, n_boot, rng)
            row.update(numbers, contention="included" if include_contention else "excluded")
            extra = [interval_note]
            if stop_rule is not None:
                extra.append(f"sequential design ({stop_rule.describe()}): level {alpha:.4f} at "
                             f"{group.blocks} blocks")
                if group.blocks >= 2:
                    look = sequential_look(group.baseline, group.treatment, comparison, stop_rule)
                    extra.append(f"repeated confidence interval, valid however the run stopped: "
                                 f"[{look.interval.low:.4g}, {look.interval.high:.4g}]")
            tested.append((row, comparison, group, alpha, extra))
    for (row, comparison, group, alpha, extra), adjusted in zip(
        tested, holm([row["p_welch_log"] for row, *_ in tested])
    ):
        row["p_holm"] = float(adjusted)
        row["verdict"], row["published_in_ci"], row["verdict_note"] = _conclude(
            row, comparison, group, alpha, extra
        )
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def claim_metrics(claim: Claim) -> list[str]:
    """The metrics a claim's comparisons are about (results also hold cost counters)."""
    return sorted({comparison.metric for comparison in claim.comparisons})


def _claim_metrics(results: pd.DataFrame, claim: Claim) -> pd.DataFrame:
    return results[results["metric"].isin(claim_metrics(claim))] if "metric" in results else results


def summary_line(table: pd.DataFrame, claim: Claim) -> str:
    """One line per claim for the command line: verdict counts, then each comparison."""
    counts = table["verdict"].value_counts()
    head = ", ".join(f"{counts.get(verdict, 0)} {verdict.replace('_', ' ')}" for verdict in VERDICTS)
    parts = []
    for row in table.itertuples(index=False):
        if row.verdict == "not_tested":
            parts.append(f"{row.comparison} not tested")
            continue
        published = "" if pd.isna(row.published_ratio) else f" vs published {row.published_ratio:g}"
        elsewhere = " (other target than the source)" if "target differs" in row.verdict_note else ""
        parts.append(
            f"{row.comparison} {row.ratio_mean:.3g} [{row.ratio_mean_lo:.3g}, "
            f"{row.ratio_mean_hi:.3g}]{published}: {row.verdict}{elsewhere}"
        )
    return f"{claim.id} {claim.title}: {head} | " + "; ".join(parts)


@dataclass(frozen=True, eq=False)
class _Group:
    """The two samples of one comparison on one target, or the reason there are none."""

    target: str = ""
    baseline: Sample | None = None
    treatment: Sample | None = None
    server_versions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    reason: str = ""

    @property
    def blocks(self) -> int:
        return min(self.baseline.n_repetitions, self.treatment.n_repetitions)


def _flagged(results: pd.DataFrame, outlier_threshold: float) -> pd.DataFrame:
    """A copy of the results with the columns the analysis works from; nothing dropped.

    `_restart` names the server process a row was measured in: a repetition, or, when the
    runner had to restart a server that died mid-repetition, each `attempt` of it. `_label`
    names the row in notes; `_usable` and `_outlier` say what may be excluded.
    """
    missing = [column for column in REQUIRED_COLUMNS if column not in results.columns]
    if missing:
        raise DataError(f"results lack column(s) {', '.join(missing)}")
    data = results.reset_index(drop=True)
    value = pd.to_numeric(data["value"], errors="coerce")
    data = data.assign(value=value, contention=data["contention"].astype(bool))
    data["_restart"] = data["run_id"].astype(str)
    for column in ["target", "repetition", *(["attempt"] if "attempt" in data else [])]:
        data["_restart"] += "|" + data[column].astype(str)
    data["_usable"] = np.isfinite(value) & (value > 0)
    data["robust_z"] = _robust_z(data[data["_usable"]])
    data["_outlier"] = data["robust_z"].abs() > outlier_threshold
    several_runs = data["run_id"].nunique() > 1
    data["_label"] = ((data["run_id"].astype(str) + ": " if several_runs else "") + "seq "
                      + data["seq"].astype(str) + " iteration " + data["iteration"].astype(str))
    return data


def _select(data, comparison: Comparison, include_contention: bool, exclude_outliers: bool):
    """Baseline and treatment samples of one comparison, per target that ran both sides."""
    experiment = data[data["experiment"] == comparison.experiment]
    if experiment.empty:
        return [_Group(reason=f"no rows of experiment {comparison.experiment}")]
    rows = experiment[(experiment["workload"] == comparison.workload)
                      & (experiment["metric"] == comparison.metric)]
    if rows.empty:
        return [_Group(reason=f"no {comparison.workload}/{comparison.metric} rows (present: "
                              f"{_present(experiment, ['workload', 'metric'])})")]
    sides = []
    for condition in (comparison.baseline, comparison.treatment):
        absent = [factor for factor in condition.factors if factor not in rows.columns]
        if absent:
            return [_Group(reason=f"factor {', '.join(absent)} absent from the results")]
        mask = np.ones(len(rows), dtype=bool)
        for factor, level in condition.levels:
            mask &= (rows[factor].astype(str) == level).to_numpy()
        sides.append(rows[mask])
    empty = [condition.label for condition, side in
             zip((comparison.baseline, comparison.treatment), sides) if side.empty]
    if empty:
        return [_Group(reason=f"no rows for {' or '.join(empty)} (present: "
                              f"{_present(rows, comparison.baseline.factors)})")]
    base, treat = sides
    targets = set(base["target"]) | set(treat["target"])
    shared = sorted(set(base["target"]) & set(treat["target"]))
    if not shared:
        return [_group("+".join(sorted(targets)), base, treat, include_contention,
                       exclude_outliers, [])]
    unused = sorted(targets - set(shared))
    notes = [f"rows of {', '.join(unused)} hold one side only: not used"] if unused else []
    return [
        _group(target, base[base["target"] == target], treat[treat["target"] == target],
               include_contention, exclude_outliers, notes)
        for target in shared
    ]


def _present(rows: pd.DataFrame, columns) -> str:
    return "; ".join(
        f"{column} {', '.join(sorted(rows[column].dropna().astype(str).unique()))}"
        for column in columns
    )


def _group(target, base, treat, include_contention, exclude_outliers, notes) -> _Group:
    """Apply the exclusion policy to one comparison's rows, and say what it left out."""
    both = pd.concat([base, treat])

    def listed(mask: pd.Series, what: str) -> str:
        labels = both.loc[mask].sort_values(["run_id", "seq", "iteration"])["_label"]
        return f"{len(labels)} {what}: {', '.join(labels)}" if len(labels) else ""

    busy = both["contention"] & both["_usable"]
    notes = list(notes) + [
        listed(~both["_usable"], "rows without a positive value excluded"),
        listed(both["_outlier"], f"outliers flagged ({outlier_rule()}), "
                                 + ("excluded" if exclude_outliers else "kept")),
        f"contention rows included ({int(busy.sum())} of {int(both['_usable'].sum())})"
        if include_contention else listed(busy, "contention rows excluded")
        or "contention rows excluded (none present)",
    ]
    keep = both["_usable"] & ~(both["_outlier"] & exclude_outliers)
    keep &= include_contention | ~both["contention"]
    kept = both[keep]
    samples = []
    for side in (base, treat):
        side_rows = kept[kept.index.isin(side.index)]
        if side_rows.empty:
            return _Group(target, reason=f"every row of one side excluded ({'; '.join(filter(None, notes))})")
        samples.append(_sample(side_rows))
    return _Group(
        target=target,
        baseline=samples[0],
        treatment=samples[1],
        server_versions=tuple(sorted(kept["server_version"].astype(str).unique())),
        notes=tuple(note for note in notes if note),
    )


def _sample(rows: pd.DataFrame) -> Sample:
    """One repetition of the sample per server process (`_restart`), iterations in order."""
    ordered = rows.sort_values(["_restart", "iteration"])
    return Sample(tuple(group["value"].to_numpy(dtype=float)
                        for _, group in ordered.groupby("_restart", sort=True)))


def _identity(claim: Claim, comparison: Comparison) -> dict[str, Any]:
    return {
        "claim": claim.id,
        "comparison": comparison.name,
        "kind": comparison.kind,
        "direction": comparison.direction,
        "experiment": comparison.experiment,
        "workload": comparison.workload,
        "metric": comparison.metric,
        "baseline": comparison.baseline.label,
        "treatment": comparison.treatment.label,
        "published_ratio": comparison.published_ratio,
        "equivalence_margin": comparison.equivalence_margin,
    }


def _measure(comparison: Comparison, group: _Group, alpha, n_boot, rng) -> tuple[dict, str]:
    """Every number of one row (the verdict waits for Holm), and the interval's own note."""
    a, b = group.baseline, group.treatment
    design = design_for(a, b)
    units_a, units_b = a.units(design), b.units(design)

    def interval(statistic: str) -> Interval:
        if min(len(units_a), len(units_b)) < 2:
            ratio = b.statistic(statistic) / a.statistic(statistic)
            return Interval(ratio, math.nan, math.nan, "none", "a single value on a side")
        return ratio_interval(a, b, statistic=statistic, design=design, confidence=1 - alpha,
                              n_boot=n_boot, rng=rng)

    mean, median = interval("mean"), interval("median")
    p_mw, cliffs = mann_whitney(units_a, units_b)
    return {
        "target": group.target,
        "server_version": ", ".join(group.server_versions),
        "n_reps_baseline": a.n_repetitions,
        "n_reps_treatment": b.n_repetitions,
        "n_obs_baseline": a.n_observations,
        "n_obs_treatment": b.n_observations,
        "mean_baseline": a.statistic("mean"),
        "mean_treatment": b.statistic("mean"),
        "ratio_mean": mean.estimate,
        "ratio_mean_lo": mean.low,
        "ratio_mean_hi": mean.high,
        "ci_method": mean.method,
        "ratio_median": median.estimate,
        "ratio_median_lo": median.low,
        "ratio_median_hi": median.high,
        "median_ci_method": median.method,
        "confidence": 1 - alpha,
        "p_welch_log": welch_log_p(units_a, units_b),
        "p_mannwhitney": p_mw,
        "hodges_lehmann": hodges_lehmann_ratio(units_a, units_b),
        "cliffs_delta": cliffs,
        **(_power(comparison, a, b, alpha) if design == "hierarchical" else {}),
    }, mean.note


def _power(comparison: Comparison, a: Sample, b: Sample, alpha: float) -> dict[str, float]:
    """MDE at the run's size, power for the published ratio, and repetitions needed.

    From the observed spread of log repetition means; with one repetition on a side there is
    no such spread, and these columns stay empty rather than quote iteration noise.
    """
    sd_a, sd_b = (np.log(sample.repetition_means).std(ddof=1) for sample in (a, b))
    sd = math.sqrt((sd_a**2 + sd_b**2) / 2)
    sizes = (sd_a, a.n_repetitions, sd_b, b.n_repetitions, alpha)
    published = comparison.published_ratio
    if comparison.kind == "null":
        needed = repetitions_for_equivalence(sd, comparison.equivalence_margin, alpha)
    elif published is not None:
        needed = repetitions_needed(math.log(published), sd, alpha)
    else:
        needed = math.nan
    return {
        "mde": minimal_detectable_effect(*sizes),
        "power_published": math.nan if published is None
        else welch_power(math.log(published), *sizes),
        "n_needed_published": needed,
        "n_needed_5pct": repetitions_needed(math.log1p(SMALL_EFFECT), sd, alpha),
    }


def _conclude(row, comparison: Comparison, group: _Group, alpha: float, extra: list[str]):
    """Verdict, published_in_ci and the note, once Holm has adjusted the claim's p-values."""
    low, high = row["ratio_mean_lo"], row["ratio_mean_hi"]
    if not (np.isfinite(low) and np.isfinite(high)):
        verdict, in_ci, reason = "inconclusive", None, "no interval could be computed"
    else:
        verdict, in_ci, reason = judge(comparison, low, high, significant=row["p_holm"] < alpha)
    notes = [reason]
    if design_for(group.baseline, group.treatment) == "flat":
        if verdict != "inconclusive":
            notes.append(f"this interval alone would say {verdict}")
        verdict = "inconclusive"
        notes.append(
            "one repetition on a side: iterations treated as independent, so between-restart "
            "variance is unmeasured and the interval is too narrow; needs 2+ repetitions per side"
        )
    elif verdict == "inconclusive":
        notes.append(_needed_note(row, comparison))
    notes += [target_note(comparison.source_target, group.server_versions), *extra, *group.notes]
    if comparison.note:
        notes.append(f"about this comparison: {comparison.note}")
    return verdict, in_ci, "; ".join(note for note in notes if note)


def _needed_note(row, comparison: Comparison) -> str:
    """What n would decide an inconclusive comparison, from the observed variance."""
    if comparison.kind == "null":
        n, goal = row["n_needed_published"], f"show equivalence within 1 +/- {comparison.equivalence_margin:g}"
    elif comparison.published_ratio is not None:
        n, goal = row["n_needed_published"], f"detect the published {comparison.published_ratio:g}"
    else:
        n, goal = row["n_needed_5pct"], f"detect a {SMALL_EFFECT:.0%} change"
    if not np.isfinite(n):
        return f"no repetition count up to {NEEDED_LIMIT:,} would {goal} at this variance"
    return f"about {int(n)} repetitions per side would {goal} with {POWER:.0%} power"


# --------------------------------------------------------------------------- diagnostics


def _robust_z(results: pd.DataFrame) -> pd.Series:
    """Modified z-score of each log value against the rest of its restart; NaN where undefined.

    An iteration is compared with the median of the other iterations of its repetition: a
    restart that settled at its own level is between-restart variance, which the hierarchical
    analysis already carries, not an outlier. Leaving the value out matters: residuals from a
    median that includes them shrink, and the false-alarm rate at 3.5 grows from 0.05% to ~1.4%
    with five iterations. The scale is the MAD of those residuals over the whole condition,
    since a handful of iterations cannot give a stable MAD of its own (modified z, Iglewicz &
    Hoaglin, "How to Detect and Handle Outliers", 1993). Repetitions with fewer than three
    iterations cannot say which value is odd, and are never flagged.
    """
    condition = [results[key] for key in _CONDITION_KEYS]
    logs = np.log(results["value"].astype(float))
    residual = logs.groupby([*condition, results["_restart"]]).transform(_leave_one_out_residual)
    mad = residual.abs().groupby(condition).transform("median")
    return 0.6745 * residual / mad.where(mad > 0)


def _leave_one_out_residual(logs: pd.Series) -> np.ndarray:
    values = logs.to_numpy()
    if len(values) < 3:
        return np.full(len(values), np.nan)
    return values - np.array([np.median(np.delete(values, i)) for i in range(len(values))])


def outlier_rule(threshold: float = OUTLIER_Z) -> str:
    """The outlier rule in words, as notes and diagnostics cite it (see `_robust_z`)."""
    return (f"|modified z| > {threshold:g}: log value against the median of the rest of its "
            "repetition, scaled by the condition's MAD (Iglewicz & Hoaglin 1993)")


@dataclass(frozen=True, eq=False)
class Diagnostics:
    """What could bias a comparison, shown rather than silently corrected."""

    drift: pd.DataFrame
    outliers: pd.DataFrame
    warmup: pd.DataFrame
    contention: str


def diagnostics(
    results: pd.DataFrame,
    *,
    include_contention: bool = True,
    outlier_threshold: float = OUTLIER_Z,
    metrics: Iterable[str] | None = None,
) -> Diagnostics:
    """Drift over run order, outliers and warm-up, per run, experiment, workload, metric, condition.

    - drift: Spearman correlation of repetition means with their run order (rank-based, so one
      slow restart does not make a trend), and the Theil-Sen slope as relative change per 100
      measurements; flagged when p < DRIFT_FLAG_P.
    - warmup: per repetition, iteration 0 against the mean of the later ones (log ratio), its
      geometric mean over repetitions and a Wilcoxon signed-rank p; flagged when p < DRIFT_FLAG_P.
    - outliers: rows whose modified z (`robust_z` column) exceeds `outlier_threshold`, with
      the rule (`outlier_rule`).
    """
    if metrics is not None:   # e.g. the claim's own metrics, not every recorded cost counter
        results = results[results["metric"].isin(list(metrics))]
    data = _flagged(results, outlier_threshold)
    busy = int((data["contention"] & data["_usable"]).sum())
    usable = data[data["_usable"]]
    if include_contention:
        contention = f"included: {busy} of {len(usable)} rows were taken on a busy machine"
    else:
        usable = usable[~usable["contention"]]
        contention = f"excluded: {busy} rows taken on a busy machine left out"
    keys = list(_CONDITION_KEYS)
    drift, warmup = [], []
    for key, rows in usable.groupby(keys, sort=True):
        drift.append(dict(zip(keys, key), **_drift(rows)))
        warmup.append(dict(zip(keys, key), **_warmup(rows)))
    outliers = usable[usable["_outlier"]].drop(columns=["_restart", "_usable", "_outlier", "_label"])
    return Diagnostics(
        drift=pd.DataFrame(drift, columns=keys + ["n", "spearman_rho", "p_value",
                                                  "change_per_100", "flagged"]),
        outliers=outliers.assign(rule=outlier_rule(outlier_threshold)),
        warmup=pd.DataFrame(warmup, columns=keys + ["n_repetitions", "first_vs_rest",
                                                    "p_value", "flagged"]),
        contention=contention,
    )


def _drift(rows: pd.DataFrame) -> dict[str, Any]:
    """Trend of repetition means over their mean run order.

    Restarts are the units: correlating every iteration with `seq` would count each restart's
    own level once per iteration and call ordinary between-restart noise a trend.
    """
    reps = rows.assign(log=np.log(rows["value"].astype(float))).groupby("_restart")
    seq, logs = reps["seq"].mean().to_numpy(dtype=float), reps["log"].mean().to_numpy()
    if len(logs) < 3 or np.ptp(logs) == 0:
        return {"n": len(logs), "spearman_rho": math.nan, "p_value": math.nan,
                "change_per_100": math.nan, "flagged": False}
    rho, p = sps.spearmanr(seq, logs)
    slope = sps.theilslopes(logs, seq).slope
    return {"n": len(logs), "spearman_rho": float(rho), "p_value": float(p),
            "change_per_100": math.expm1(100 * slope), "flagged": bool(p < DRIFT_FLAG_P)}


def _warmup(rows: pd.DataFrame) -> dict[str, Any]:
    """First measured iteration of each server process against the rest, paired within it."""
    gaps = []
    for _, rep in rows.sort_values("iteration").groupby("_restart"):
        logs = np.log(rep["value"].to_numpy(dtype=float))
        if len(logs) >= 2:
            gaps.append(logs[0] - logs[1:].mean())
    gaps = np.array(gaps)
    if len(gaps) < 2:
        p = math.nan
    elif np.all(gaps == 0):
        p = 1.0
    else:
        p = float(sps.wilcoxon(gaps).pvalue)
    return {"n_repetitions": len(gaps),
            "first_vs_rest": float(np.exp(gaps.mean())) if len(gaps) else math.nan,
            "p_value": p, "flagged": bool(p < DRIFT_FLAG_P)}


# --------------------------------------------------------------------------- sequential stopping

_BOUNDARY_PATHS = 200_000
_BOUNDARY_CHUNK = 20_000
_BOUNDARY_SEED = 20261122
@dataclass(frozen=True)
class StopDecision:
    """What `should_stop` tells the runner, with the reason to log."""

    stop: bool
    reason: str
    blocks: int


@dataclass(frozen=True)
class Look:
    """One comparison at one look: its repeated confidence interval and what it decides.

    `width` is the interval's relative width, high / low - 1 (infinite while the boundary is).
    """

    blocks: int
    interval: Interval
    width: float
    verdict: str

    @property
    def done(self) -> bool:
        return self.verdict != "inconclusive"


def sequential_alpha(rule: StopRule, blocks: int) -> float:
    """Two-sided nominal level of the final analysis when the run ends after `blocks` blocks.

    Lan & DeMets (Biometrika 1983) let the last look spend whatever alpha the earlier looks
    left, so a run that stops early for precision or at the cap, rather than on a boundary
    crossing, still has its full alpha in total. Blocks beyond the cap count as the cap.
    """
    blocks = min(max(blocks, rule.min_blocks), rule.max_blocks)
    _, final = _boundaries(rule.min_blocks, rule.max_blocks, rule.alpha)
    return float(2 * sps.t.sf(final[blocks - rule.min_blocks], 2 * blocks - 2))


def sequential_look(baseline: Sample, treatment: Sample, comparison: Comparison, rule: StopRule) -> Look:
    """Repeated confidence interval of the ratio after `min(repetitions)` blocks.

    The pooled two-sample t on log repetition means is compared with the group-sequential
    boundary of this look; the interval built from that boundary covers the true ratio at
    every look simultaneously with probability 1 - alpha (Jennison & Turnbull, JRSS B 1989),
    so deciding on it whenever it decides is safe.
    """
    blocks = min(baseline.n_repetitions, treatment.n_repetitions)
    if blocks < 2:
        raise ValueError("a look needs two or more repetitions per side")
    la, lb = np.log(baseline.repetition_means), np.log(treatment.repetition_means)
    na, nb = len(la), len(lb)
    pooled = ((na - 1) * la.var(ddof=1) + (nb - 1) * lb.var(ddof=1)) / (na + nb - 2)
    se = math.sqrt(pooled * (1 / na + 1 / nb))
    interim, _ = _boundaries(rule.min_blocks, rule.max_blocks, rule.alpha)
    critical = interim[min(max(blocks, rule.min_blocks), rule.max_blocks) - rule.min_blocks]
    estimate = lb.mean() - la.mean()
    half = critical * se if se > 0 else 0.0
    interval = Interval(
        math.exp(estimate), math.exp(estimate - half), math.exp(estimate + half),
        "repeated confidence interval, pooled t",
    )
    verdict, _, _ = judge(comparison, interval.low, interval.high,
                          significant=interval.low > 1 or interval.high < 1)
    return Look(blocks, interval, math.expm1(2 * half), verdict)


def should_stop(
    results: pd.DataFrame, claim: Claim, rule: StopRule, *, include_contention: bool = True
) -> StopDecision:
    """Whether the runner may stop after the blocks in `results` (call after every block).

    Stops when every comparison with data is decided by its repeated confidence interval or
    already as narrow as `rule.target_rel_width`, or when `rule.max_blocks` is reached.
    Skipping looks only makes the design more conservative. Analyse the stopped run with
    `analyze(..., stop_rule=rule)` so the final level matches the design.
    """
    data = _flagged(_claim_metrics(results, claim), OUTLIER_Z)
    looks, waiting, untestable = {}, [], []
    for comparison in claim.comparisons:
        for group in _select(data, comparison, include_contention, exclude_outliers=False):
            if group.reason:
                untestable.append(f"{comparison.name}: {group.reason}")
            elif group.blocks < 2:
                waiting.append(group.blocks)
            else:
                looks[f"{comparison.name}@{group.target}"] = sequential_look(
                    group.baseline, group.treatment, comparison, rule
                )
    if not looks and not waiting:
        return StopDecision(True, "nothing to test: " + "; ".join(untestable), 0)
    blocks = min([look.blocks for look in looks.values()] + waiting)
    if blocks < rule.min_blocks:
        return StopDecision(False, f"{blocks} of at least {rule.min_blocks} blocks", blocks)
    decided = [name for name, look in looks.items() if look.done]
    narrow = [name for name, look in looks.items()
              if not look.done and look.width <= rule.target_rel_width]
    open_ = sorted(set(looks) - set(decided) - set(narrow))
    summary = "; ".join(part for part in (
        f"decided: {', '.join(decided)}" if decided else "",
        f"narrower than {rule.target_rel_width:.0%}: {', '.join(narrow)}" if narrow else "",
        f"open: {', '.join(open_)}" if open_ else "",
    ) if part)
    if not open_:
        return StopDecision(True, f"all comparisons done after {blocks} blocks ({summary})", blocks)
    if blocks >= rule.max_blocks:
        return StopDecision(True, f"cap of {rule.max_blocks} blocks reached ({summary})", blocks)
    return StopDecision(False, f"{blocks} blocks, continuing ({summary})", blocks)


def obrien_fleming_spending(fraction: np.ndarray, alpha: float) -> np.ndarray:
    """Alpha spent by information fraction t: 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) (Lan & DeMets 1983).

    Almost nothing is spent early, so early looks stop only on overwhelming evidence and the
    final look keeps nearly the fixed-sample level.
    """
    return 2 * sps.norm.sf(sps.norm.isf(alpha / 2) / np.sqrt(fraction))


@functools.lru_cache(maxsize=16)
def _boundaries(min_blocks: int, max_blocks: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Interim and final critical |t| for looks after min_blocks..max_blocks blocks.

    Textbook boundaries (Armitage-McPherson-Rowe recursion) assume a known variance, which a
    few restarts do not give. Under the null with normal log means, though, the path of pooled
    t statistics depends on nothing unknown, so it is simulated (fixed seed, 200,000 paths)
    and the boundaries read off: at each look the interim boundary lets exactly the alpha
    increment of the spending function cross, and the final boundary lets all the alpha still
    unspent cross, for a run that ends there.
    """
    rng = np.random.default_rng(_BOUNDARY_SEED)
    looks = np.arange(min_blocks, max_blocks + 1)
    paths = np.empty((_BOUNDARY_PATHS, len(looks)), dtype=np.float32)
    for start in range(0, _BOUNDARY_PATHS, _BOUNDARY_CHUNK):
        a, b = rng.standard_normal((2, _BOUNDARY_CHUNK, max_blocks))
        paths[start:start + _BOUNDARY_CHUNK] = _pooled_t_path(a, b, looks)
    spending = obrien_fleming_spending(looks / max_blocks, alpha) * _BOUNDARY_PATHS
    alive = np.ones(_BOUNDARY_PATHS, dtype=bool)
    crossed = 0
    interim, final = np.empty(len(looks)), np.empty(len(looks))
    for index in range(len(looks)):
        ranked = -np.sort(-paths[alive, index])
        final[index] = _exceeded_by(ranked, round(alpha * _BOUNDARY_PATHS) - crossed)
        interim[index] = _exceeded_by(ranked, round(spending[index]) - crossed)
        hits = alive & (paths[:, index] > interim[index])
        crossed += int(hits.sum())
        alive &= ~hits
    return interim, final


def _pooled_t_path(a: np.ndarray, b: np.ndarray, looks: np.ndarray) -> np.ndarray:
    """|pooled two-sample t| after each look's number of blocks, for rows of null data."""
    n = looks.astype(float)
    mean_a, mean_b = np.cumsum(a, axis=1)[:, looks - 1] / n, np.cumsum(b, axis=1)[:, looks - 1] / n
    squares = np.cumsum(a**2, axis=1)[:, looks - 1] + np.cumsum(b**2, axis=1)[:, looks - 1]
    pooled = (squares - n * (mean_a**2 + mean_b**2)) / (2 * n - 2)
    return np.abs(mean_b - mean_a) / np.sqrt(pooled * 2 / n)


def _exceeded_by(descending: np.ndarray, count: int) -> float:
    """The value that exactly `count` of the descending values exceed (inf when none may)."""
    if count <= 0:
        return math.inf
    return float(descending[count]) if count < len(descending) else 0.0


# --------------------------------------------------------------------------- per-operation costs

COST_METRICS = ("server_cpu_user_s", "server_cpu_system_s", "server_ctx_voluntary", "server_ctx_involuntary",
                "client_cpu_s", "status.Innodb_os_log_fsyncs", "status.Innodb_data_fsyncs",
                "status.Innodb_os_log_written", "status.Binlog_commits", "status.Binlog_group_commits",
                "status.Handler_write", "status.Handler_read_rnd_next", "status.Questions", "disk_writes",
                "disk_flushes")


def per_operation(results: pd.DataFrame, metrics: Iterable[str] = COST_METRICS,
                  ops_metric: str = "operations") -> pd.DataFrame:
    """Each cost divided by the operations of the same measurement, as rows `<metric>/op`.

    The one place where costs become per-operation figures (fsyncs per inserted row, server CPU
    seconds per query), so that notebooks and reports never divide by hand."""
    keys = ["run_id", "experiment", "condition", "target", "workload", "repetition", "attempt", "iteration"]
    keys = [k for k in keys if k in results.columns]
    ops = results[results["metric"] == ops_metric][keys + ["value"]].rename(columns={"value": "_ops"})
    costs = results[results["metric"].isin(list(metrics))]
    merged = costs.merge(ops, on=keys, how="inner")
    merged = merged[merged["_ops"] > 0]
    return merged.assign(value=merged["value"] / merged["_ops"], metric=merged["metric"] + "/op",
                         unit=merged["unit"] + "/op").drop(columns="_ops")


def mean_interval(groups: Sequence[np.ndarray], *, n_boot: int, rng: np.random.Generator,
                  confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of repetition means with a two-level percentile bootstrap interval (restarts, then
    iterations within each; Kalibera & Jones 2013, sec. 6). Unlike `ratio_interval` it accepts
    zeros: a cost can be exactly nothing (no binlog commits with the binlog off)."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    estimate = float(np.mean([g.mean() for g in groups]))
    if len(groups) < 2:
        return estimate, math.nan, math.nan
    lengths = np.array([len(g) for g in groups])
    padded = np.zeros((len(groups), int(lengths.max())))
    for index, g in enumerate(groups):
        padded[index, : len(g)] = g
    picked = rng.integers(0, len(groups), size=(n_boot, len(groups)))
    picked_lengths = lengths[picked]
    within = (rng.random((*picked.shape, padded.shape[1])) * picked_lengths[..., None]).astype(int)
    values = padded[picked[..., None], within]
    used = np.arange(padded.shape[1]) < picked_lengths[..., None]
    draws = ((values * used).sum(-1) / picked_lengths).mean(-1)
    alpha = 1 - confidence
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return estimate, float(lo), float(hi)


def cost_table(results: pd.DataFrame, metrics: Iterable[str] = COST_METRICS, *, seed: int = 20261122,
               n_boot: int = 1000, confidence: float = 0.95, include_contention: bool = True) -> pd.DataFrame:
    """Per condition and workload, each cost per operation with its interval: the mechanism
    beside the verdict (e.g. fsyncs per inserted row with the binlog on and off)."""
    data = results if include_contention else results[~results["contention"]]
    per_op = per_operation(data, metrics)
    rows = []
    for (workload, condition, metric), part in per_op.groupby(["workload", "condition", "metric"], sort=True):
        rng = np.random.default_rng([seed, zlib.crc32(f"{workload}|{condition}|{metric}".encode())])
        groups = [g["value"].to_numpy() for _, g in part.groupby(["repetition", "attempt"], sort=True)]
        estimate, lo, hi = mean_interval(groups, n_boot=n_boot, rng=rng, confidence=confidence)
        rows.append({"workload": workload, "condition": condition, "metric": metric, "unit": part["unit"].iloc[0],
                     "n_reps": len(groups), "mean": estimate, "lo": lo, "hi": hi,
                     "contention": "included" if include_contention else "excluded"})
    return pd.DataFrame(rows, columns=["workload", "condition", "metric", "unit", "n_reps", "mean", "lo", "hi",
                                       "contention"])
