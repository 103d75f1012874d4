"""bench/runs_together.py on shipped builds (data/README.md, "The edge comparisons, runs as the top
level"): single runs of MySQL's C1 read mismatch / latin1 at 0.96-0.98 against its 0.952 edge,
and a handful of runs analysed together settle it."""

from __future__ import annotations

import pytest

from conftest import bench_module

BUILDS = ["DM", "DN", "DO", "DP", "DQ"]


def test_single_runs_and_fours_read_mysqls_c1_edge_comparison_alike_and_pairs_read_wider(capsys):
    bench = bench_module("runs_together")
    by_build = bench.runs_by_build(BUILDS, "charset_mismatch")
    assert sorted(by_build) == BUILDS and all(len(runs) == 2 for runs in by_build.values())
    table = bench.together(by_build, "mismatch_vs_latin1", [1, 2, 4], draws=4, seed=20261130)
    mysql = table[table["target"] == "mysql"].set_index("size")
    assert mysql["subsets"].to_dict() == {1: 5, 2: 4, 4: 4}
    assert (mysql.loc[[1, 4], "contradicted"] == mysql.loc[[1, 4], "subsets"]).all()
    # runs are the units: two runs give df 1, so a pair reads wider than either run alone
    assert mysql.loc[2, "median_half_width"] > 3 * mysql.loc[1, "median_half_width"]
    assert mysql.loc[4, "median_half_width"] < mysql.loc[2, "median_half_width"]
    assert bench.main(["--builds", *BUILDS, "--experiment", "charset_mismatch", "--comparison",
                       "mismatch_vs_latin1", "--sizes", "1", "--draws", "1"]) == 0
    out = capsys.readouterr().out
    assert "all 5 builds together:" in out and "contradicted" in out


def test_a_wrong_comparison_size_or_draw_count_is_a_one_line_error(capsys):
    bench = bench_module("runs_together")
    argv = ["--builds", "DP", "DQ", "--experiment", "charset_mismatch"]
    assert bench.main([*argv, "--comparison", "nope"]) == 2
    assert "has no comparison 'nope'" in capsys.readouterr().err
    assert bench.main([*argv, "--comparison", "mismatch_vs_latin1", "--sizes", "3"]) == 2
    assert "3 is not between 1 and the 2 builds named" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main([*argv, "--comparison", "mismatch_vs_latin1", "--draws", "0"])
