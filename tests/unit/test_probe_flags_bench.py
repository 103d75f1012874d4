"""bench/probe_flags.py on the shipped one-vCPU builds (data/README.md, "Does one slow probe mean a
slow measurement?"): for C1's 3-s bursts one slow probe says nothing, for C2's scans it does."""

from __future__ import annotations

import pytest

from conftest import bench_module

BUILDS = ["CV", "CW", "CX", "CY", "CZ", "DA", "DB", "DC", "DD", "DE", "DF", "DG", "DH", "DI", "DJ", "DK", "DL"]


def test_one_slow_probe_flags_c1_bursts_that_ran_normally_and_c2_scans_that_ran_slower(capsys):
    probe_flags = bench_module("probe_flags")
    assert probe_flags.main(["--builds", *BUILDS]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {(parts[0], int(parts[1])): [float(x) for x in parts[2:]] for parts in map(str.split, lines[1:])}
    assert set(rows) == {("charset_mismatch", 0), ("charset_mismatch", 1),
                         ("collation_cost", 0), ("collation_cost", 1), ("collation_cost", 2)}
    n, mean, _, over = rows["charset_mismatch", 1]
    assert n == 18 and mean < 0 and over == 0          # not slower than their starts' other bursts
    assert rows["charset_mismatch", 0][3] > 0.03         # while some unflagged bursts were
    n, mean, _, over = rows["collation_cost", 1]
    assert n == 523 and mean == pytest.approx(0.0132, abs=1e-4) and over > 1.5 * rows["collation_cost", 0][3]
    assert rows["collation_cost", 2][1] > mean > rows["collation_cost", 0][1]


def test_an_unknown_build_is_named():
    with pytest.raises(SystemExit, match="data/quick_builds.json: no build ZZ"):
        bench_module("probe_flags").main(["--builds", "ZZ"])
