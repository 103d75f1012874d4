"""Ablation plans and attribution statistics, without servers (simulated data, fixed seeds)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from claimlab import ablation, stats
from claimlab.errors import ConfigError
from claimlab.params import Design
from claimlab.servers import ServerOptions, TargetSpec
from claimlab.workloads import ProcInsertLoop

ROOT = Path(__file__).resolve().parents[2]
SLOW = ServerOptions(log_bin=True, sync_binlog=1, extra=(("performance_schema", "ON"),))
FAST = ServerOptions(log_bin=False)


def make(**kw) -> ablation.Ablation:
    args = dict(name="t", target=TargetSpec(name="default", kind="mariadb"),
                workload=ProcInsertLoop(name="insert_loop", rows=10), slow=SLOW, fast=FAST,
                design=Design(repetitions=2))
    return ablation.Ablation(**(args | kw))


def test_toggles_and_switched_options():
    assert ablation.toggles(SLOW, FAST) == ("log_bin", "performance_schema", "sync_binlog")
    one = ablation.switched(SLOW, FAST, ["performance_schema", "sync_binlog"])
    assert one == ServerOptions(log_bin=True)
    assert ablation.switched(SLOW, FAST, ablation.toggles(SLOW, FAST)).key() == FAST.key()


def test_steps_share_conditions_for_equal_option_sets():
    abl = make(order=("sync_binlog",))
    assert abl.order == ("sync_binlog", "log_bin", "performance_schema")
    steps = {s.name: s for s in abl.steps()}
    assert steps["upto-sync_binlog"].condition == "only-sync_binlog"
    assert steps["upto-performance_schema"].condition == "fast"
    assert len(abl.conditions()) == 2 + 3 + 1   # slow, fast, three alone, one intermediate cumulative
    assert [lv.name for lv in abl.experiment().factors[0].levels][:2] == ["slow", "fast"]


@pytest.mark.parametrize("kw, message", [
    (dict(fast=SLOW), "nothing to ablate"),
    (dict(order=("innodb_doublewrite",)), "does not differ"),
    (dict(design=Design(repetitions=1)), "two or more"),
    (dict(target=TargetSpec(name="default", kind="mariadb", options=ServerOptions(sync_binlog=0))), "pin"),
])
def test_impossible_plans_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        make(**kw)


def simulated(mean: float, rng: np.random.Generator, reps: int = 6, its: int = 4) -> stats.Sample:
    """Restart effects (sd 3%) and iteration noise (sd 2%), multiplicative."""
    return stats.Sample.of(mean * math.exp(rng.normal(0, 0.03)) * np.exp(rng.normal(0, 0.02, its))
                           for _ in range(reps))


def test_share_interval_recovers_a_known_share():
    rng = np.random.default_rng(20261122)
    slow, step, fast = simulated(2.0, rng), simulated(1.2, rng), simulated(1.0, rng)
    interval = ablation.share_interval(slow, slow, step, fast, n_boot=2000, rng=np.random.default_rng(1))
    truth = math.log(1.2 / 2.0) / math.log(1.0 / 2.0)   # 0.737
    assert interval.low < truth < interval.high
    assert interval.high - interval.low < 0.2
    whole = ablation.share_interval(slow, slow, fast, fast, n_boot=500, rng=np.random.default_rng(2))
    assert whole.estimate == pytest.approx(1.0) and whole.low == pytest.approx(1.0)


def test_share_interval_covers_the_truth_most_of_the_time():
    rng = np.random.default_rng(5)
    truth = math.log(1.5 / 2.0) / math.log(1.0 / 2.0)
    hits = 0
    for _ in range(40):
        slow, step, fast = simulated(2.0, rng), simulated(1.5, rng), simulated(1.0, rng)
        hits += ablation.share_interval(slow, slow, step, fast, n_boot=400, rng=rng).contains(truth)
    assert hits >= 32   # nominal 95%; small samples under-cover a little


def test_the_shipped_ablation_file_loads_in_every_profile():
    for profile in ("smoke", "quick", "full"):
        abl = ablation.load(ROOT / "params" / "ablation" / "binlog_hunt.yaml", profile)
        assert "log_bin" in abl.order
    assert ablation.load(ROOT / "params" / "ablation" / "binlog_hunt.yaml", "smoke").workload.rows == 100


def test_ablation_file_errors_name_the_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("workloads: {w: {kind: proc_insert_loop}}\nslow: {log_bin: true}\nfast: {log_bin: true}\n")
    with pytest.raises(ConfigError, match="fast.*nothing to ablate"):
        ablation.load(path)
    path.write_text("workloads: {w: {kind: proc_insert_loop}}\nslow: {log_bin: true}\nfast: {}\nspeed: 1\n")
    with pytest.raises(ConfigError, match="speed: unknown key"):
        ablation.load(path)
