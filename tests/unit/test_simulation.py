"""The simulator produces the runner's table shape with the noise structure it promises."""

import numpy as np
import pytest

from claimlab.claims import Condition
from claimlab.simulation import Noise, simulate_log_values, simulate_results
from claimlab.stats import REQUIRED_COLUMNS

OFF, ON = Condition.of({"binlog": "off"}), Condition.of({"binlog": "on"})


def simulate(**options):
    defaults = dict(claim="C4", experiment="binlog_default", workload="insert_loop",
                    metric="elapsed_s", n_blocks=6, n_iterations=4, seed=7)
    return simulate_results({OFF: 1.0, ON: 2.0}, **{**defaults, **options})


def test_table_has_the_runner_columns_and_factor_levels():
    frame = simulate()
    assert set(REQUIRED_COLUMNS) | {"binlog", "started_at", "ended_at"} <= set(frame.columns)
    assert len(frame) == 2 * 6 * 4
    assert sorted(frame["seq"]) == list(range(48))
    assert set(frame["binlog"]) == {"off", "on"}
    assert (frame.loc[frame["condition"] == "binlog=on", "binlog"] == "on").all()
    assert frame["started_at"].iloc[0].endswith("+00:00")


def test_conditions_are_interleaved_in_randomized_blocks():
    frame = simulate(n_blocks=12)
    first = frame[frame["iteration"] == 0].sort_values("seq")
    blocks = first.groupby("repetition")
    assert all(sorted(block["condition"]) == ["binlog=off", "binlog=on"] for _, block in blocks)
    block_of_seq = frame.sort_values("seq")["repetition"].to_numpy()
    assert (np.diff(block_of_seq) >= 0).all(), "block b runs entirely before block b + 1"
    leaders = {block.iloc[0]["condition"] for _, block in blocks}
    assert leaders == {"binlog=off", "binlog=on"}, "the order within blocks varies"


def test_true_ratio_and_variance_structure_are_recovered():
    noise = Noise(between_sd=0.05, within_sd=0.02, drift=0.0)
    logs, _ = simulate_log_values(np.random.default_rng(1), [1.0, 1.3], n_blocks=400,
                                  n_iterations=5, noise=noise)
    values = np.exp(logs)
    assert values[1].mean() / values[0].mean() == pytest.approx(1.3, rel=0.01)
    within = logs.var(axis=2, ddof=1).mean()
    between = logs.mean(axis=2).var(axis=1, ddof=1).mean() - within / 5
    assert within == pytest.approx(0.02**2, rel=0.1)
    assert between == pytest.approx(0.05**2, rel=0.15)


def test_drift_warmup_and_contention():
    logs, seq = simulate_log_values(np.random.default_rng(2), [1.0], n_blocks=50, n_iterations=6,
                                    noise=Noise(between_sd=0.0, within_sd=0.001, drift=0.2,
                                                warmup=0.1))
    later = logs[..., 1:].ravel()
    assert np.polyfit(seq[..., 1:].ravel(), later, 1)[0] * (seq.size - 1) == pytest.approx(0.2, rel=0.05)
    assert (logs[..., 0] - logs[..., 1]).mean() == pytest.approx(0.1, abs=0.01)
    frame = simulate(contention_rate=0.25, n_blocks=40)
    share = frame["contention"].mean()
    assert 0.2 < share < 0.3
    busy = frame.groupby("contention")["value"].median()
    assert busy[True] > busy[False]


def test_same_seed_same_table():
    assert simulate().equals(simulate())
    assert not simulate().equals(simulate(seed=8))
