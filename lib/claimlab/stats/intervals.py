"""The one estimand, its interval and its test: the ratio of geometric means, treatment / baseline.

Why the ratio of geometric means: timings and throughputs are positive, multiplicative and
right-skewed, and the claims are about ratios ("2.85x slower"). In log space a ratio is a
difference, symmetric (A/B and B/A give the same interval, inverted), and block means of logs
are close to normal; the mean of logs is the log of the geometric mean, which Fleming &
Wallace ("How not to lie with statistics: the correct way to summarize benchmark results",
CACM 1986) show is the only mean of normalized results consistent under inversion. Kalibera &
Jones (ISMM 2013, sec. 6) interval a ratio of mean execution times instead (by Fieller's theorem
or a bootstrap); `shares.fieller_ratio` serves where a ratio of means is needed. Interval, test,
power and verdict all use the log ratio.

Why a t interval over blocks, not a bootstrap: a benchmark affords few blocks (4-10). The
percentile bootstrap of a mean over n clusters spreads with the plug-in variance and normal
tails (Hesterberg, "What teachers should know about the bootstrap", The American Statistician
2015, sec. 3): on normal data, 4,000 simulated experiments gave it 85% coverage at n = 5 and 90%
at n = 10 for a nominal 95%. The paired t interval over block log ratios is exact when they are
normal, whatever n, and block log ratios are averages of several rounds, close to normal by the
central limit theorem. Across several runs the run means
are the units (df = runs - 1): runs hours apart differ by more than blocks within a run (the
machine's state changes), and treating their blocks as exchangeable would understate the
variance. The simulation tests (tests/unit/test_simulation.py) check coverage of both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import scipy


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


@dataclass(frozen=True)
class LogRatio:
    """Mean log ratio over the top level with its standard error and degrees of freedom.

    Arrays (one element per experiment) when computed for many simulated experiments at once.
    """

    mean: np.ndarray
    se: np.ndarray
    df: np.ndarray
    n_runs: np.ndarray
    n_blocks: np.ndarray

    def interval(self, alpha) -> tuple[np.ndarray, np.ndarray]:
        """Two-sided t interval of the ratio at level 1 - alpha (NaN where df < 1)."""
        with np.errstate(invalid="ignore"):
            half = scipy.stats.t.isf(np.asarray(alpha) / 2, np.where(self.df >= 1, self.df, np.nan)) * self.se
        return np.exp(self.mean - half), np.exp(self.mean + half)

    def p_value(self) -> np.ndarray:
        """Two-sided t-test of ratio 1 with the interval's standard error and df (its dual)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.abs(self.mean) / self.se
            t = np.where((self.se == 0) & (self.mean == 0), 0.0, t)
            return np.where(self.df >= 1, 2 * scipy.stats.t.sf(t, np.maximum(self.df, 1)), np.nan)


def log_ratio(blocks: np.ndarray) -> LogRatio:
    """Summarize block log ratios shaped (..., runs, blocks), NaN where a block is absent.

    One run with data: mean of its blocks, se = sd / sqrt(blocks), df = blocks - 1 (paired t).
    Several runs: mean of run means (each run weighs the same), se = sd of run means /
    sqrt(runs), df = runs - 1 (exact for normal run means, whatever the block counts).
    """
    blocks = np.asarray(blocks, dtype=float)
    present = np.isfinite(blocks)
    values = np.where(present, blocks, 0.0)
    per_run = present.sum(-1)
    n_runs = (per_run > 0).sum(-1)
    n_blocks = per_run.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        run_means = values.sum(-1) / per_run
        has_run = per_run > 0
        grand = np.where(has_run, run_means, 0.0).sum(-1) / n_runs
        between = (np.where(has_run, (run_means - grand[..., None]) ** 2, 0.0).sum(-1)
                   / (n_runs - 1))
        one_run_mean = values.sum((-1, -2)) / n_blocks
        within = (np.where(present, (blocks - one_run_mean[..., None, None]) ** 2, 0.0)
                  .sum((-1, -2)) / (n_blocks - 1))
        several = n_runs >= 2
        mean = np.where(several, grand, one_run_mean)
        se = np.sqrt(np.where(several, between / n_runs, within / n_blocks))
    df = np.where(several, n_runs - 1, n_blocks - 1).astype(float)
    df = np.where(n_blocks >= 2, df, 0.0)
    return LogRatio(mean, se, df, n_runs, n_blocks)


def run_components(blocks: np.ndarray) -> dict[str, float]:
    """Between-run and within-run spread of block log ratios shaped (runs, blocks).

    Method-of-moments variance components of a one-way random-effects model (Searle, Casella &
    McCulloch, "Variance Components", 1992, ch. 3): the within-run variance is the pooled
    variance of blocks around their run's mean; the between-run component is what the spread
    of run means holds beyond what their blocks explain (clipped at 0). The F test of "runs
    agree" is the one-way ANOVA's.
    """
    runs = [row[np.isfinite(row)] for row in np.atleast_2d(blocks)]
    runs = [run for run in runs if len(run)]
    sizes = np.array([len(run) for run in runs])
    out = {"n_runs": len(runs), "within_sd": math.nan, "between_sd": math.nan,
           "between_share": math.nan, "p_runs_differ": math.nan}
    if (sizes >= 2).any():
        dof = int((sizes - 1).sum())
        within = sum(((run - run.mean()) ** 2).sum() for run in runs) / dof
        out["within_sd"] = math.sqrt(within)
    if len(runs) >= 2 and np.isfinite(out["within_sd"]):
        means = np.array([run.mean() for run in runs])
        n0 = (sizes.sum() - (sizes**2).sum() / sizes.sum()) / (len(runs) - 1)
        between_ms = (sizes * (means - np.average(means, weights=sizes)) ** 2).sum() / (len(runs) - 1)
        component = max(0.0, (between_ms - within) / n0)
        out["between_sd"] = math.sqrt(component)
        out["between_share"] = component / (component + within) if component + within > 0 else 0.0
        if within > 0:
            out["p_runs_differ"] = float(scipy.stats.f.sf(between_ms / within, len(runs) - 1, dof))
    return out


# --------------------------------------------------------------------------- unpaired samples


@dataclass(frozen=True, eq=False)
class Sample:
    """One configuration's values grouped by server start, iterations in order (ablations)."""

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

    @functools.cached_property
    def pooled(self) -> np.ndarray:
        return np.concatenate(self.repetitions)

    @functools.cached_property
    def log_means(self) -> np.ndarray:
        """Mean log value of each server start (its geometric mean, logged)."""
        return np.array([np.log(rep).mean() for rep in self.repetitions])

    def statistic(self, kind: str = "mean") -> float:
        """Mean of repetition means (each restart weighs the same), or their geometric mean."""
        if kind == "geometric":
            return float(np.exp(self.log_means.mean()))
        return float(np.mean([rep.mean() for rep in self.repetitions]))


def ratio_interval(baseline: Sample, treatment: Sample, *, confidence: float = 0.95) -> Interval:
    """Ratio of geometric means of two unpaired samples with a Welch t interval on log start means.

    For configurations measured in separate server starts with no block structure to pair on
    (ablation steps). Needs two or more starts per side.
    """
    a, b = baseline.log_means, treatment.log_means
    if min(len(a), len(b)) < 2:
        raise ValueError("a ratio interval needs two or more repetitions per side")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    estimate = b.mean() - a.mean()
    half = 0.0
    if va + vb > 0:
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
        half = scipy.stats.t.isf((1 - confidence) / 2, df) * math.sqrt(va + vb)
    return Interval(math.exp(estimate), math.exp(estimate - half), math.exp(estimate + half),
                    "Welch t on log repetition means")


def hierarchical_draws(sample: Sample, statistic: str, n_boot: int, rng: np.random.Generator):
    """n_boot two-stage resamples of the sample's mean: server starts, then iterations within.

    Kalibera & Jones 2013, sec. 6; vectorized. `statistic` is "mean" (of start means).
    """
    if statistic != "mean":
        raise ValueError("hierarchical_draws resamples means only")
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
    return (np.where(valid, drawn, 0.0).sum(axis=2) / picked_lengths).mean(axis=1)
