"""bench/c2_standalone.py, C2's query outside the harness, runs on a real MariaDB: one line per
collation, ns per row and the ratio to utf8mb3_general_ci (README: the harness's MySQL readings at
larger tables against the server's own), in one schema or in the harness's layout."""

from __future__ import annotations

import re

import pytest

from conftest import bench_module

HARNESS_LIKE = ["--restart", "--per-table-connections", "--probe", "5", "--meter", "--session", "--schema-per-table"]


@pytest.mark.parametrize("options", [[], HARNESS_LIKE])
def test_standalone_scan_prints_every_collation_against_utf8mb3(capsys, mariadbd, options):
    assert bench_module("c2_standalone").main(["--target", "mariadb", "--rows", "2000", "--rounds", "5",
                                                *options]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == ["latin1_swedish_ci", "utf8mb3_general_ci", "utf8mb4_general_ci", "utf8mb4_unicode_ci",
                     "utf8mb4_uca1400_ai_ci"]
    ratios = {line.split()[0]: float(re.search(r"utf8mb3_general_ci (\d+\.\d+)$", line).group(1)) for line in lines}
    assert ratios["utf8mb3_general_ci"] == 1.0 and all(0.2 < r < 5 for r in ratios.values())
