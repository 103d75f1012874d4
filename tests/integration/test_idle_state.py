"""bench/idle_state.py on real MariaDB: C1's interleaved sysbench in one server start, every arm's
bursts with their per-vCPU accounts, the summary of each arm, and a stored series never overwritten."""

from __future__ import annotations

import json

import pytest

from conftest import bench_module


def test_every_arm_bursts_and_is_summarized(tmp_path, capsys, mariadbd):
    idle_state = bench_module("idle_state")
    out = tmp_path / "series.json"
    assert idle_state.main(["--minutes", "0.1", "--profile", "smoke", "--out", str(out)]) == 0
    series = json.loads(out.read_text())
    arms = {b["arm"] for b in series["bursts"]}
    assert arms == set(idle_state.DEFAULT_ARMS)
    levels = {"charset=latin1", "charset=utf8mb4", "charset=mismatch"}
    for b in series["bursts"]:
        assert set(b["qps"]) == levels and all(q > 0 for q in b["qps"].values())
        assert len(b["busy_per_cpu"]) >= 2 and 0 <= b["busy"] <= 1
        assert b["server_cpu_s"] > 0 and b["client_cpu_s"] > 0
        assert 0 < b["server_system_s"] < b["server_cpu_s"]
    summary = {row["arm"]: row for row in series["summary"]}
    assert set(summary) == arms
    assert all(0 < row["server_system_share"] < 1 for row in summary.values())
    assert set(summary["unpinned"]["ratio_to_charset=latin1"]) == {"charset=utf8mb4", "charset=mismatch"}
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == series["summary"]
    # a stored series is never overwritten, and `--read` summarizes it again without a server
    with pytest.raises(SystemExit, match="exists; measured data is never overwritten"):
        idle_state.main(["--minutes", "0.1", "--out", str(out)])
    assert idle_state.main(["--read", str(out)]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == series["summary"]


def test_arms_can_be_chosen_and_a_wrong_one_is_named(tmp_path, capsys, mariadbd):
    idle_state = bench_module("idle_state")
    out = tmp_path / "series.json"
    assert idle_state.main(["--minutes", "0.25", "--profile", "smoke", "--arms", "one vCPU 1", "unpinned",
                            "--out", str(out)]) == 0
    series = json.loads(out.read_text())
    assert series["arms"]["one vCPU 1"] == {"server_cpus": [1], "client_cpus": [1], "threads": 2}
    assert {b["arm"] for b in series["bursts"]} == {"one vCPU 1", "unpinned"}
    capsys.readouterr()
    # each arm's bursts split by their speed; an arm with too few bursts is named, not split
    assert idle_state.main(["--read", str(out), "--by-speed"]) == 0
    split = [json.loads(line) for line in capsys.readouterr().out.splitlines()][len(series["summary"]):]
    assert [row["arm"] for row in split] == ["one vCPU 1", "unpinned"]
    assert all(row["by_speed"]["slow"]["qps"] <= row["by_speed"]["fast"]["qps"] for row in split)
    series["bursts"] = [b for b in series["bursts"] if b["arm"] == "unpinned"][:3]
    out.with_name("three.json").write_text(json.dumps(series))
    assert idle_state.main(["--read", str(out.with_name("three.json")), "--by-speed"]) == 0
    assert "not split by speed: arm 'unpinned': needs four bursts or more" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        idle_state.main(["--arms", "two vCPUs"])
    assert "invalid choice: 'two vCPUs'" in capsys.readouterr().err


def test_an_arm_may_change_sysbench_and_loads_its_own_tables(tmp_path, mariadbd):
    # the arms that tell apart the full profile's tables from its bursts' length: quick's tables are
    # loaded beside the profile's (smoke here: 1,000 rows, 1-s bursts) in the same server start
    idle_state = bench_module("idle_state")
    out = tmp_path / "series.json"
    arms = ["one vCPU 1, 3-s bursts", "one vCPU 1, quick's tables"]
    assert idle_state.main(["--minutes", "0.05", "--profile", "smoke", "--arms", *arms, "--out", str(out)]) == 0
    series = json.loads(out.read_text())
    assert series["arms"]["one vCPU 1, 3-s bursts"]["sysbench"] == {"time": 3, "warmup_time": 1}
    assert series["arms"]["one vCPU 1, quick's tables"]["sysbench"] == {"tables": 2, "table_size": 10000}
    assert series["arms"]["one vCPU 1, 3-s bursts"]["tables"] == [2, 1000]       # the smoke profile's
    assert series["arms"]["one vCPU 1, quick's tables"]["tables"] == [2, 10000]
    seconds = {arm: [b["seconds"] for b in series["bursts"] if b["arm"] == arm] for arm in arms}
    assert all(2.9 < s < 4 for s in seconds["one vCPU 1, 3-s bursts"])
    assert seconds["one vCPU 1, quick's tables"] and all(s < 2 for s in seconds["one vCPU 1, quick's tables"])
    assert all(q > 0 for b in series["bursts"] for q in b["qps"].values())
