"""Synthetic benchmark results with a known true effect, to check that the statistics keep their promises.

The noise model follows what Kalibera & Jones (2013, "Rigorous Benchmarking in Reasonable
Time") observed on real systems: each server start settles at its own level (between-restart
noise, the largest component), iterations scatter around it (within-restart noise), the machine
drifts slowly over the run, and the first iteration may be a warm-up. Noise is multiplicative
(log-normal), as timings and throughputs are. Every component has the same variance in every
condition, so the true ratio of means, of medians and of geometric means all equal the
multiplier given.

Conditions run in randomized complete blocks, as the runner does: block b holds repetition b
of every condition, in a fresh random order, so drift cannot masquerade as an effect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from claimlab.claims import Comparison, Condition


@dataclass(frozen=True)
class Noise:
    """Log-scale noise components of a simulated benchmark (defaults: a quiet, real-looking VM)."""

    between_sd: float = 0.04
    within_sd: float = 0.015
    drift: float = 0.01
    warmup: float = 0.0

    def __post_init__(self) -> None:
        if self.between_sd < 0 or self.within_sd < 0:
            raise ValueError("noise standard deviations must be >= 0")


def simulate_log_values(
    rng: np.random.Generator,
    multipliers: Sequence[float],
    *,
    n_blocks: int,
    n_iterations: int,
    noise: Noise = Noise(),
) -> tuple[np.ndarray, np.ndarray]:
    """Log values and run order, each shaped (condition, block, iteration).

    `drift` is the total change of log level from the first measurement to the last;
    `warmup` is added to the log value of iteration 0 of every repetition.
    """
    if n_blocks < 1 or n_iterations < 1:
        raise ValueError("need at least one block and one iteration")
    multipliers = np.asarray(multipliers, dtype=float)
    n_conditions = len(multipliers)
    order = rng.permuted(np.tile(np.arange(n_conditions), (n_blocks, 1)), axis=1)
    slot = np.empty((n_conditions, n_blocks), dtype=int)
    slot[order, np.arange(n_blocks)[:, None]] = np.arange(n_conditions) + n_conditions * np.arange(
        n_blocks
    )[:, None]
    seq = slot[..., None] * n_iterations + np.arange(n_iterations)
    total = n_conditions * n_blocks * n_iterations
    logs = (
        np.log(multipliers)[:, None, None]
        + rng.normal(0.0, noise.between_sd, (n_conditions, n_blocks, 1))
        + rng.normal(0.0, noise.within_sd, (n_conditions, n_blocks, n_iterations))
        + noise.drift * seq / max(total - 1, 1)
    )
    logs[..., 0] += noise.warmup
    return logs, seq


def simulate_results(
    conditions: Mapping[Condition, float],
    *,
    claim: str,
    experiment: str,
    workload: str,
    metric: str,
    unit: str = "s",
    n_blocks: int = 10,
    n_iterations: int = 5,
    noise: Noise = Noise(),
    base_value: float = 10.0,
    contention_rate: float = 0.0,
    contention_shift: float = 0.3,
    target: str = "simulated",
    server_version: str = "0.0.0-simulated",
    run_id: str = "sim",
    seed: int = 0,
) -> pd.DataFrame:
    """A results table shaped exactly like the runner's, with known multipliers per condition.

    `contention_rate` marks that share of measurements as taken on a busy machine and shifts
    their log value by `contention_shift`, so analyses that include or exclude them differ.
    """
    rng = np.random.default_rng(seed)
    keys = list(conditions)
    logs, seq = simulate_log_values(
        rng, [conditions[key] for key in keys], n_blocks=n_blocks, n_iterations=n_iterations,
        noise=noise,
    )
    contention = rng.random(logs.shape) < contention_rate
    logs = logs + contention * contention_shift
    index = np.indices(logs.shape).reshape(3, -1)
    frame = pd.DataFrame(
        {
            "run_id": run_id,
            "claim": claim,
            "experiment": experiment,
            "condition": [keys[i].label for i in index[0]],
            "target": target,
            "server_version": server_version,
            "workload": workload,
            "repetition": index[1],
            "iteration": index[2],
            "seq": seq.ravel(),
            "metric": metric,
            "value": base_value * np.exp(logs.ravel()),
            "unit": unit,
            "contention": contention.ravel(),
        }
    )
    for factor in keys[0].factors:
        frame[factor] = [dict(keys[i].levels)[factor] for i in index[0]]
    start = pd.Timestamp("2026-01-01T00:00:00Z") + pd.to_timedelta(frame["seq"], unit="s")
    frame["started_at"] = start.dt.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    frame["ended_at"] = (start + pd.Timedelta(seconds=1)).dt.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    return frame.sort_values("seq", ignore_index=True)


def simulate_comparison(
    comparison: Comparison, *, true_ratio: float, claim: str, seed: int = 0, **options
) -> pd.DataFrame:
    """Results for the two sides of one comparison, treatment = true_ratio x baseline."""
    return simulate_results(
        {comparison.baseline: 1.0, comparison.treatment: true_ratio},
        claim=claim,
        experiment=comparison.experiment,
        workload=comparison.workload,
        metric=comparison.metric,
        seed=seed,
        **options,
    )
