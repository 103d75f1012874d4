"""Synthetic benchmark results with a known true effect, to check that the statistics keep their promises.

The noise model follows what Kalibera & Jones (2013, "Rigorous Benchmarking in Reasonable
Time") observed on real systems, plus what this machine showed: each server start settles at
its own level (the largest component), iterations scatter around it, the machine drifts slowly,
the first iteration may be a warm-up, a run (another day, another machine) may shift each
condition's level, and the virtual CPU has a slow state that doubles timings for stretches of
consecutive measurements (a two-state Markov chain over measurement order). Noise is
multiplicative (log-normal), as timings and throughputs are; the true ratio of geometric means
is the multiplier given.

Two designs, as the runner has them: **separate** (each condition its own server start per
block, in a fresh random order within the block; v1 runs) and **paired** (one server start
per block measures every condition, alternating in randomized order round by round, so both
sides share the start's level and, mostly, its speed state).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from claimlab.claims import Comparison, Condition
from claimlab.stats.slow_side import lift_differences, share_differences
from claimlab.stopping import FAST_BAND, FAST_GATE, FastRounds, TimedRounds


@dataclass(frozen=True)
class Noise:
    """Log-scale noise components (defaults: a quiet, real-looking VM).

    between_sd: level of a server start; interaction_sd: a condition's own deviation within a
    shared start (paired designs; in separate designs each condition's start has its own
    between_sd level anyway); within_sd: iteration noise; run_sd: each condition's shift in a
    run (makes runs disagree); drift: total log change over a run; warmup: added to round 0.
    """

    between_sd: float = 0.04
    within_sd: float = 0.015
    drift: float = 0.01
    warmup: float = 0.0
    interaction_sd: float = 0.01
    run_sd: float = 0.0

    def __post_init__(self) -> None:
        if min(self.between_sd, self.within_sd, self.interaction_sd, self.run_sd) < 0:
            raise ValueError("noise standard deviations must be >= 0")


@dataclass(frozen=True)
class SlowState:
    """The virtual CPU's slow state: `share` of measurements, stretches of `mean_length`
    consecutive measurements on average, timings (and probes) multiplied by `factor`."""

    share: float = 0.25
    mean_length: float = 4.0
    factor: float = 2.0

    def __post_init__(self) -> None:
        if not 0 <= self.share < 1 or self.mean_length < 1 or self.factor <= 0:
            raise ValueError("slow state needs 0 <= share < 1, mean_length >= 1, factor > 0")


@dataclass(frozen=True, eq=False)
class Draw:
    """Simulated experiments, arrays shaped (sims, runs, blocks, conditions, rounds)."""

    logs: np.ndarray
    slow: np.ndarray
    position: np.ndarray   # measurement order within the block
    paired: bool

    def block_log_ratios(self, baseline: int = 0, treatment: int = 1, *,
                         normal_only: bool = False, statistic: str = "mean") -> np.ndarray:
        """(sims, runs, blocks) log ratios, computed as `stats.block_log_ratios` does (rounds
        paired; with `normal_only` a round goes when either side is slow, NaN when none is left;
        with statistic "near_min"/"near_max", each side's mean over its fast-state values)."""
        if statistic != "mean":
            if normal_only:
                raise ValueError("the fast-state statistic needs no probe: use all rounds")
            means = []
            for side in (baseline, treatment):
                _, fast = self.fast_state(side, statistic)
                with np.errstate(invalid="ignore"):
                    means.append(np.where(fast, self.logs[..., side, :], 0.0).sum(-1) / fast.sum(-1))
            return means[1] - means[0]
        diff = self.logs[..., treatment, :] - self.logs[..., baseline, :]
        if not normal_only:
            return diff.mean(-1)
        with np.errstate(invalid="ignore"):
            if self.paired:
                normal = ~(self.slow[..., treatment, :] | self.slow[..., baseline, :])
                return np.where(normal, diff, 0.0).sum(-1) / normal.sum(-1)
            means = [np.where(~self.slow[..., side, :], self.logs[..., side, :], 0.0).sum(-1)
                     / (~self.slow[..., side, :]).sum(-1) for side in (baseline, treatment)]
            return means[1] - means[0]

    def fast_state(self, side: int, statistic: str) -> tuple[np.ndarray, np.ndarray]:
        """One side's keyed logs (smaller is faster) and which are in the fast state, (sims, runs,
        blocks, rounds), as `stats.fast_state` reads them."""
        logs = self.logs[..., side, :]
        keyed = logs if statistic == "near_min" else -logs  # NaN: a round not measured (`until_fast`)
        best = np.nanmin(keyed, axis=-1)                    # each start's fastest
        level = np.quantile(best, FAST_GATE, axis=-1)[..., None]   # the run's fast level
        band = np.log1p(FAST_BAND)
        with np.errstate(invalid="ignore"):
            return keyed, (keyed <= best[..., None] + band) & (best <= level + band)[..., None]

    def side_differences(self, baseline: int = 0, treatment: int = 1,
                         statistic: str = "near_min") -> tuple[np.ndarray, np.ndarray]:
        """(sims, runs, blocks) differences of the two sides' lifts above their fastest values and
        of their fast-state shares, as `stats.slow_side.block_differences` computes them."""
        (keyed_b, fast_b), (keyed_t, fast_t) = (self.fast_state(side, statistic) for side in (baseline, treatment))
        keyed_b, keyed_t = (np.where(np.isnan(keyed), np.inf, keyed) for keyed in (keyed_b, keyed_t))
        return (lift_differences(keyed_b, keyed_t, fast_b, fast_t),
                share_differences(np.isfinite(keyed_b), np.isfinite(keyed_t), fast_b, fast_t))

    def until_fast(self, rule: FastRounds, iterations: int) -> tuple[Draw, np.ndarray]:
        """The experiment as the runner measures it under `design.fast_rounds`: drawn with
        `rule.max_iterations` rounds, each block (one server start) keeps its first `iterations`
        rounds, then one more while any condition has fewer than `rule.count` fast-state values
        against the run's fast level so far (over the fastest of the earlier starts and of this
        one), as `FastRounds.another` decides for the runner. Returns the draw with the rounds
        not measured set to NaN, and the rounds each block measured, (sims, runs, blocks)."""
        if not self.paired or self.logs.shape[-1] < rule.max_iterations:
            raise ValueError("until_fast needs a paired draw of at least max_iterations rounds")
        logs = self.logs[..., : rule.max_iterations]
        sims, runs, blocks, _, rounds = logs.shape
        keyed = logs if rule.fastest == "min" else -logs   # smaller is faster on this scale
        band = np.log1p(FAST_BAND)
        bests = []                                   # each earlier start's fastest, (sims, runs, conditions)
        used = np.empty((sims, runs, blocks), dtype=int)
        for block in range(blocks):
            values = keyed[:, :, block]              # (sims, runs, conditions, rounds)
            running = np.minimum.accumulate(values, axis=-1)
            taken = np.full((sims, runs), rounds)
            for end in range(rounds, iterations - 1, -1):   # the first round count that has enough
                best = running[..., end - 1]
                level = np.quantile(np.stack([*bests, best], axis=-1), FAST_GATE, axis=-1)
                fast = (values[..., :end] <= best[..., None] + band).sum(-1) * (best <= level + band)
                taken = np.where((fast >= rule.count).all(-1), end, taken)
            used[:, :, block] = taken
            bests.append(np.take_along_axis(running, taken[..., None, None] - 1, axis=-1)[..., 0])
        return self._first(used, rounds), used

    def until_timed(self, rule: TimedRounds, iterations: int, value_s: float) -> tuple[Draw, np.ndarray]:
        """The experiment as the runner measures it under `design.timed_rounds`: each block keeps
        its first `iterations` rounds, then one more while the time of its rounds (each value of
        every condition, a value of 1 lasting `value_s` seconds) is under `rule.seconds`, as
        `TimedRounds.another` decides. Returns as `until_fast` does."""
        if not self.paired or self.logs.shape[-1] < rule.max_iterations:
            raise ValueError("until_timed needs a paired draw of at least max_iterations rounds")
        rounds = rule.max_iterations
        measured = np.cumsum(np.exp(self.logs[..., :rounds]).sum(-2) * value_s, axis=-1)
        reached = (measured >= rule.seconds) & (np.arange(rounds) >= iterations - 1)
        used = np.where(reached.any(-1), reached.argmax(-1) + 1, rounds)
        return self._first(used, rounds), used

    def _first(self, used: np.ndarray, rounds: int) -> Draw:
        """The draw cut to its first `rounds` rounds, each block's rounds past `used` set to NaN."""
        mask = np.arange(rounds) < used[..., None, None]
        return Draw(np.where(mask, self.logs[..., :rounds], np.nan), self.slow[..., :rounds],
                    self.position[..., :rounds], self.paired)


def draw(rng: np.random.Generator, multipliers, *, n_sims: int = 1, n_runs: int = 1,
         n_blocks: int, n_rounds: int, noise: Noise = Noise(), paired: bool = False,
         slow: SlowState | None = None) -> Draw:
    """Log values of `n_sims` experiments at once (see the module docstring for the model)."""
    if min(n_sims, n_runs, n_blocks, n_rounds) < 1:
        raise ValueError("need at least one experiment, run, block and round")
    mult = np.log(np.asarray(multipliers, dtype=float))
    c = len(mult)
    shape = (n_sims, n_runs, n_blocks, c, n_rounds)
    slots = rng.permuted(np.broadcast_to(np.arange(c), (n_sims, n_runs, n_blocks, n_rounds, c)),
                         axis=-1) if paired else rng.permuted(
        np.broadcast_to(np.arange(c), (n_sims, n_runs, n_blocks, c)), axis=-1)
    if paired:   # round i, slot k: position i * c + k
        order = np.argsort(slots, axis=-1)   # condition -> slot
        position = np.arange(n_rounds)[:, None] * c + order
        position = np.moveaxis(position, -1, -2)
        start = rng.normal(0, noise.between_sd, (n_sims, n_runs, n_blocks, 1, 1))
        start = start + rng.normal(0, noise.interaction_sd, (n_sims, n_runs, n_blocks, c, 1))
    else:        # condition at slot k runs rounds k * n_rounds ... as one server start
        order = np.argsort(slots, axis=-1)
        position = order[..., None] * n_rounds + np.arange(n_rounds)
        start = rng.normal(0, noise.between_sd, (n_sims, n_runs, n_blocks, c, 1))
    per_block = c * n_rounds
    total = n_blocks * per_block
    global_position = np.arange(n_blocks)[:, None, None] * per_block + position
    logs = (mult[:, None] + start
            + rng.normal(0, noise.run_sd, (n_sims, n_runs, 1, c, 1))
            + rng.normal(0, noise.within_sd, shape)
            + noise.drift * global_position / max(total - 1, 1))
    logs[..., 0] += noise.warmup
    states = np.zeros(shape, dtype=bool)
    if slow is not None and slow.share > 0:
        chain = _chain(rng, slow, (n_sims, n_runs, n_blocks), per_block)
        states = np.take_along_axis(chain, position.reshape(n_sims, n_runs, n_blocks, -1),
                                    axis=-1).reshape(shape)
        logs = logs + states * np.log(slow.factor)
    return Draw(logs, states, position, paired)


def _chain(rng, slow: SlowState, shape, length: int) -> np.ndarray:
    """Two-state Markov chain over measurement order with the stationary slow share."""
    leave = 1 / slow.mean_length
    enter = slow.share / (1 - slow.share) * leave
    states = np.empty((*shape, length), dtype=bool)
    current = rng.random(shape) < slow.share
    for step in range(length):
        states[..., step] = current
        u = rng.random(shape)
        current = np.where(current, u >= leave, u < enter)
    return states


def simulate_results(conditions: Mapping[Condition, float], *, claim: str, experiment: str,
                     workload: str, metric: str, unit: str = "s", n_runs: int = 1,
                     n_blocks: int = 10, n_iterations: int = 5, noise: Noise = Noise(),
                     paired: bool = False, slow: SlowState | None = None, probes: bool = False,
                     probe_s: float = 0.01, busy: float | None = None, base_value: float = 10.0,
                     contention_rate: float = 0.0,
                     contention_shift: float = 0.3, target: str = "simulated",
                     server_version: str = "0.0.0-simulated", seed: int = 0) -> pd.DataFrame:
    """A results table shaped exactly like the runner's, with known multipliers per condition.

    `probes` adds the speed witness's metrics (`probe_before_s`, `probe_after_s`, a fixed CPU
    probe of `probe_s` with 3% jitter, multiplied by the slow factor in the slow state).
    `busy` adds the machine's busy share (metric `machine_busy_share`): about `busy` in the
    normal state, 0.15 less in the slow state (the idle time of `stats.speed`), jitter 0.005.
    `contention_rate` marks that share of measurements as taken on a busy machine and shifts
    their log value by `contention_shift`.
    """
    rng = np.random.default_rng(seed)
    keys = list(conditions)
    sim = draw(rng, [conditions[key] for key in keys], n_runs=n_runs, n_blocks=n_blocks,
               n_rounds=n_iterations, noise=noise, paired=paired, slow=slow)
    logs, states, position = sim.logs[0], sim.slow[0], sim.position[0]
    contention = rng.random(logs.shape) < contention_rate
    logs = logs + contention * contention_shift
    run, block, cond, iteration = np.indices(logs.shape).reshape(4, -1)
    c = len(keys)
    seq = block if paired else block * c + position[run, block, cond, 0] // n_iterations
    order = (run * n_blocks + block) * c * n_iterations + position.reshape(-1)
    frame = pd.DataFrame({
        "run_id": [f"sim-{r}" for r in run], "claim": claim, "experiment": experiment,
        "condition": [keys[i].label for i in cond], "target": target,
        "server_version": server_version, "workload": workload, "repetition": block,
        "iteration": iteration, "seq": seq, "attempt": 1, "metric": metric,
        "value": base_value * np.exp(logs.ravel()), "unit": unit,
        "contention": contention.ravel(), "_order": order,
    })
    for factor in keys[0].factors:
        frame[factor] = [dict(keys[i].levels)[factor] for i in cond]
    start = pd.Timestamp("2026-01-01T00:00:00Z") + pd.to_timedelta(frame["_order"], unit="s")
    frame["started_at"] = start.dt.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    frame["ended_at"] = (start + pd.Timedelta(seconds=1)).dt.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    witnesses = []                      # rows beside each measurement; `frame` is in the order of `states`
    if probes:
        factor = np.where(states.ravel(), slow.factor if slow else 1.0, 1.0)
        witnesses += [frame.assign(metric=name, unit="s",
                                   value=probe_s * factor * np.exp(rng.normal(0, 0.03, len(frame))))
                      for name in ("probe_before_s", "probe_after_s")]
    if busy is not None:
        idle = np.where(states.ravel(), 0.15, 0.0)
        share = np.clip(busy - idle + rng.normal(0, 0.005, len(frame)), 0.0, 1.0)
        witnesses.append(frame.assign(metric="machine_busy_share", unit="1", value=share))
    frame = pd.concat([frame, *witnesses], ignore_index=True)
    return frame.sort_values(["_order", "metric"], ignore_index=True).drop(columns="_order")


def simulate_comparison(comparison: Comparison, *, true_ratio: float, claim: str, seed: int = 0,
                        **options) -> pd.DataFrame:
    """Results for the two sides of one comparison, treatment = true_ratio x baseline."""
    return simulate_results({comparison.baseline: 1.0, comparison.treatment: true_ratio},
                            claim=claim, experiment=comparison.experiment,
                            workload=comparison.workload, metric=comparison.metric, seed=seed,
                            **options)
