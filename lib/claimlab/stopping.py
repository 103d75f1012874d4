"""A design's stopping rules, one record each, read by the params (validated at load), the runner
and the statistics: when to stop adding blocks (`StopRule`, sequential), and when to stop adding
rounds to a server start (`FastRounds`, by its fast-state values; `TimedRounds`, by its time).

The methods that apply the sequential rule live in `stats.sequential` (`should_stop`,
`stop_callback`, `sequential_alpha`, `sequential_look`); the fast state itself (`FAST_BAND`,
`FAST_GATE`, `fast_level`) is defined here because the runner's rule and the analysis's statistic
must read it alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

MAX_LOOKS = 100   # the alpha-spending boundaries are simulated for at most this many looks
FAST_BAND = 0.15  # a value within 15% of its server start's fastest is in that start's fast state,
FAST_GATE = 0.25  # if the start's fastest is within FAST_BAND of this quantile of the run's starts'


def fast_level(start_bests: Sequence[float], fastest: str = "min") -> float:
    """The run's fast level of one condition: the lower quartile of its server starts' fastest
    values (upper quartile for `fastest` "max", a rate; pass logs, as the analysis does), by
    numpy's default (linear) interpolation. A start whose own fastest lies beyond FAST_BAND of it
    spent the run's fast state elsewhere and does not count (`stats.fast_state`)."""
    return float(np.quantile(start_bests, FAST_GATE if fastest == "min" else 1 - FAST_GATE))


@dataclass(frozen=True)
class StopRule:
    """When the runner may stop adding blocks: decided, or precise enough, or at the cap.

    After each complete block (from `min_blocks` on) every comparison of the claim is looked
    at through its repeated confidence interval (see `stats.sequential_look`). A comparison is done
    when that interval decides it (see `stats.verdict`) or is narrower than `target_rel_width`
    (high / low - 1); a comparison named in `precise`, whose precision is a goal of its own (C2's
    main comparison: within 3% at the quick profile), is done only when it is that narrow, decided
    or not. The run stops when every comparison is done, or at `max_blocks`.

    Error rates: decisions read off repeated confidence intervals keep `alpha` under any
    stopping (Jennison & Turnbull 1989). The final analysis uses `stats.sequential_alpha`: at the
    cap the level the looks left (Lan & DeMets 1983); before it a calibrated level, because a
    run that stops as soon as its interval is narrow often stops on a luckily small spread, and
    read at the level the looks left such runs gave an A/A rate of 6.2% at block spreads of 2-5%.
    Calibrated, the simulated A/A rate is at most `alpha` and coverage 95-97% at spreads of
    2-10% (tests/unit/test_simulation.py). The width is that of the repeated interval: measured
    with fixed-sample critical values it stopped on small spreads even more often (an A/A rate of
    about 7.5% in the same simulation before the calibration).
    """

    target_rel_width: float = 0.10
    min_blocks: int = 3
    max_blocks: int = 20
    alpha: float = 0.05
    precise: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "precise", tuple(self.precise))   # a manifest's JSON gives a list
        if not all(isinstance(name, str) and name for name in self.precise):
            raise ValueError("precise must list comparison names")
        if not 0 < self.alpha < 0.5:
            raise ValueError("alpha must lie in (0, 0.5)")
        if not self.target_rel_width > 0:
            raise ValueError("target_rel_width must be > 0")
        if not 2 <= self.min_blocks <= self.max_blocks:
            raise ValueError("min_blocks must lie between 2 and max_blocks")
        if self.max_blocks - self.min_blocks + 1 > MAX_LOOKS:
            raise ValueError(f"max_blocks allows at most {MAX_LOOKS} looks (max_blocks - min_blocks + 1)")

    @classmethod
    def of_manifest(cls, manifest: dict) -> StopRule | None:
        """The rule a run was designed with (None for a fixed design): its analysis must use the
        same rule, so that stopping early keeps the promised error rate."""
        recorded = (manifest.get("design") or {}).get("sequential")
        return cls(**recorded) if recorded else None

    def settles(self, decided, width, comparison: str | None = None):
        """Whether `comparison` needs no more blocks: its repeated interval decides it (unless it is
        one of `precise`), or is no wider than `target_rel_width`. The runner's looks and
        `stats.simulate_sequential` both ask this, so a simulated run stops where a real one would
        (elementwise over arrays of simulated runs)."""
        if comparison in self.precise:
            return width <= self.target_rel_width
        return decided | (width <= self.target_rel_width)

    def describe(self) -> str:
        precise = f" ({', '.join(self.precise)}: that width, decided or not)" if self.precise else ""
        return (f"O'Brien-Fleming alpha spending, alpha {self.alpha:g}, blocks "
                f"{self.min_blocks}-{self.max_blocks}, target width {self.target_rel_width:.0%}{precise}")


@dataclass(frozen=True)
class FastRounds:
    """More rounds for a server start that has too few fast-state measurements: a bounded
    re-measurement, decided by the measured values themselves, not by a witness.

    After a start's `iterations` rounds, while any of its conditions has fewer than `count`
    values of `metric` in the fast state (within FAST_BAND of the start's fastest, itself within
    FAST_BAND of the run's `fast_level` so far: smallest for `fastest: min`, a time; largest for
    `max`, a rate), every condition is measured once more, in a fresh random order, up to
    `max_iterations` rounds.

    Why: a comparison with `statistic: near_min` reads each side's fast-state values only, and
    on a host whose slow state is the usual one (on one Intel host 60-80% of MySQL's C2 scans
    were slow) a start of ten rounds often has none on one side and drops out of the
    comparison, or has one, which sets its ratio alone. The rule looks at which values were fast,
    never at their size within the band, and always adds whole rounds of every condition, so it
    favours no side: the simulated A/A rate and coverage stay nominal under it
    (tests/unit/test_simulation.py). A quiet host never triggers it.
    """

    metric: str
    fastest: str = "min"
    count: int = 3
    max_iterations: int = 20

    def __post_init__(self) -> None:
        if not self.metric:
            raise ValueError("metric: name the measured metric whose fast state counts (e.g. elapsed_s)")
        if self.fastest not in ("min", "max"):
            raise ValueError(f"fastest: 'min' (a time) or 'max' (a rate), not {self.fastest!r}")
        if not 1 <= self.count <= self.max_iterations:
            raise ValueError("count must lie between 1 and max_iterations")

    def is_fast(self, value: float, best: float) -> bool:
        """Whether `value` lies within FAST_BAND of `best` on the slow side (in logs, as
        `stats.fast_state` reads it)."""
        if self.fastest == "min":
            return math.log(value) <= math.log(best) + math.log1p(FAST_BAND)
        return math.log(value) >= math.log(best) - math.log1p(FAST_BAND)

    def best(self, values: Sequence[float]) -> float:
        """The fastest of `values`: smallest for a time, largest for a rate."""
        return min(values) if self.fastest == "min" else max(values)

    def level(self, start_bests: Sequence[float]) -> float:
        """The run's fast level over the fastest values of its starts so far (`fast_level`, on
        logs as the analysis takes it)."""
        return math.exp(fast_level([math.log(v) for v in start_bests], self.fastest))

    def levels(self, values: Mapping[tuple, Sequence[float]], earlier: Mapping) -> dict:
        """The run's fast level of each condition of a unit: over `earlier[condition]`, the fastest
        values of the run's earlier starts, and the fastest of each of this unit's starts so far."""
        bests: dict = {}
        for (_, condition), seen in values.items():
            bests.setdefault(condition, list(earlier.get(condition, ()))).append(self.best(seen))
        return {condition: self.level(found) for condition, found in bests.items()}

    def fast_count(self, seen: Sequence[float], level: float) -> int:
        """How many of one start's values of a condition are in the fast state, against the
        run's fast level of that condition: none if the start's fastest is outside its band."""
        best = self.best(seen)
        return sum(self.is_fast(v, best) for v in seen) if self.is_fast(best, level) else 0

    def short(self, values: Mapping[tuple, Sequence[float]], levels: Mapping) -> bool:
        """Whether a unit needs another round: some (start, condition) key of `values` has fewer
        than `count` fast-state values against `levels[condition]` (see `levels`)."""
        return any(self.fast_count(seen, levels[condition]) < self.count
                   for (_, condition), seen in values.items())

    def another(self, rounds: int, values: Mapping[tuple, Sequence[float]], levels: Mapping) -> bool:
        """Whether a unit measured whole over `rounds` rounds gets one more: under the cap and
        `short` (the runner asks this after its `iterations` rounds; the simulations replay it)."""
        return rounds < self.max_iterations and self.short(values, levels)


@dataclass(frozen=True)
class TimedRounds:
    """More rounds for a server start whose rounds measured less than `seconds`: where its work
    is quick, a start's fixed cost (the binary's copy, the start, the warm-up round) is spread over
    more measurements, and where it is slow, nothing is added.

    Why: MySQL's C2 run pays 4.5-6.5 s per block of two starts before it measures anything. On
    one AMD host its ten rounds of scans took 5.1 s a start and that cost was a quarter of its
    wall time (bench/overhead.py), while on an Intel host the same
    ten rounds took 12-17 s, and more rounds there would only lengthen `make report`. The rule
    reads the time of whole rounds of every condition, never a value of one condition against
    another, so it favours no side (the simulated A/A rate and coverage: tests/unit/test_simulation.py).
    """

    seconds: float
    max_iterations: int = 20

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError("seconds: the measured time a server start should reach, above 0")
        if self.max_iterations < 2:
            raise ValueError("max_iterations: at least 2 (a cap of one round adds none)")

    def another(self, rounds: int, measured_s: float) -> bool:
        """Whether a start that measured `measured_s` seconds in `rounds` whole rounds gets one more."""
        return rounds < self.max_iterations and measured_s < self.seconds
