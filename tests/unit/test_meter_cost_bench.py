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
