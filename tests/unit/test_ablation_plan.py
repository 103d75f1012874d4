"""Ablation plans and attribution statistics, without servers (simulated data, fixed seeds)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from claimlab import ablation, attribution, stats
from claimlab.errors import ConfigError, DataError
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
    interval = stats.share_interval(slow, slow, step, fast, n_boot=2000, rng=np.random.default_rng(1))
    truth = math.log(1.2 / 2.0) / math.log(1.0 / 2.0)   # 0.737
    assert interval.low < truth < interval.high
    assert interval.high - interval.low < 0.2
    whole = stats.share_interval(slow, slow, fast, fast, n_boot=500, rng=np.random.default_rng(2))
    assert whole.estimate == pytest.approx(1.0) and whole.low == pytest.approx(1.0)


SIMULATIONS = 1500
# The 99.9% binomial acceptance region of a 95% interval's hits in SIMULATIONS independent data
# sets: 1396-1451 (93.1%-96.7%). Fixed seeds make every run the same (seed 5: 1410 hits); the band
# is tight enough that a 90% (1335) or a 99% interval (1476) fails it (tested below).
ACCEPT = tuple(int(x) for x in binom.interval(0.999, SIMULATIONS, 0.95))


def coverage(confidence: float, seed: int = 5, reps: int = 20) -> int:
    """Hits of the truth by share_interval over SIMULATIONS simulated ablations with `reps` restarts."""
    rng = np.random.default_rng(seed)
    truth = math.log(1.5 / 2.0) / math.log(1.0 / 2.0)
    hits = 0
    for _ in range(SIMULATIONS):
        slow, step, fast = (simulated(mean, rng, reps=reps, its=3) for mean in (2.0, 1.5, 1.0))
        hits += stats.share_interval(slow, slow, step, fast, confidence=confidence, n_boot=400,
                                        rng=rng).contains(truth)
    return hits


def covers_95(hits: int) -> bool:
    return ACCEPT[0] <= hits <= ACCEPT[1]


def test_share_interval_covers_the_truth_95_percent_of_the_time():
    hits = coverage(0.95)
    assert covers_95(hits), f"{hits} of {SIMULATIONS} hits, outside {ACCEPT}"


def test_share_interval_keeps_its_level_at_the_quick_profiles_four_restarts():
    # A plain percentile interval hit 82-86% at 3-4 restarts (1,294 of 1,500 here); its
    # percentiles are expanded for few restarts (Hesterberg 2015), which may cover more, not less.
    hits = coverage(0.95, reps=4)
    assert hits >= ACCEPT[0], f"{hits} of {SIMULATIONS} hits, under {ACCEPT[0]}"


@pytest.mark.parametrize("wrong", [0.90, 0.99])
def test_the_coverage_check_rejects_a_too_narrow_or_too_wide_interval(wrong):
    assert not covers_95(coverage(wrong))


def gapless(value: float) -> stats.Sample:
    """Three restarts of one iteration: counts, as a status counter metric gives."""
    return stats.Sample.of([[value], [value], [value]])


def test_resamples_without_a_gap_are_counted_not_dropped_silently():
    # slow restarts 1, 1, 2 against a fast 1, 1, 1: a resample drawing slow's two 1s only has
    # no gap, so no share; that happens with probability (2/3)^3 = 30%
    slow, fast = stats.Sample.of([[1.0], [1.0], [2.0]]), gapless(1.0)
    step = stats.Sample.of([[1.0], [1.0], [1.5]])
    interval = stats.share_interval(slow, slow, step, fast, n_boot=2000, rng=np.random.default_rng(3))
    assert 0.25 < interval.nonfinite / interval.n_boot < 0.35
    assert interval.note == f"{interval.nonfinite} of 2000 bootstrap resamples had no finite share"
    assert math.isfinite(interval.low) and math.isfinite(interval.high)
    assert stats.share_interval(slow, slow, fast, fast, n_boot=50, rng=np.random.default_rng(3)).nonfinite > 0


def test_a_share_of_no_gap_at_all_is_an_error():
    with pytest.raises(DataError, match="slow and fast means are equal"):
        stats.share_interval(gapless(1.0), gapless(1.0), gapless(1.2), gapless(1.0), n_boot=50,
                                rng=np.random.default_rng(3))


def test_the_attribution_table_says_how_many_resamples_had_no_share():
    abl = make(slow=ServerOptions(log_bin=True, sync_binlog=1), fast=ServerOptions(log_bin=False),
               design=Design(repetitions=3))
    values = {"slow": [1.0, 1.0, 2.0], "fast": [1.0, 1.0, 1.0]}
    rows = [{"metric": "elapsed_s", "step": condition, "repetition": rep, "iteration": 0, "value": value}
            for condition in abl.conditions() for rep, value in enumerate(values.get(condition, [1.0, 1.0, 1.5]))]
    table = attribution.attribute(pd.DataFrame(rows), abl, n_boot=1000)
    shares = table[table["kind"] != "total"]
    assert (shares["share_nonfinite"] > 200).all() and (table["share_nonfinite"].iloc[0] == 0)
    assert "bootstrap resamples of the shares of only-log_bin" in table["note"].iloc[0]
    assert "left out of their intervals" in table["note"].iloc[0]


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
