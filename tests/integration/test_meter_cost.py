"""bench/meter_cost.py on real MariaDB: every part of the meter's snapshots timed both ways, after
a busy statement that really ran, the summary printed, and a stored series never overwritten."""

from __future__ import annotations

import json

import pytest

from conftest import bench_module


def test_every_part_is_timed_idle_and_after_a_busy_statement(tmp_path, capsys, mariadbd):
    meter_cost = bench_module("meter_cost")
    out = tmp_path / "cost.json"
    assert meter_cost.main(["--target", "mariadb", "--rounds", "3", "--busy-ms", "5", "--out", str(out)]) == 0
    (series,) = json.loads(out.read_text())
    assert series["target"] == "mariadb" and series["server_version"]
    parts = {"status", "server_times", "client_times", "user_writes", "machine", "round_trip",
             "Meter.start", "Meter.stop"}
    counted = {}
    for s in series["samples"]:
        counted[s["part"], s["setting"]] = counted.get((s["part"], s["setting"]), 0) + 1
        assert s["seconds"] > 0
        assert (s["busy_s"] is None) == (s["setting"] == "idle")
        if s["busy_s"] is not None:
            assert s["busy_s"] > 0.001   # the busy statement did run: BENCHMARK rounds, calibrated
    assert counted == {(p, setting): 3 for p in parts for setting in ("idle", "after_busy")}
    assert {row["part"] for row in series["summary"]} == parts
    assert all(row["n"] == 3 and row["idle_ms"] > 0 and row["ratio"] > 0 for row in series["summary"])
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == [{"target": "mariadb", **row} for row in series["summary"]]
    with pytest.raises(SystemExit, match="exists; measured data is never overwritten"):
        meter_cost.main(["--target", "mariadb", "--rounds", "1", "--out", str(out)])
    assert meter_cost.main(["--read", str(out)]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == printed
