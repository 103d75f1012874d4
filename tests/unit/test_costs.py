"""Costs per operation: a t interval over server starts, its coverage on simulated starts from a
fixed seed, and runs analysed together kept apart start by start."""

import math

import numpy as np
import pandas as pd
import pytest

from claimlab import stats


def test_the_cost_interval_covers_at_its_level_with_the_starts_a_run_has():
    # Before: a two-level percentile bootstrap, 75-89% coverage at 3-6 starts for a stated 95%
    rng = np.random.default_rng(4242)
    for starts in (3, 4, 6, 10):
        covered = 0
        for _ in range(2000):
            groups = [rng.normal(10 + rng.normal(0, 1), 1, 8) for _ in range(starts)]
            _, lo, hi = stats.mean_interval(groups)
            covered += lo <= 10 <= hi
        assert 0.93 <= covered / 2000 <= 0.97, (starts, covered)


def test_a_cost_that_cannot_be_negative_keeps_its_interval_at_zero_or_above():
    mean, lo, hi = stats.mean_interval([np.array([0.0, 0.0]), np.array([0.0, 0.2]), np.array([0.0, 0.0])])
    assert lo == 0.0 < mean < hi
    assert stats.mean_interval([np.array([1.0, 1.0])])[1:] == (pytest.approx(math.nan, nan_ok=True),) * 2
    assert stats.mean_interval([np.array([-0.2]), np.array([0.1]), np.array([0.0])])[1] < 0   # counters fell


def _run(run_id: str, per_op: float) -> pd.DataFrame:
    rows = []
    for repetition in range(4):
        for metric, value in (("operations", 100.0), ("disk_flushes", per_op * 100)):
            rows.append({"run_id": run_id, "experiment": "e", "condition": "binlog=on", "target": "mariadb",
                         "workload": "w", "repetition": repetition, "attempt": 1, "iteration": 0,
                         "metric": metric, "value": value, "unit": "count", "contention": False})
    return pd.DataFrame(rows)


def test_runs_analysed_together_are_never_merged_start_by_start():
    # Before: repetition r of each run was one "start": two runs of 1 and 3 flushes/op read as four
    # starts of 2.0 [1.58, 2.33], the runs' difference taken for noise within a start.
    table = stats.cost_table(pd.concat([_run("a", 1.0), _run("b", 3.0)], ignore_index=True))
    row = table[table["metric"] == "disk_flushes/op"].iloc[0]
    assert row["n_reps"] == 8 and row["mean"] == pytest.approx(2.0)
    assert row["lo"] < 1.2 and row["hi"] > 2.8
