"""bench/probe_flags.py on shipped builds (data/README.md, "Does one slow probe mean a slow
measurement?" and "Which probe saw it?"): for C1's 3-s bursts one slow probe says nothing, for C2's
scans it does; on the Intel host of model 167 a probe after a scan says less than the one before,
on the model-207 host both say as much, which is why the flag takes either."""

from __future__ import annotations

import pytest

from conftest import bench_module

BUILDS = ["CV", "CW", "CX", "CY", "CZ", "DA", "DB", "DC", "DD", "DE", "DF", "DG", "DH", "DI", "DJ", "DK", "DL"]
MODEL_207 = ["BC", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BK", "BL", "BM", "BN", "BO", "BP", "BQ", "BR", "BS"]


def _rows(capsys, argv) -> dict:
    assert bench_module("probe_flags").main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    return {tuple(parts[:2]): [float(x) for x in parts[2:]] for parts in map(str.split, lines[1:])}


def test_one_slow_probe_flags_c1_bursts_that_ran_normally_and_c2_scans_that_ran_slower(capsys):
    rows = {(claim, int(count)): row for (claim, count), row in _rows(capsys, ["--builds", *BUILDS]).items()}
    assert {k for k in rows if k[0] in ("charset_mismatch", "collation_cost")} == {
        ("charset_mismatch", 0), ("charset_mismatch", 1), ("collation_cost", 0), ("collation_cost", 1),
        ("collation_cost", 2)}
    assert {k[0] for k in rows} == {"charset_mismatch", "collation_cost", "insert_57_vs_80", "binlog_default"}
    n, mean, _, over = rows["charset_mismatch", 1]
    assert n == 18 and mean < 0 and over == 0          # not slower than their starts' other bursts
    assert rows["charset_mismatch", 0][3] > 0.03         # while some unflagged bursts were
    n, mean, _, over = rows["collation_cost", 1]
    assert n == 523 and mean == pytest.approx(0.0132, abs=1e-4) and over > 1.5 * rows["collation_cost", 0][3]
    assert rows["collation_cost", 2][1] > mean > rows["collation_cost", 0][1]


def test_which_probe_saw_a_slow_scan_depends_on_the_host(capsys):
    # model 167 (CV-DL): the 333 scans flagged by their probe before alone ran 1.85% slower than their
    # start's median, the 190 flagged by the probe after alone 0.41%, as the unflagged (0.40%)
    rows = _rows(capsys, ["--builds", *BUILDS, "--by", "side"])
    before, after, none = (rows["collation_cost", side] for side in ("before", "after", "none"))
    assert (before[0], after[0]) == (333, 190)
    assert before[1] > after[1] + 0.01 and abs(after[1] - none[1]) < 0.002
    # model 207 (BC-BS): a probe after says as much as one before: C2 and C3's measurements flagged
    # by it alone ran 3.5% and 19.5% slower, the unflagged -4.5% and 0.7%
    rows = _rows(capsys, ["--builds", *MODEL_207, "--by", "side"])
    for claim, margin in (("collation_cost", 0.05), ("insert_57_vs_80", 0.15)):
        assert rows[claim, "after"][1] > rows[claim, "none"][1] + margin
        assert rows[claim, "after"][3] > 1.2 * rows[claim, "none"][3]


def test_an_unknown_build_is_named():
    with pytest.raises(SystemExit, match="data/quick_builds.json: no build ZZ"):
        bench_module("probe_flags").main(["--builds", "ZZ"])
