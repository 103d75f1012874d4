"""The shipped series of bench/idle_state.py (data/README.md, "Idle time is wake-ups across
vCPUs"), summarized again from their bursts: why C1 runs on one vCPU (`design.cpus`)."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, bench_module

SERIES = {"mariadb": "c1_idle_state.json", "mysql": "c1_idle_state_mysql.json"}


@pytest.fixture(scope="module")
def summaries():
    summary = bench_module("idle_state").summary
    out = {}
    for target, name in SERIES.items():
        series = json.loads((ROOT / "data" / name).read_text())
        assert series["target"] == target and "Intel" in series["cpu"] and "model 167" in series["cpu"]
        assert summary(series) == series["summary"]      # the stored summary is its bursts' summary
        out[target] = {row["arm"]: row for row in series["summary"]}
    return out


@pytest.mark.parametrize("target, bursts, idle", [("mariadb", 100, 19), ("mysql", 50, 13)])
def test_two_vcpus_idle_alike_in_some_bursts_and_one_vcpu_never(summaries, target, bursts, idle):
    arms = summaries[target]
    assert {arm: row["bursts"] for arm, row in arms.items()} == dict.fromkeys(arms, bursts)
    unpinned, one = arms["unpinned"], arms["one vCPU"]
    assert unpinned["idle_bursts"] == idle and one["idle_bursts"] == 0
    busier, idler = unpinned["busy_cpus_idle"]
    assert busier - idler < 0.02 and busier < unpinned["busy_cpus_normal"][1] - 0.04   # both idle, alike
    assert all(x < 0.92 for x in unpinned["idle_qps_ratio"].values())
    assert one["busy_cpus_normal"][0] >= 0.99


@pytest.mark.parametrize("target", SERIES)
def test_one_vcpu_reads_the_two_vcpu_ratios_with_a_third_of_their_spread(summaries, target):
    unpinned, one, apart = (summaries[target][arm] for arm in ("unpinned", "one vCPU", "apart"))
    for level, ratio in one["ratio_to_charset=latin1"].items():
        assert ratio == pytest.approx(unpinned["ratio_to_charset=latin1"][level], rel=0.01)
        assert one["ratio_sd_log"][level] < 0.5 * unpinned["ratio_sd_log"][level]
        # server and client apart: every statement waits for a wake-up, and the lexer's cost dilutes
        assert apart["ratio_to_charset=latin1"][level] > ratio + 0.01
    assert 0.5 < one["median_qps"]["charset=latin1"] / unpinned["median_qps"]["charset=latin1"] < 0.6


def test_which_vcpu_does_not_matter_and_the_hour_moved_every_layout(summaries):
    # 09:25-09:29 (data/README.md, "Idle time is wake-ups across vCPUs"): on vCPU 0 and on vCPU 1
    # alike, and every layout read mismatch / latin1 2-3 points nearer 1 than at 08:40-09:00,
    # at 77-81% of that hour's QPS.
    summary = bench_module("idle_state").summary
    series = json.loads((ROOT / "data" / "c1_idle_state_vcpus.json").read_text())
    assert summary(series) == series["summary"]
    arms = {row["arm"]: row for row in series["summary"]}
    zero, one, unpinned = arms["one vCPU"], arms["one vCPU 1"], arms["unpinned"]
    assert one["median_qps"]["charset=latin1"] == pytest.approx(zero["median_qps"]["charset=latin1"], rel=0.03)
    for level, ratio in zero["ratio_to_charset=latin1"].items():
        assert one["ratio_to_charset=latin1"][level] == pytest.approx(ratio, abs=0.005)
    for arm, row in (("one vCPU", zero), ("unpinned", unpinned)):
        before = summaries["mariadb"][arm]
        mismatch = [r["ratio_to_charset=latin1"]["charset=mismatch"] for r in (before, row)]
        assert mismatch[1] - mismatch[0] > 0.02
        assert 0.75 < row["median_qps"]["charset=latin1"] / before["median_qps"]["charset=latin1"] < 0.82


def test_the_slow_state_slows_the_servers_code_and_moves_the_ratio_toward_1():
    # 11:51-11:55 (data/README.md, "What the hour does to C1's ratio"): within four minutes the bursts'
    # QPS on one vCPU ranged 27-36k; the slower half read mismatch / latin1 about a point nearer 1,
    # with more user time per query and the same system share, on one vCPU and unpinned alike.
    idle_state = bench_module("idle_state")
    series = json.loads((ROOT / "data" / "c1_idle_state_1151.json").read_text())
    assert idle_state.summary(series) == series["summary"]
    for arm in ("one vCPU 1", "unpinned"):
        split = idle_state.by_speed(series, arm)
        slow, fast = split["slow"], split["fast"]
        assert slow["ratio"] - fast["ratio"] > 0.01 and split["corr_qps_ratio"] < -0.6
        assert slow["user_us"] > 1.08 * fast["user_us"] and split["corr_qps_user_us"] < -0.85
        assert slow["system_share"] == pytest.approx(fast["system_share"], abs=0.005)
    with pytest.raises(ValueError, match="'one vCPU': needs four bursts or more with the server's system time"):
        idle_state.by_speed(json.loads((ROOT / "data" / "c1_idle_state_vcpus.json").read_text()), "one vCPU")


def test_the_full_profile_reads_c1s_effect_smaller_for_its_tables_not_its_bursts():
    # 12:52-12:59 (data/README.md, "C1's full runs on one vCPU"), one server start at the full profile,
    # four arms on vCPU 1 alternating, 26 bursts each: the full profile's three 100,000-row tables
    # read mismatch / latin1 3-4 points nearer 1 than quick's two 10,000-row tables loaded beside
    # them; 3-s or 5-s bursts read alike.
    idle_state = bench_module("idle_state")
    series = json.loads((ROOT / "data" / "c1_idle_state_sizes.json").read_text())
    assert series["profile"] == "full" and idle_state.summary(series) == series["summary"]
    arms = {row["arm"]: row for row in series["summary"]}
    assert {arm: row["bursts"] for arm, row in arms.items()} == dict.fromkeys(arms, 26)
    mismatch = {arm: row["ratio_to_charset=latin1"]["charset=mismatch"] for arm, row in arms.items()}
    full, full_3s = mismatch["one vCPU 1"], mismatch["one vCPU 1, 3-s bursts"]
    quick, quick_5s = mismatch["one vCPU 1, quick's tables, 3-s bursts"], mismatch["one vCPU 1, quick's tables"]
    assert abs(full - full_3s) < 0.005 and abs(quick - quick_5s) < 0.005
    assert min(full, full_3s) - max(quick, quick_5s) > 0.025


def test_mysqls_c1_effect_reads_larger_after_a_starts_first_minute():
    # 17:24-17:28 (data/README.md, "MySQL's C1 effect after a start's first minute"): one MySQL start,
    # C1's quick workload on vCPU 1, 79 bursts of 3 s. Its first minute read mismatch / latin1 0.970,
    # as the quick builds' bursts (the first 15 s of a start) do; the next three 0.960-0.967, as the
    # one-vCPU arm of the ten-minute series of 09:01 did after its first minute (0.952-0.968).
    idle_state = bench_module("idle_state")
    for name, arm, bursts in (("c1_idle_state_mysql_1724.json", "one vCPU 1", 79),
                              ("c1_idle_state_mysql.json", "one vCPU", 50)):
        series = json.loads((ROOT / "data" / name).read_text())
        assert series["target"] == "mysql" and idle_state.summary(series) == series["summary"]
        minutes = idle_state.by_minute(series, arm)
        assert sum(m["bursts"] for m in minutes) == bursts
        mismatch = [m["ratio_to_charset=latin1"]["charset=mismatch"] for m in minutes if m["bursts"] >= 4]
        assert 0.968 <= mismatch[0] <= 0.971, mismatch
        assert all(0.95 < x < 0.968 for x in mismatch[1:]), mismatch
    with pytest.raises(ValueError, match="'apart': no bursts in this series"):
        idle_state.by_minute(json.loads((ROOT / "data" / "c1_idle_state_mysql_1724.json").read_text()), "apart")
