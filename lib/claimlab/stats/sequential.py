"""Sequential stopping: look after every block, stop when decided or precise, keep the error rate.

A group-sequential design with Lan-DeMets O'Brien-Fleming alpha spending (Lan & DeMets,
Biometrika 1983; O'Brien & Fleming, Biometrics 1979) on the paired t of block log ratios (the
statistic of `intervals`), and repeated confidence intervals (Jennison & Turnbull, JRSS B 1989):
the runner may look after every block and the verdict keeps the level it promises. The rule
itself is `claimlab.stopping.StopRule`; the runner gets `stop_callback(claim, rule)` and never
imports this package (it only calls the function it is given with the run's results so far,
which it reads: no statistic here does I/O).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy

from claimlab.claims import Claim, Comparison
from claimlab.stopping import StopRule

from .intervals import Interval, LogRatio, log_ratio
from .power import AGREEMENT_DRAWS, AGREEMENT_SEED, label_chances
from .selection import DEFAULT_POLICY, Policy, comparison_groups, family_sizes
from .verdicts import decided, labeller, verdict

_BOUNDARY_PATHS = 200_000
_BOUNDARY_CHUNK = 20_000
_BOUNDARY_SEED = 20261122
_CALIBRATION_PATHS = 50_000
_CALIBRATION_SEED = 20261206


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


def sequential_alpha(rule: StopRule, blocks, family_size: int = 1):
    """Two-sided nominal level of the final analysis when the run ends after `blocks` blocks.

    Lan & DeMets let the last look spend whatever alpha the earlier looks left, so a run that
    stops at the cap, rather than on a boundary crossing, still has its full alpha in total. A
    run that stops before the cap stopped because its repeated interval decided or was already
    narrow, and narrow means a luckily small spread as often as a precise estimate: read at the
    level the looks left, those runs rejected a true ratio of 1 in 11% of cases, and all runs in
    6.2% (default rule, block spreads of 2-5%). So before the cap the level is calibrated
    (`_final_critical`): the critical value the looks left, times the smallest factor that
    keeps the A/A rate at alpha whatever the spread, and never beyond the repeated interval's.
    The family's alpha is split evenly (Bonferroni) before spending. Blocks beyond the cap
    count as the cap. Accepts an array of block counts.
    """
    blocks = np.clip(np.asarray(blocks), rule.min_blocks, rule.max_blocks)
    final = _final_critical(rule.min_blocks, rule.max_blocks, rule.alpha / family_size)
    level = 2 * scipy.stats.t.sf(final[blocks - rule.min_blocks], blocks - 1)
    return float(level) if level.ndim == 0 else level


def repeated_interval(summary: LogRatio, rule: StopRule, family_size: int = 1):
    """Repeated confidence interval (low, high) of the ratio at each summary's block count.

    Covers the true ratio at every look simultaneously with probability 1 - alpha / family_size.
    Vectorized over summaries (simulated experiments); NaN below two blocks.
    """
    interim, _ = _boundaries(rule.min_blocks, rule.max_blocks, rule.alpha / family_size)
    blocks = np.clip(np.asarray(summary.n_blocks), rule.min_blocks, rule.max_blocks)
    critical = np.where(np.asarray(summary.n_blocks) >= 2, interim[blocks - rule.min_blocks], np.nan)
    with np.errstate(invalid="ignore"):
        half = np.where(summary.se > 0, critical * summary.se, 0.0)
    return np.exp(summary.mean - half), np.exp(summary.mean + half)


def sequential_look(block_log_ratios: np.ndarray, comparison: Comparison, rule: StopRule,
                    family_size: int = 1) -> Look:
    """The look after the blocks of one run: its repeated interval and the verdict it allows."""
    summary = log_ratio(np.atleast_2d(block_log_ratios))
    blocks = int(summary.n_blocks)
    if blocks < 2:
        raise ValueError("a look needs two or more blocks")
    low, high = (float(x) for x in repeated_interval(summary, rule, family_size))
    interval = Interval(math.exp(float(summary.mean)), low, high, "repeated confidence interval, paired t")
    decision = verdict(comparison.kind, comparison.direction, comparison.published_ratio,
                       comparison.equivalence_margin, low, high)
    width = high / low - 1 if low > 0 else math.inf
    return Look(blocks, interval, width, decision.word)


@dataclass(frozen=True)
class SimulatedRuns:
    """Runs of a sequential design simulated by `simulate_sequential`: the blocks each run
    stopped after, and per comparison (by name) each run's final label and relative half-width."""

    blocks: np.ndarray
    labels: dict[str, np.ndarray]
    half_widths: dict[str, np.ndarray]

    def label_chances(self, name: str) -> dict[str, float]:
        labels, counts = np.unique(self.labels[name], return_counts=True)
        order = np.argsort(-counts, kind="stable")
        return {str(labels[i]): counts[i] / len(self.blocks) for i in order}


def simulate_sequential(comparisons, log_ratios, sd: float, rule: StopRule, family_size: int = 1,
                        between: float = 0.0, draws: int = AGREEMENT_DRAWS,
                        seed: int = AGREEMENT_SEED) -> SimulatedRuns:
    """Runs of a sequential design over the claim's comparisons at once, as the runner runs it.

    Block log ratios normal about each comparison's `log_ratios` entry with spread `sd` (plus one
    offset per run of spread `between`), independent between comparisons; a look after every
    block from `rule.min_blocks` on; a stop at the first look where every comparison's repeated
    interval decides it or is narrower than `rule.target_rel_width` (`should_stop`), else at the
    cap; labels read off the final interval at the level the run leaves (`sequential_alpha`), as
    `analyze` reads it. Fixed seed, common random numbers. Comparisons share a run's blocks, so a
    near-edge one keeps the others going; independence between them is the simplification."""
    first, last = rule.min_blocks, rule.max_blocks
    rng = np.random.default_rng(seed)
    looks = np.arange(first, last + 1)
    interim, _ = _boundaries(first, last, rule.alpha / family_size)
    final = _final_critical(first, last, rule.alpha / family_size)
    summaries = []
    for level in log_ratios:
        offsets = rng.standard_normal((draws, 1)) * between
        summaries.append(_running_summary(level + offsets + sd * rng.standard_normal((draws, last)), looks))

    rows = np.arange(draws)

    def interval(summary, look, critical: np.ndarray):   # look: one index, or one per run
        mean, se = summary[0][rows, look], summary[1][rows, look]
        low, high = np.exp(mean - critical[look] * se), np.exp(mean + critical[look] * se)
        with np.errstate(divide="ignore", invalid="ignore"):
            return low, high, np.where(low > 0, high / low - 1, np.inf)

    stops = np.full(draws, len(looks) - 1)
    alive = np.ones(draws, dtype=bool)
    for i in range(len(looks) - 1):
        settled = alive.copy()
        for comparison, summary in zip(comparisons, summaries):
            low, high, width = interval(summary, i, interim)
            settled &= rule.settles(decided(comparison.kind, comparison.direction, comparison.published_ratio,
                                            comparison.equivalence_margin, low, high), width, comparison.name)
        stops[settled] = i
        alive &= ~settled
    labels, half_widths = {}, {}
    for comparison, summary in zip(comparisons, summaries):
        low, high, width = interval(summary, stops, final)
        labels[comparison.name] = labeller(comparison.kind, comparison.direction, comparison.published_ratio,
                                           comparison.equivalence_margin).labels(low, high)
        half_widths[comparison.name] = width / 2
    return SimulatedRuns(looks[stops], labels, half_widths)


def sequential_label_chances(comparison: Comparison, log_ratio: float, sd: float, rule: StopRule,
                             family_size: int = 1, between: float = 0.0, draws: int = AGREEMENT_DRAWS,
                             seed: int = AGREEMENT_SEED) -> dict[str, float]:
    """The chance of each label a run of this sequential design gives (`power.label_chances` for
    a fixed design): `simulate_sequential` with the comparison followed alone. In a claim of
    several the run may go on for the others, which only narrows its final interval."""
    runs = simulate_sequential([comparison], [log_ratio], sd, rule, family_size, between, draws, seed)
    return runs.label_chances(comparison.name)


def design_label_chances(comparison: Comparison, log_ratio: float, sd: float, n: int, confidence: float,
                         rule: StopRule | None = None, family_size: int = 1,
                         between: float = 0.0) -> dict[str, float]:
    """The chance of each label a run of this design gives: `sequential_label_chances` when it
    stops by `rule`, else `power.label_chances` at `n` fixed blocks and `confidence`."""
    if rule is not None:
        return sequential_label_chances(comparison, log_ratio, sd, rule, family_size, between)
    decide = labeller(comparison.kind, comparison.direction, comparison.published_ratio,
                      comparison.equivalence_margin)
    return label_chances(decide, log_ratio, sd, n, confidence, between)


def should_stop(results: pd.DataFrame, claim: Claim, rule: StopRule, *,
                policy: Policy = DEFAULT_POLICY) -> StopDecision:
    """Whether the runner may stop after the blocks in `results` (one run; call after each block).

    Stops when every comparison with data is decided by its repeated confidence interval or
    already as narrow as `rule.target_rel_width` (those of `rule.precise`: that narrow), or when
    `rule.max_blocks` is reached.
    Skipping looks only makes the design more conservative. Analyse the stopped run with
    `analyze(..., stop_rule=rule)` so the final level matches the design.
    """
    if results["run_id"].nunique() > 1:
        raise ValueError("sequential stopping looks at one run at a time")
    groups = list(comparison_groups(results, claim, policy))
    sizes = family_sizes(claim, groups)
    looks, waiting, untestable, compared = {}, [], [], {}
    for group in groups:
        name = f"{group.comparison.name}@{group.target}" if group.target else group.comparison.name
        compared[name] = group.comparison.name
        if group.reason:
            untestable.append(f"{group.comparison.name}: {group.reason}")
        elif len(group.blocks) < 2:
            waiting.append(len(group.blocks))
        else:
            looks[name] = sequential_look(group.blocks["log_ratio"].to_numpy(), group.comparison,
                                          rule, sizes[group.family_key])
    if not looks and not waiting:
        return StopDecision(True, "nothing to test: " + "; ".join(untestable), 0)
    blocks = min([look.blocks for look in looks.values()] + waiting)
    if blocks < rule.min_blocks:
        return StopDecision(False, f"{blocks} of at least {rule.min_blocks} blocks", blocks)
    open_ = sorted(name for name, look in looks.items() if not rule.settles(look.done, look.width, compared[name]))
    decided = [name for name, look in looks.items() if look.done and name not in open_]
    narrow = [name for name, look in looks.items() if not look.done and rule.settles(False, look.width)]
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


def stop_callback(claim: Claim, rule: StopRule, policy: Policy = DEFAULT_POLICY
                  ) -> Callable[[pd.DataFrame], tuple[bool, str]]:
    """The callback the runner is handed (contract: `should_stop(results) -> (bool, reason)`,
    with the run's results so far as the runner read them)."""

    def callback(results: pd.DataFrame) -> tuple[bool, str]:
        decision = should_stop(results, claim, rule, policy=policy)
        return decision.stop, decision.reason

    return callback


def stopping_for(exp, claim: Claim) -> Callable[[pd.DataFrame], tuple[bool, str]] | None:
    """The stopping callback an experiment's own design asks for (None for a fixed design), for
    `claim`, the claim it tests: every path that runs an experiment takes it through
    `campaign.should_stop`, so a sequential design always stops by its rule and is analysed at the
    level that rule leaves. Names in `precise` that are none of the claim's comparisons are a
    params file's error, said before any server starts."""
    if exp.design.sequential is None:
        return None
    unknown = sorted(set(exp.design.sequential.precise) - {c.name for c in claim.comparisons})
    if unknown:
        from claimlab.errors import ConfigError
        raise ConfigError(exp.source, "design.sequential.precise",
                          f"claim {exp.claim} has no comparison {unknown[0]!r} "
                          f"(it has {', '.join(c.name for c in claim.comparisons)})")
    return stop_callback(claim, exp.design.sequential)


def obrien_fleming_spending(fraction: np.ndarray, alpha: float) -> np.ndarray:
    """Alpha spent by information fraction t: 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) (Lan & DeMets 1983).

    Almost nothing is spent early, so early looks stop only on overwhelming evidence and the
    final look keeps nearly the fixed-sample level.
    """
    return 2 * scipy.stats.norm.sf(scipy.stats.norm.isf(alpha / 2) / np.sqrt(fraction))


@functools.lru_cache(maxsize=32)
def _boundaries(min_blocks: int, max_blocks: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Interim and final critical |t| for looks after min_blocks..max_blocks blocks.

    Textbook boundaries (Armitage-McPherson-Rowe recursion) assume a known variance, which a
    few blocks do not give. Under the null with normal block log ratios, though, the path of
    paired t statistics depends on nothing unknown, so it is simulated (fixed seed, 200,000
    paths) and the boundaries read off: at each look the interim boundary lets exactly the
    alpha increment of the spending function cross, and the final boundary lets all the alpha
    still unspent cross, for a run that ends there.
    """
    rng = np.random.default_rng(_BOUNDARY_SEED)
    looks = np.arange(min_blocks, max_blocks + 1)
    paths = np.empty((_BOUNDARY_PATHS, len(looks)), dtype=np.float32)
    for start in range(0, _BOUNDARY_PATHS, _BOUNDARY_CHUNK):
        draws = rng.standard_normal((_BOUNDARY_CHUNK, max_blocks))
        paths[start:start + _BOUNDARY_CHUNK] = _paired_t_path(draws, looks)
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


@functools.lru_cache(maxsize=32)
def _final_critical(min_blocks: int, max_blocks: int, alpha: float) -> np.ndarray:
    """Critical |t| of the final analysis for a run that ends after min_blocks..max_blocks blocks.

    At the cap: the final boundary of `_boundaries`, all the alpha the looks left. Before the cap,
    that boundary times one factor k >= 1, capped at the repeated interval's (so the final
    interval is never wider than the one that decided the run, and keeps its verdict). Why: a run
    stops early when its repeated interval is narrow, 2 c_n s_n / sqrt(n) <= W on the log scale,
    and the blocks that make it narrow are, as often as not, blocks whose spread s_n came out
    small; t = mean / (s_n / sqrt(n)) of such a run is wider than a t distribution (the mean of
    normal blocks is independent of every s_k, the stopping time is not of s_n). How much wider
    depends on the true spread against W, which a run does not know. Null paths are simulated
    (fixed seed, 50,000 paths of standard normal blocks, the same for every W) and stopped by
    crossing the interim boundary, by width at each W that makes the typical run stop at one of
    the looks, or at the cap; for each W the factor is the one at which exactly alpha of all paths
    reject (less two of the simulation's standard errors); k is the largest over W, so the A/A
    rate is at most alpha at every spread and near it at the worst. A W at which nine runs in ten
    or more go to the cap is left out: the cap decides those, and nothing is left to calibrate.
    Stopping when decided within the equivalence band is a width stop of its own (the band's
    width) and is covered by the same W. A
    calibrated final level of the kind Jennison & Turnbull ("Group Sequential Methods with
    Applications to Clinical Trials", 2000, ch. 8-9) discuss for analyses after a sequential
    test whose stopping rule the boundaries alone do not describe.
    """
    interim, final = _boundaries(min_blocks, max_blocks, alpha)
    looks = np.arange(min_blocks, max_blocks + 1)
    if len(looks) == 1:
        return final
    draws = np.random.default_rng(_CALIBRATION_SEED).standard_normal((_CALIBRATION_PATHS, max_blocks))
    mean, se = _running_summary(draws, looks)
    t = np.abs(mean) / se
    crossed = t > interim
    paths, last = np.arange(_CALIBRATION_PATHS), len(looks) - 1
    # alpha less two of the simulation's standard errors, so that its own error does not carry
    # the rate over alpha at the worst spread
    allowed = alpha * _CALIBRATION_PATHS - 2 * math.sqrt(_CALIBRATION_PATHS * alpha * (1 - alpha))
    typical = 2 * interim[:-1] / np.sqrt(looks[:-1])     # widths at which a run with s = 1 narrows
    typical = typical[np.isfinite(typical)]
    factor = 1.0
    for width in np.exp(np.linspace(np.log(typical.min(initial=np.inf)), np.log(typical.max(initial=0)),
                                    3 * len(typical))):
        done = crossed | (2 * interim * se <= width)
        done[:, -1] = True
        stop = done.argmax(axis=1)
        early = (stop < last) & ~crossed[paths, stop]
        if early.mean() < 0.1:    # the cap decides nearly every path: nothing to calibrate on
            continue
        rejected = crossed[paths, stop].sum() + ((stop == last) & ~crossed[:, -1] & (t[:, -1] > final[-1])).sum()
        ratios = -np.sort(-(t[paths, stop] / final[stop])[early])
        factor = max(factor, _exceeded_by(ratios, math.floor(allowed - rejected)))
    return np.concatenate([np.minimum(factor * final[:-1], interim[:-1]), final[-1:]])


def _running_summary(paths: np.ndarray, looks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of each row's first n values, for every n in `looks`."""
    n = looks.astype(float)
    mean = np.cumsum(paths, axis=1)[:, looks - 1] / n
    squares = np.cumsum(paths**2, axis=1)[:, looks - 1]
    return mean, np.sqrt(np.maximum(squares - n * mean**2, 0.0) / (n - 1) / n)


def _paired_t_path(draws: np.ndarray, looks: np.ndarray) -> np.ndarray:
    """|one-sample t| after each look's number of blocks, for rows of null data."""
    mean, se = _running_summary(draws, looks)
    return np.abs(mean) / se


def _exceeded_by(descending: np.ndarray, count: int) -> float:
    """The value that exactly `count` of the descending values exceed (inf when none may)."""
    if count <= 0:
        return math.inf
    return float(descending[count]) if count < len(descending) else 0.0
