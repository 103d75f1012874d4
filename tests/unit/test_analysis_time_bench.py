"""bench/analysis_time.py: this tree's analysis timed against another commit's, alternated in one
run (README, "The command line"). Timings are never asserted: only that both trees ran their own
code on the same runs, and that bad input is one line."""

from __future__ import annotations

import re

import pytest

from conftest import bench_module


def test_both_trees_analyse_the_same_build_and_a_ratio_is_printed(capsys):
    bench = bench_module("analysis_time")
    assert bench.main(["--against", "HEAD", "--builds", "I", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+1\s+\d+\.\d\d\s+\d+\.\d\d\s+\d\.\d{3}$", out, re.M), out
    assert "builds I: this tree / HEAD median" in out


def test_an_unknown_build_revision_or_round_count_is_one_line(capsys):
    bench = bench_module("analysis_time")
    with pytest.raises(SystemExit):
        bench.main(["--against", "HEAD", "--builds", "ZZ"])
    assert "data/quick_builds.json has no build ZZ" in capsys.readouterr().err
    with pytest.raises(SystemExit, match=r"--against no-such-revision: fatal: invalid reference"):
        bench.main(["--against", "no-such-revision", "--builds", "I", "--rounds", "1"])
    with pytest.raises(SystemExit):
        bench.main(["--against", "HEAD", "--rounds", "0"])
    assert "--rounds takes 1 or more" in capsys.readouterr().err
