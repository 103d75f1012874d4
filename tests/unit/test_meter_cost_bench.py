"""bench/meter_cost.py's summary on a simulated series: medians per part and setting, and their ratio."""

from __future__ import annotations

import random

from conftest import bench_module


def test_summary_is_the_median_of_each_part_both_ways():
    rng = random.Random(7)
    samples = []
    for rnd in range(101):
        for part, idle_s, factor in (("status", 0.0004, 10.0), ("machine", 0.0001, 1.0)):
            samples.append({"round": rnd, "setting": "idle", "part": part,
                            "seconds": idle_s * rng.uniform(0.5, 1.5), "busy_s": None})
            samples.append({"round": rnd, "setting": "after_busy", "part": part,
                            "seconds": idle_s * factor * rng.uniform(0.5, 1.5), "busy_s": 0.03})
    rows = {row["part"]: row for row in bench_module("meter_cost").summary({"samples": samples})}
    assert set(rows) == {"status", "machine"}
    assert rows["status"]["n"] == 101 and abs(rows["status"]["idle_ms"] - 0.4) < 0.05
    assert 8 < rows["status"]["ratio"] < 12 and 0.8 < rows["machine"]["ratio"] < 1.25
    for row in rows.values():
        assert abs(row["after_busy_ms"] / row["idle_ms"] - row["ratio"]) < 0.01


def test_the_shipped_series_reads_as_data_readme_says():
    # data/README.md, "What the meter's snapshots cost": 200 rounds a server at 20:48, the faster
    # state; right after a 25-40 ms statement every part about twice as slow, getrusage 3-4x
    import json

    from conftest import ROOT
    series = json.loads((ROOT / "data" / "meter_cost_2048.json").read_text())
    meter_cost = bench_module("meter_cost")
    assert [one["target"] for one in series] == ["mariadb", "mysql"]
    for one in series:
        assert one["rounds"] == 200 and len(one["samples"]) == 200 * 2 * 8
        busy = [s["busy_s"] for s in one["samples"] if s["setting"] == "after_busy"]
        assert 0.025 < min(busy) and max(busy) < 0.041
        rows = {row["part"]: row for row in meter_cost.summary(one)}
        assert all(1.8 <= rows[p]["ratio"] <= 2.2 for p in ("Meter.start", "Meter.stop", "status")), one["target"]
        assert rows["client_times"]["ratio"] > 3
    mariadb, mysql = ({row["part"]: row for row in meter_cost.summary(one)} for one in series)
    assert round(mariadb["Meter.start"]["after_busy_ms"] + mariadb["Meter.stop"]["after_busy_ms"], 1) == 3.7
    assert round(mysql["Meter.start"]["after_busy_ms"] + mysql["Meter.stop"]["after_busy_ms"], 1) == 5.5
