"""The quick builds shipped for issue 12's agreement check (data/quick_builds.json): every listed
run is in data/raw, intact, quick, and each build holds one run per experiment and server, so
`bench/precision.py --builds` re-reads every pair from a clean clone, and what data/README.md (the
builds' record) and the README say of those pairs and of the builds analysed together holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from claimlab import report, stats, store
from claimlab.claims import load_claims
from claimlab.errors import ClaimlabError
from claimlab.stats.observations import fast_state
from conftest import ROOT, bench_module

# The builds made on the host of 2026-11-23/25 (its CPU family was not recorded; kernel
# 6.18.44-fc-v669) with the fixed quick designs, and those of the family-26 EPYC host of
# 2026-11-25 19:20-21:08 with C2 and C3 sequential on MariaDB (data/README.md, "A second host").
EARLIER_HOST = ["I", "J", "K", "L", "M", "N", "Q", "V"]
FAMILY_26 = ["X", "Y", "Z", "AA"]
# The same host, 2026-11-25 23:04-23:36: C2's quick tables at 400,000 rows, the look beside the
# next start, MySQL's data directories cached (data/README.md, "Less around the measurement")
ROWS_400K = ["AB", "AC", "AD", "AE"]
# 2026-11-26 01:19-04:16: the tables loaded before the runs (claimlab.preload); AF the first build
# after the cache was emptied (data/README.md, "Loading is set-up"), AI the next session's first
PRELOADED = ["AF", "AG", "AH", "AI"]
# 2026-11-26 06:34, 07:13, 07:47 and 08:17: C2 on MySQL at five blocks of two server starts
# together (data/README.md, "Two MySQL starts per block"); AK-AM with the first unit's warm-up one server
# after the other
TWO_STARTS = ["AJ", "AK", "AL", "AM"]
# 2026-11-26 09:19, the next session: the first unit's warm-up in the recorded round order
IN_ROUND_ORDER = ["AN"]


RAW = ROOT / "data" / "raw"


def _c2_mysql_run(dirs: list) -> Path:
    """A build's C2 run on MySQL."""
    (path,) = [d for d in dirs if store.read_manifest(d)["experiment"] == "collation_cost"
               and store.read_manifest(d)["default_target"] == "mysql"]
    return path


def _per_start(path: Path) -> pd.DataFrame:
    """Each server start's fastest tenth of scans (seconds), a column per collation."""
    df = store.read_results(path)
    scans = df[df["metric"] == "elapsed_s"]
    return scans.groupby(["collation", "repetition"])["value"].quantile(0.1).unstack("collation")


_TABLES: dict[str, pd.DataFrame] = {}   # build -> its precision table (_tables)


def _tables(builds: list[str]) -> dict[str, pd.DataFrame]:
    """Each build's precision table, read once per test session: several tests compare the same
    builds (callers only derive new frames from them)."""
    precision = bench_module("precision")
    missing = [name for name in builds if name not in _TABLES]
    if missing:
        _TABLES.update({name: precision.table(dirs) for name, dirs in precision.build_runs(missing, None).items()})
    return {name: _TABLES[name] for name in builds}


def _shipped(run_id: str) -> dict:
    """A shipped run's manifest, once its checksums are seen to match it."""
    path = store.find_run(run_id, RAW)
    assert store.verify(path) == [], run_id
    return store.read_manifest(path)


def test_every_shipped_quick_build_is_whole_and_intact():
    builds = json.loads((ROOT / "data" / "quick_builds.json").read_text())
    assert builds, "data/quick_builds.json lists no build"
    experiments = set(report.NOTEBOOKS)
    for name, build in builds.items():
        assert set(build) == {"made", "runs"}, name
        cells = set()
        for run_id in build["runs"]:
            manifest = _shipped(run_id)
            assert manifest["profile"] == "quick", (name, run_id)
            cells.add((manifest["experiment"], manifest["default_target"]))
        assert cells == {(e, t) for e in experiments for t in ("mariadb", "mysql")}, name


def test_the_readmes_agreement_of_two_shipped_builds_is_rerun_from_their_runs(capsys):
    precision = bench_module("precision")
    assert precision.main(["--builds", "I", "J"]) == 0
    out = capsys.readouterr().out
    # data/README.md, "Do two quick builds agree?": I vs J, 16 of 18 verdicts and labels when read
    # with the band drawn from the run's fastest; 17 of 18 re-read with each start's own band
    # ("The fast state, start by start"); the comparison that differs is listed with each
    # build's interval
    row = next(line.split() for line in out.splitlines() if line.startswith("I vs J"))
    assert row[3:8] == ["18", "17", "17", "1", "0"], out
    assert "C2 unicode_vs_general mariadb:" in out and "J: 1.059 [1.045, 1.073] inconclusive" in out


def test_an_unlisted_build_is_named_in_one_line():
    with pytest.raises(ClaimlabError, match=r"data/quick_builds.json: no build ZZ \(it lists I, J"):
        bench_module("precision").main(["--builds", "I", "ZZ"])
    with pytest.raises(ClaimlabError, match=r"--builds AJ: give two builds or more"):
        bench_module("precision").main(["--builds", "AJ"])
    with pytest.raises(ClaimlabError, match=r"--calibration reads the shipped quick builds: add --builds"):
        bench_module("precision").main(["--calibration", "--run", "20261128T102511Z-1c4e4c"])


def test_the_shipped_builds_analysed_together_decide_every_comparison():
    # data/README.md, "Analysed together, runs as the top level": what one quick run leaves near an edge,
    # the shipped builds of one host settle, runs as the top level
    builds = bench_module("precision").build_runs(EARLIER_HOST, None)
    claims = load_claims(ROOT / "data" / "claims.yaml")
    by_claim: dict[str, list] = {}
    for path in (path for paths in builds.values() for path in paths):
        by_claim.setdefault(store.read_manifest(path)["claim"], []).append(store.read_results(path))
    assert sorted(by_claim) == ["C1", "C2", "C3", "C4"]
    for claim_id, frames in by_claim.items():
        table = stats.analyze(pd.concat(frames), claims[claim_id])
        tested = table[table["verdict"] != "not_tested"]
        assert (tested["n_runs"] == len(builds)).all(), claim_id
        undecided = tested[(tested["verdict"] == "inconclusive") | (tested["edge_label"] != "")]
        assert undecided.empty, undecided[["comparison", "target", "estimate", "ci_low", "ci_high"]]


def test_the_predicted_agreement_of_two_builds_follows_the_shipped_builds():
    # data/README.md, "What it would take": per comparison and server, the share of pairs of shipped
    # builds whose labels agreed, against stats.agreement_chance from the builds pooled (builds of
    # one design: the current quick profiles)
    precision = bench_module("precision")
    tables = _tables(EARLIER_HOST)
    chance = precision.replication(tables).set_index(["claim", "comparison", "target"])
    pairs = precision.builds_agreement(tables)
    differing_pairs = (chance["agreed"] < 1).sum()
    assert len(chance) == 18 and differing_pairs >= 1
    # the pairs' label differences, counted per comparison, are the --builds table's
    n_pairs = len(pairs)
    assert round(((1 - chance["agreed"]) * n_pairs).sum()) == pairs["label_differs"].sum()
    # calibrated within what six builds can tell, and beyond the design where builds disagreed
    assert ((chance["chance"] - chance["agreed"]).abs() < 0.25).all(), chance
    assert (chance.loc[chance["agreed"] < 1, "blocks_for_goal"].fillna(1e9)
            > chance.loc[chance["agreed"] < 1, "blocks"]).all()


def test_the_family_26_builds_agree_but_on_one_comparison_and_differ_from_the_earlier_host(capsys):
    # data/README.md, "A second host": four builds on the family-26 host, C2 and C3 sequential on MariaDB;
    # only C2 unicode/general on MariaDB differs (X ran to its cap of 36 starts at 1.051, on the
    # band's edge; 1.055, marked near it, re-read with each start's own band), and C2's MySQL
    # ratio there is 1.44-1.48 against 1.76-1.84 on the earlier host
    precision = bench_module("precision")
    precision.print_builds(_tables(FAMILY_26))
    out = capsys.readouterr().out
    rows = {" ".join(line.split()[:3]): line.split()[3:8] for line in out.splitlines() if " vs " in line[:8]}
    assert rows == {"X vs Y": ["18", "17", "17", "1", "1"], "X vs Z": ["18", "17", "17", "1", "1"],
                    "X vs AA": ["18", "17", "17", "1", "1"], "Y vs Z": ["18", "18", "18", "0", "0"],
                    "Y vs AA": ["18", "18", "18", "0", "0"], "Z vs AA": ["18", "18", "18", "0", "0"]}, out
    assert "C2 unicode_vs_general mariadb:" in out and "X: 1.055 [1.050, 1.061] inconclusive (near an edge)" in out
    tables = _tables(FAMILY_26 + ["V"])
    for name, table in tables.items():
        main = table[(table["comparison"] == "uca_ai_vs_utf8mb3") & (table["target"] == "mysql")]["estimate"].item()
        assert (1.76 <= main <= 1.84) if name == "V" else (1.43 <= main <= 1.49), (name, main)
        c2 = table[(table["claim"] == "C2") & (table["target"] == "mariadb")]
        blocks = c2["n_blocks"].max()
        assert (c2["stop_rule"].isna().all() and blocks == 12) if name == "V" else (12 <= blocks <= 36), name


def test_the_family_26_full_runs_are_whole_intact_and_say_their_processor():
    # data/README.md, "Full runs on the family-26 host": one full run per claim and server, each recording
    # the processor it ran on; what its table says of C2 on MySQL holds: the 20:16 run read
    # in a machine state ("For half an hour, one MySQL ratio moved"), its 22:22 rerun outside it
    listed = json.loads((ROOT / "data" / "full_runs_family26.json").read_text())
    assert set(listed["runs"]) == set(report.NOTEBOOKS)
    for experiment, run_ids in listed["runs"].items():
        targets = set()
        for run_id in run_ids:
            manifest = _shipped(run_id)
            assert manifest["profile"] == "full" and manifest["experiment"] == experiment, run_id
            assert manifest["provenance"]["host"]["cpu"]["family"] == "26", run_id
            targets.add(manifest["default_target"])
        assert targets == {"mariadb", "mysql"}, experiment
    (c2,) = report.analyze_runs(listed["runs"]["collation_cost"], ROOT / "data" / "raw")
    mysql = c2.table[c2.table["target"] == "mysql"].set_index("comparison")
    assert 1.30 < mysql.loc["uca_ai_vs_utf8mb3", "estimate"] < 1.33
    assert mysql.loc["utf8mb4_general_vs_utf8mb3", "verdict_label"] == "contradicted: lower than 0.95"
    (rerun_id,) = listed["rerun"]["runs"]["collation_cost"]
    cpu = [_shipped(run_id)["provenance"]["host"]["cpu"] for run_id in (listed["runs"]["collation_cost"][1], rerun_id)]
    assert cpu[0] == cpu[1]
    (again,) = report.analyze_runs([rerun_id], ROOT / "data" / "raw")
    again = again.table.set_index("comparison")
    assert 1.42 < again.loc["uca_ai_vs_utf8mb3", "estimate"] < 1.47
    assert again.loc["utf8mb4_general_vs_utf8mb3", "verdict_label"] == "supported: no difference within ±5%"
    # analysed together, the runs' difference is between-run spread, several times a run's own
    (both,) = report.analyze_runs([listed["runs"]["collation_cost"][1], rerun_id], ROOT / "data" / "raw")
    general = both.table.set_index("comparison").loc["utf8mb4_general_vs_utf8mb3"]
    assert general["n_runs"] == 2 and general["verdict"] == "inconclusive"


def test_the_400k_builds_agree_on_every_verdict_and_their_c2_main_estimates_within_3_percent(capsys):
    # data/README.md, "Less around the measurement": six pairs, 108 of 108 verdicts alike; the only label
    # that differs is C4's size on MySQL, marked near the published 2.85; C2's main comparison and
    # utf8mb4_general/utf8mb3 within 1.2% over the four builds on both servers; unicode/general moved
    # by more than 3%: 3.4% on MySQL, 8% on MariaDB (AB 1.060, AC-AE 1.133-1.147)
    precision = bench_module("precision")
    precision.print_builds(_tables(ROWS_400K))
    out = capsys.readouterr().out
    assert "all 6 pairs: same verdict 108 of 108, same label 104" in out
    assert out.count("C4 binlog_on_vs_off mysql:") == 1 and "C2 " not in out.split("How often")[0].split("pairs:")[1]
    tables = _tables(ROWS_400K)
    c2 = pd.concat([table.assign(build=name) for name, table in tables.items()])
    c2 = c2[c2["claim"] == "C2"].pivot_table(index=["comparison", "target"], columns="build", values="estimate")
    spread = c2.max(axis=1) / c2.min(axis=1) - 1
    assert (spread.drop("unicode_vs_general", level="comparison") < 0.012).all(), spread
    assert 0.03 < spread[("unicode_vs_general", "mysql")] < 0.04
    assert spread[("unicode_vs_general", "mariadb")] > 0.06
    unicode = c2.loc[("unicode_vs_general", "mariadb")]
    assert unicode["AB"] < 1.07 < unicode.drop("AB").min()


def test_the_preloaded_builds_agree_with_the_400k_ones_and_read_unicode_at_its_lower_level(capsys):
    # data/README.md, "Loading is set-up": AB-AI, 28 pairs, 504 of 504 verdicts alike, the labels that
    # differ all C4's size on MySQL; MariaDB's unicode/general reads 1.06 in AF-AI as in AB,
    # against 1.13-1.15 in AC-AE, while C2's other comparisons stay within 1.5% (AG's MySQL
    # utf8mb4_general/utf8mb3 0.990, the lowest; 1.6% and 0.989 re-read with each start's own band)
    precision = bench_module("precision")
    precision.print_builds(_tables([*ROWS_400K, *PRELOADED]))
    out = capsys.readouterr().out
    assert "all 28 pairs: same verdict 504 of 504, same label 492" in out
    assert out.count("C4 binlog_on_vs_off mysql:") == 1 and "C2 " not in out.split("How often")[0].split("pairs:")[1]
    tables = _tables([*ROWS_400K, *PRELOADED])
    c2 = pd.concat([table.assign(build=name) for name, table in tables.items()])
    c2 = c2[c2["claim"] == "C2"].pivot_table(index=["comparison", "target"], columns="build", values="estimate")
    spread = c2.max(axis=1) / c2.min(axis=1) - 1
    assert (spread.drop("unicode_vs_general", level="comparison") < 0.016).all(), spread
    unicode = c2.loc[("unicode_vs_general", "mariadb")]
    assert (unicode[["AB", *PRELOADED]] < 1.07).all() and (unicode[["AC", "AD", "AE"]] > 1.12).all(), unicode
    # the must-show "C2 estimates within 3%" per pair: ten of 28 pairs meet it; the fifteen that
    # span MariaDB's two levels miss it on unicode/general, and MySQL's unicode/general misses it
    # by 0.1-1.1 points in five (AI, with two of its five starts in MySQL's unicode state, in three;
    # re-read with each start's own band, in six, AC vs AE the added one)
    over = precision.builds_agreement(tables).set_index("builds")["c2_over_3pct"]
    assert (over == "-").sum() == 10, over
    assert over[over != "-"].str.fullmatch(r"unicode_vs_general \w+ [\d.]+%(, unicode_vs_general \w+ [\d.]+%)?").all()
    mysql = over.str.contains("mysql")
    assert mysql.sum() == 6 and mysql[["AB vs AI", "AE vs AI", "AH vs AI", "AC vs AE"]].all(), over


def test_mysqls_unicode_scan_takes_a_slower_state_for_a_whole_server_start():
    # data/README.md, "Loading is set-up": in AB-AI's MySQL C2 runs, 4 of 40 server starts scanned the
    # utf8mb4_unicode_ci table 6-9% slower than their run's median start (each start's fastest
    # tenth of scans; the rest within 3%), while the same starts' utf8mb4_general_ci scans did not;
    # AI drew two of them, and its unicode/general read 1.32 against 1.26-1.31
    builds = bench_module("precision").build_runs([*ROWS_400K, *PRELOADED], None)
    high = {}
    for name, dirs in builds.items():
        starts = _per_start(_c2_mysql_run(dirs))
        level = starts / starts.median()
        assert (level["utf8mb4_general_ci"].between(0.97, 1.03)).all(), (name, level)
        unicode = level["utf8mb4_unicode_ci"]
        assert (unicode[unicode <= 1.04].between(0.97, 1.03)).all(), (name, unicode)
        high[name] = int((unicode > 1.06).sum())
        assert ((unicode > 1.03) == (unicode > 1.06)).all(), (name, unicode)   # two states, no middle
    assert sum(high.values()) == 4 and high["AI"] == 2 and high["AC"] == high["AF"] == 1, high


def test_c2s_unicode_level_moved_with_the_hour_not_with_the_tables_size():
    # data/README.md, "The quick table's size": alternated at 23:53-23:57, both sizes read MariaDB's
    # unicode/general at 1.136-1.157, where 200,000-row runs had read 1.05-1.07 until 22:43
    listed = json.loads((ROOT / "data" / "c2_sizes_family26.json").read_text())
    unicode = {}
    for rows, run_ids in listed["runs"].items():
        for run_id in run_ids:
            manifest = _shipped(run_id)
            assert manifest["conditions"][0]["workloads"]["varchar_scan"]["rows"] == int(rows), run_id
            (c2,) = report.analyze_runs([run_id], ROOT / "data" / "raw")
            table = c2.table[c2.table["target"] == "mariadb"].set_index("comparison")
            unicode.setdefault(rows, []).append(table.loc["unicode_vs_general", "estimate"])
    assert all(1.13 < value < 1.16 for values in unicode.values() for value in values), unicode
    assert abs(sum(unicode["400000"]) / 3 / (sum(unicode["200000"]) / 3) - 1) < 0.02, unicode


def test_a_second_set_of_full_runs_on_the_family_26_host_agrees_but_on_three_c2_comparisons(capsys):
    # data/README.md, "Full runs on the family-26 host": made 3.5 hours after the first set; 15 of 18
    # verdicts alike, the three that differ are C2's (MySQL's utf8mb3 state of 20:13, MariaDB's
    # unicode level of the hour, and utf8mb4_general/utf8mb3 on MariaDB by its edge); C4 at the full
    # profile within 1% on both servers
    listed = json.loads((ROOT / "data" / "full_runs_family26.json").read_text())
    first = [r for runs in listed["runs"].values() for r in runs]
    second = [r for runs in listed["second"]["runs"].values() for r in runs]
    for experiment, run_ids in listed["second"]["runs"].items():
        for run_id in run_ids:
            manifest = _shipped(run_id)
            assert manifest["profile"] == "full" and manifest["experiment"] == experiment, run_id
            assert manifest["provenance"]["git"]["dirty"] is False, run_id
    precision = bench_module("precision")
    assert precision.main(["--data", str(ROOT / "data" / "raw"), "--run", *first, "--against", *second]) == 0
    out = capsys.readouterr().out
    assert "same verdict: 15 of 18" in out
    differing = {tuple(line.split()[:3]) for line in out.splitlines()
                 if line.strip().startswith("C") and line.split()[-2] == "False"}
    assert differing == {("C2", "utf8mb4_general_vs_utf8mb3", "mariadb"), ("C2", "unicode_vs_general", "mariadb"),
                         ("C2", "utf8mb4_general_vs_utf8mb3", "mysql")}, out
    c4_runs = listed["second"]["runs"]["binlog_default"]
    table = precision.table([store.find_run(r, ROOT / "data" / "raw") for r in c4_runs])
    c4 = table[table["claim"] == "C4"]
    assert len(c4) == 2 and (c4["ci_high"] / c4["ci_low"] < 1.02 ** 2).all()


def test_mariadbs_unicode_level_is_shared_by_a_runs_starts_and_changes_between_runs():
    # data/README.md, "What MariaDB's unicode level is not": 20:09 and 20:13 low, 20:11 between them high,
    # every one of its twelve starts above every start of the low runs but one; 00:57 low again
    listed = json.loads((ROOT / "data" / "c2_unicode_level.json").read_text())["runs"]
    estimate, starts = {}, {}
    for made, run_id in listed.items():
        manifest = _shipped(run_id)
        assert manifest["default_target"] == "mariadb" and manifest["profile"] == "quick", run_id
        (c2,) = report.analyze_runs([run_id], ROOT / "data" / "raw")
        estimate[made] = c2.table.set_index("comparison").loc["unicode_vs_general", "estimate"]
        scans = store.read_results(store.find_run(run_id, RAW))
        scans = scans[scans["metric"] == "elapsed_s"]
        fast = scans.groupby(["repetition", "collation"])["value"].quantile(0.2).unstack()
        starts[made] = fast["utf8mb4_unicode_ci"] / fast["utf8mb4_general_ci"]
    high = "2026-11-25T20:11Z"
    assert estimate[high] > 1.14 and all(v < 1.09 for k, v in estimate.items() if k != high), estimate
    low_starts = pd.concat([v for k, v in starts.items() if k != high])
    assert starts[high].min() > low_starts.quantile(0.95) and len(starts[high]) == 12, starts


def test_the_two_start_build_agrees_with_the_others_and_its_mysql_unicode_is_in_every_pair_within_3pct(capsys):
    # data/README.md, "Two MySQL starts per block": AB-AJ, 36 pairs, 648 of 648 verdicts alike; 15 pairs
    # have every C2 estimate within 3%; AJ misses it only against AC-AE, on MariaDB's level (re-read
    # with each start's own band: 14 pairs, AJ also against AI, MySQL's unicode/general 3.0% apart)
    builds = [*ROWS_400K, *PRELOADED, "AJ"]
    precision = bench_module("precision")
    precision.print_builds(_tables(builds))
    assert "all 36 pairs: same verdict 648 of 648, same label 634" in capsys.readouterr().out
    tables = _tables(builds)
    over = precision.builds_agreement(tables).set_index("builds")["c2_over_3pct"]
    assert (over == "-").sum() == 14, over
    with_aj = over[over.index.str.endswith("vs AJ")]
    assert with_aj[with_aj.str.contains("mysql")].index.tolist() == ["AI vs AJ"], with_aj
    assert sorted(with_aj[with_aj != "-"].index) == ["AC vs AJ", "AD vs AJ", "AE vs AJ", "AI vs AJ"], with_aj
    # its MySQL C2 run: ten starts in five blocks of two, each start a block of the analysis
    aj = tables["AJ"].set_index(["comparison", "target"])
    assert aj.loc[("unicode_vs_general", "mysql"), "n_blocks"] == 10
    assert aj.loc[("unicode_vs_general", "mysql"), "half_width"] < 0.01
    path = _c2_mysql_run(precision.build_runs(["AJ"], None)["AJ"])
    design = store.read_manifest(path)["design"]
    assert (design["repetitions"], design["starts_per_block"], design["iterations"]) == (10, 2, 10)
    servers = pd.DataFrame(store.read_jsonl(path / "servers.jsonl"))
    assert servers.groupby("seq")["pid"].nunique().eq(2).all() and servers["repetition"].nunique() == 10


def test_two_starts_per_block_narrow_what_one_run_draws_of_mysqls_layouts():
    # data/README.md, "Two MySQL starts per block": the designs alternated run by run, six runs each
    # (data/c2_layouts.json); unicode/general per run 1.269-1.300 with one start per block, 1.273-1.292
    # with two, the blocks' SD 2.7% against 1.6%, so a run's standard error 1.2% against 0.5% (re-read
    # with each start's own band: 1.269-1.302 against 1.273-1.295, SD 2.9% against 1.9%)
    listed = json.loads((ROOT / "data" / "c2_layouts.json").read_text())
    claim = load_claims(ROOT / "data" / "claims.yaml")["C2"]
    read = {}
    for design, starts in (("one_start", 1), ("two_starts", 2)):
        run_ids = listed[design]
        assert len(run_ids) == 6
        for run_id in run_ids:
            manifest = _shipped(run_id)
            assert manifest["default_target"] == "mysql" and manifest["profile"] == "quick"
            assert manifest["design"].get("starts_per_block", 1) == starts, run_id
        (c2,) = report.analyze_runs(run_ids, RAW)
        unicode = c2.table.set_index("comparison").loc["unicode_vs_general"]
        spread = stats.run_spread(c2.results, claim).set_index("comparison").loc["unicode_vs_general"]
        estimates = stats.run_levels(c2.results, claim).query("comparison == 'unicode_vs_general'")["estimate"]
        read[design] = (min(estimates), max(estimates), spread["within_run_sd"], unicode["n_blocks"])
    assert read["one_start"][:2] == pytest.approx((1.269, 1.302), abs=0.0006), read
    assert read["two_starts"][:2] == pytest.approx((1.273, 1.295), abs=0.0006), read
    assert read["one_start"][3] == 30 and read["two_starts"][3] == 60
    assert read["one_start"][2] == pytest.approx(0.0285, abs=0.0005)
    assert read["two_starts"][2] == pytest.approx(0.0187, abs=0.0005)
    # both designs' runs within 3% of each other in this half-hour
    assert all(hi / lo - 1 < 0.03 for lo, hi, *_ in read.values())


def test_a_whole_mysql_run_can_read_unicode_in_the_slower_state():
    # data/README.md, "Two MySQL starts per block": AK's MySQL C2 run (07:16) scanned utf8mb4_unicode_ci
    # about 11% slower in all ten of its starts, five blocks of two, at ten different code
    # addresses; its unicode/general read 1.41 against 1.26-1.32 in AB-AJ, while C2's other
    # comparisons and every verdict agreed with every other build (AB-AK: 45 pairs, 810 of 810)
    # AL (07:47) and AM (08:17) read 1.301 and 1.283 again: AB-AM, 66 pairs, 1188 of 1188; each
    # misses 3% only against AK (MySQL) and AC-AE (MariaDB), and AJ, AL and AM agree on every C2
    # estimate within it
    precision = bench_module("precision")
    builds = [*ROWS_400K, *PRELOADED, *TWO_STARTS]
    tables = _tables(builds)
    pairs = precision.builds_agreement(tables)
    assert len(pairs) == 66 and pairs["same_verdict"].sum() == pairs["compared"].sum() == 1188
    over = pairs.set_index("builds")["c2_over_3pct"]
    for late in ("AL", "AM"):
        missed = over[over.index.str.contains(f"vs {late}|{late} vs") & (over != "-")]
        assert sorted(missed.index) == sorted(f"{b} vs {late}" for b in ("AC", "AD", "AE", "AK")), missed
    assert (over[["AJ vs AL", "AJ vs AM", "AL vs AM"]] == "-").all()
    unicode = {name: t.set_index(["comparison", "target"]).loc[("unicode_vs_general", "mysql"), "estimate"]
               for name, t in tables.items()}
    assert 1.40 < unicode.pop("AK") < 1.42 and all(1.26 < v < 1.32 for v in unicode.values()), unicode
    starts = _per_start(_c2_mysql_run(precision.build_runs(["AK"], None)["AK"]))
    per_start = starts["utf8mb4_unicode_ci"] / starts["utf8mb4_general_ci"]
    assert len(per_start) == 10 and per_start.between(1.38, 1.44).all(), per_start


def test_the_next_sessions_build_agrees_on_every_verdict_and_misses_3pct_only_in_the_machines_states():
    # README, "Precision (issue 12)": AN (09:19, the first unit's warm-up in the recorded round
    # order): AB-AN, 78 pairs, 1404 of 1404 verdicts alike, the 22 labels that differ all C4's size
    # on MySQL; 35 pairs have every C2 estimate within 3% (34 re-read with each start's own band),
    # and AN misses it only against MariaDB's higher level (AC-AE) and MySQL's slower states (AI,
    # AK), on unicode/general alone
    precision = bench_module("precision")
    tables = _tables([*ROWS_400K, *PRELOADED, *TWO_STARTS, *IN_ROUND_ORDER])
    pairs = precision.builds_agreement(tables)
    assert len(pairs) == 78 and pairs["same_verdict"].sum() == pairs["compared"].sum() == 1404
    assert pairs["same_label"].sum() == 1382
    labels = pd.DataFrame({name: t.set_index(["claim", "comparison", "target"])["verdict_label"]
                           for name, t in tables.items()})
    assert list(labels[labels.nunique(axis=1) > 1].index) == [("C4", "binlog_on_vs_off", "mysql")]
    over = pairs.set_index("builds")["c2_over_3pct"]
    assert (over == "-").sum() == 34, over
    assert over[over != "-"].str.split(", ").explode().str.startswith("unicode_vs_general ").all(), over
    missed = over[over.index.str.endswith("vs AN") & (over != "-")]
    assert sorted(missed.index) == [f"{b} vs AN" for b in ("AC", "AD", "AE", "AI", "AK")], missed
    an = tables["AN"].set_index(["comparison", "target"])["estimate"]
    assert 1.26 < an["unicode_vs_general", "mysql"] < 1.28 and 1.06 < an["unicode_vs_general", "mariadb"] < 1.08


# 2026-11-26 14:39 and 15:10, an Intel host (family 6, model 207): every block's servers start
# from a fresh copy of their binary (data/README.md, "A fresh copy of the binary per block, on an
# Intel host")
INTEL_HOST = ["AV", "AW"]


def test_the_intel_host_builds_differ_only_near_c2s_edges(capsys):
    # AV vs AW: read with the band drawn from the run's fastest, 15 of 18 verdicts alike, the three
    # that differ all C2's, near their band's edge, every C2 estimate within 1.7%, MySQL's C2 main
    # interval over the 3% goal and MariaDB's under 1%. Re-read with each start's own band ("The
    # fast state, start by start"): 16 of 18, both differences utf8mb4_general/utf8mb3; MySQL's
    # main comparison 4.4% apart (1.553 and 1.622, each ±3.3%), the others within 1.6%; MariaDB's
    # main interval ±1.7-1.8%
    precision = bench_module("precision")
    precision.print_builds(_tables(INTEL_HOST))
    out = capsys.readouterr().out
    assert "all 1 pairs: same verdict 16 of 18, same label 16" in out, out
    tables = _tables(INTEL_HOST)
    pairs = precision.builds_agreement(tables).set_index("builds")
    assert pairs.loc["AV vs AW", "c2_over_3pct"] == "uca_ai_vs_utf8mb3 mysql 4.4%"
    labels = pd.DataFrame({name: t.set_index(["claim", "comparison", "target"])["verdict_label"]
                           for name, t in tables.items()})
    assert sorted(labels[labels.nunique(axis=1) > 1].index) == [
        ("C2", "utf8mb4_general_vs_utf8mb3", "mariadb"), ("C2", "utf8mb4_general_vs_utf8mb3", "mysql")]
    c2 = pd.concat([t.assign(build=n) for n, t in tables.items()])
    c2 = c2[c2["claim"] == "C2"].pivot_table(index=["comparison", "target"], columns="build", values="estimate")
    apart = c2.max(axis=1) / c2.min(axis=1) - 1
    assert (apart.drop(("uca_ai_vs_utf8mb3", "mysql")) < 0.017).all(), apart
    main = pd.concat([t.assign(build=n) for n, t in tables.items()])
    main = main[main["comparison"] == "uca_ai_vs_utf8mb3"].set_index(["build", "target"])["half_width"]
    assert (main.xs("mariadb", level="target") < 0.019).all() and (main.xs("mysql", level="target") > 0.03).all()


def test_a_third_intel_host_build_flips_verdicts_and_misses_3pct_on_mysql(capsys):
    # AX (15:57, 38fc7cc: the same measuring code): AV-AX 46 of 54 verdicts alike; its MySQL C2 run
    # reads utf8mb4_general/utf8mb3 1.038 and unicode/general 1.256, 3-4% from AV's or AW's
    # (re-read with each start's own band: 48 of 54; utf8mb4_general/utf8mb3 1.035, 4.0-5.6% apart)
    precision = bench_module("precision")
    builds = [*INTEL_HOST, "AX"]
    precision.print_builds(_tables(builds))
    out = capsys.readouterr().out
    assert "all 3 pairs: same verdict 48 of 54, same label 48" in out, out
    over = precision.builds_agreement(_tables(builds)).set_index("builds")["c2_over_3pct"]
    assert over["AV vs AW"] == "uca_ai_vs_utf8mb3 mysql 4.4%"
    assert over["AV vs AX"] == "utf8mb4_general_vs_utf8mb3 mysql 5.6%", over
    assert over["AW vs AX"] == "utf8mb4_general_vs_utf8mb3 mysql 4.0%", over


COMMITS = {"AV": "4fbc4866611be6c9a1e73f8b7d5ada3d09944f41", "AW": "4fbc4866611be6c9a1e73f8b7d5ada3d09944f41",
           "AX": "38fc7cc4af31bf2c7f1dad85e30b2b7e4f403c28"}


def test_the_intel_host_builds_ran_every_server_from_a_copy_of_its_own():
    builds = bench_module("precision").build_runs([*INTEL_HOST, "AX"], None)
    for name, dirs in builds.items():
        for path in dirs:
            manifest = _shipped(path.name)
            assert manifest["provenance"]["git"] == {"commit": COMMITS[name], "dirty": False}, path.name
            cpu = manifest["provenance"]["host"]["cpu"]
            assert (cpu["vendor"], cpu["family"], cpu["model"]) == ("GenuineIntel", "6", "207"), path.name
            assert manifest["design"]["place_binary"] is True
            seeds = [s["placement"]["seed"] for s in store.read_jsonl(path / "servers.jsonl")]
            assert seeds and len(set(seeds)) == len(seeds), path.name
        # C2's sequential MariaDB run: 34 blocks in AV, its cap of 36 in AW, 21 in AX
        c2 = [p for p in dirs if store.read_manifest(p)["experiment"] == "collation_cost"
              and store.read_manifest(p)["default_target"] == "mariadb"]
        blocks = store.read_results(c2[0])["repetition"].nunique()
        assert blocks == {"AV": 34, "AW": 36, "AX": 21}[name], (name, blocks)


# 2026-11-26 17:34 and 17:53, the same Intel host: C2 on MySQL adds rounds to a start short of
# fast-state scans (`design.fast_rounds`; data/README.md, "More rounds where the slow state is the
# usual one"); AZ also with FastRounds.short, the same decisions
FAST_ROUNDS = ["AY", "AZ"]
COMMITS |= {"AY": "0219a46445b76b9453bc396a132841c9b0b5ddeb", "AZ": "a9a4f44ab554f2759eb91ee10a523bc4f3effcd8"}


def _pair_and_c2_main(capsys, builds: list[str], same: int, over_3pct: str, mysql: tuple[float, float],
                      mariadb_under: float) -> None:
    """Checks a pair of builds' line of `--builds` (verdicts alike, C2 estimates over 3% apart) and
    C2's main half-widths: MySQL's in each build (within 0.1 point), MariaDB's under a bound."""
    precision = bench_module("precision")
    tables = _tables(builds)
    precision.print_builds(tables)
    out = capsys.readouterr().out
    assert f"all 1 pairs: same verdict {same} of 18, same label {same}" in out, out
    pair = " vs ".join(builds)
    assert precision.builds_agreement(tables).set_index("builds").loc[pair, "c2_over_3pct"] == over_3pct
    main = pd.concat([t.assign(build=n) for n, t in tables.items()])
    main = main[main["comparison"] == "uca_ai_vs_utf8mb3"].set_index(["build", "target"])["half_width"]
    assert [main[b, "mysql"] for b in builds] == pytest.approx(list(mysql), abs=0.001), main
    assert (main.xs("mariadb", level="target") < mariadb_under).all(), main


def _made_by(builds: list[str]):
    """(build, run directory, manifest) of every run of the builds, each made by its build's clean commit."""
    for name, dirs in bench_module("precision").build_runs(builds, None).items():
        for path in dirs:
            manifest = _shipped(path.name)
            assert manifest["provenance"]["git"] == {"commit": COMMITS[name], "dirty": False}, path.name
            yield name, path, manifest


def _cap_event(run_dir: Path) -> dict:
    """The one `sequential_cap` event of a sequential run that measured its cap of blocks."""
    (cap,) = [e for e in store.read_jsonl(run_dir / "events.jsonl") if e["event"] == "sequential_cap"]
    return cap

def _c2_reading(tables: dict[str, pd.DataFrame], build: str) -> tuple[dict, dict]:
    """A build's C2 reading: each server's least fast-state share over its comparisons, and the main
    comparison's half-width per server."""
    c2 = tables[build][tables[build]["claim"] == "C2"]
    main = c2[c2["comparison"] == "uca_ai_vs_utf8mb3"].set_index("target")["half_width"]
    return c2.groupby("target")["fast_share"].min().to_dict(), main.to_dict()


def _against(previous: str, build: str) -> tuple[dict, dict, dict, pd.Series]:
    """A build read against the one before it: both builds' tables, its C2 reading (`_c2_reading`)
    and the pair's `bench/precision.py --builds` row."""
    tables = _tables([previous, build])
    fast, main = _c2_reading(tables, build)
    pair = bench_module("precision").builds_agreement(tables).set_index("builds").loc[f"{previous} vs {build}"]
    return tables, fast, main, pair


def _slow_hour_list(run_ids: list[str]) -> str:
    """The summary's "Measured in a slow hour" list for these runs."""
    return report.runs_markdown(report.analyze_runs(run_ids, RAW)).split("**Measured in a slow hour:**")[1]

def _claims_overhead(dirs: list[Path]) -> pd.DataFrame:
    """Each claim's overhead over these runs (bench/overhead.py, its runs on every server together)."""
    overhead = bench_module("overhead")
    return overhead.per_claim(pd.DataFrame([overhead.overhead(path) for path in dirs]))


def _every_claims_overhead_at_most(builds: list[str], share: float) -> None:
    """Each claim's overhead in each build."""
    for name, dirs in bench_module("precision").build_runs(builds, None).items():
        claims = _claims_overhead(dirs)
        assert (claims["overhead_share"] <= share).all(), (name, claims)


def test_the_builds_with_rounds_added_agree_on_every_verdict_and_keep_c2_within_3pct(capsys):
    # AY vs AZ: 18 of 18 verdicts and labels alike, every C2 estimate within 1.5%; MySQL's C2 main
    # interval ±1.5% in AY, ±3.1% in AZ (its first ten rounds alone kept 3 of 10 starts: ±11.9%).
    # Re-read with each start's own band: 16 of 18 (unicode/general on MariaDB, utf8mb4_general/
    # utf8mb3 on MySQL), MySQL's main comparison and utf8mb4_general/utf8mb3 3.9% and 4.2% apart,
    # its main interval ±1.8% and ±3.4%, MariaDB's ±1.8-1.9%
    _pair_and_c2_main(capsys, FAST_ROUNDS, 16, "uca_ai_vs_utf8mb3 mysql 3.9%, utf8mb4_general_vs_utf8mb3 mysql 4.2%",
                      mysql=(0.018, 0.034), mariadb_under=0.019)
    for _, path, manifest in _made_by(FAST_ROUNDS):
        c2_mysql = manifest["experiment"] == "collation_cost" and manifest["default_target"] == "mysql"
        assert (manifest["design"]["fast_rounds"] is not None) is c2_mysql, path.name


# 2026-11-26 20:31 and 20:50, the same Intel host: C3's quick blocks at twelve rounds on MariaDB and
# twenty-four on MySQL (nine and eighteen before; data/README.md, "Fewer restarts' worth in C3, and
# MariaDB's C2 left as it is")
C3_ROUNDS = ["BA", "BB"]
COMMITS |= {"BA": "2a1f3137b2d3f90ca8db1daf6de07fcea554f215", "BB": "2a1f3137b2d3f90ca8db1daf6de07fcea554f215"}


def test_the_builds_with_longer_c3_blocks_keep_every_claims_overhead_under_a_quarter(capsys):
    # BA vs BB: 16 of 18 alike; the two that differ sit on a band's edge (C1 utf8mb4/latin1 on MySQL
    # at 0.96, C2 utf8mb4_general/utf8mb3 on MariaDB, 1.014 and 1.047: 3.3% apart); MySQL's C2 main
    # interval ±1.6% and ±3.0%; every claim's overhead 13-23%. Re-read with each start's own band:
    # 17 of 18 (C1's alone), every C2 estimate within 3% (utf8mb4_general/utf8mb3 on MariaDB 1.037
    # and 1.051), MySQL's main interval ±2.0% and ±3.8%, MariaDB's ±1.7% and ±2.2%
    _pair_and_c2_main(capsys, C3_ROUNDS, 17, "-",
                      mysql=(0.020, 0.038), mariadb_under=0.023)
    _every_claims_overhead_at_most(C3_ROUNDS, 0.235)
    for _, path, manifest in _made_by(C3_ROUNDS):
        if manifest["experiment"] == "insert_57_vs_80":
            rounds = {"mariadb": 12, "mysql": 24}[manifest["default_target"]]
            assert manifest["design"]["iterations"] == rounds, path.name


# 2026-11-26 22:41 and 22:58, the same Intel host: the fast state drawn from each server start's own
# fastest scan (data/README.md, "The fast state, start by start"); BD's commit adds only BC's data
START_BANDS = ["BC", "BD"]
COMMITS |= {"BC": "5169047f9ce7358b96da2ef6196e0cd78f880536", "BD": "43ba04da2ca44efdd47c15212d48a7c20c899241"}


def test_the_builds_with_each_starts_own_band_keep_c2_within_3pct_and_mysqls_c2_shorter(capsys):
    # BC vs BD: 15 of 18 alike, the three that differ marked near an edge (C1 mismatch/latin1 on
    # MySQL at 0.958-0.960; C2 unicode/general and utf8mb4_general/utf8mb3 on MariaDB); every C2
    # estimate within 3% (met); C2's main interval ±1.1% and ±2.2% on MariaDB, ±2.0% and ±3.3% on
    # MySQL; overhead 14-22% a claim; MySQL's C2 run added rounds to 1 and 2 units (5 and 18 rounds)
    _pair_and_c2_main(capsys, START_BANDS, 15, "-",
                      mysql=(0.020, 0.033), mariadb_under=0.023)
    _every_claims_overhead_at_most(START_BANDS, 0.225)
    added = {}
    for name, path, manifest in _made_by(START_BANDS):
        if manifest["experiment"] == "collation_cost" and manifest["default_target"] == "mysql":
            events = [e for e in store.read_jsonl(path / "events.jsonl") if e["event"] == "fast_rounds"]
            added[name] = sorted(e["added"] for e in events)
    assert added == {"BC": [5], "BD": [8, 10]}, added


def test_the_intel_builds_c2_estimates_spread_about_as_their_blocks_explain():
    # data/README.md, "The fast state, start by start": over AV-BB the builds' C2 estimates spread
    # beyond what their blocks explain by 0.4-1.3% with the band drawn from the run's fastest; by
    # 0-0.6% on MariaDB with each start's own band (0, 1.4 and 1.5% on MySQL), the blocks' own
    # spread 3.7-4.3% on MariaDB (2.1-2.2% before)
    rep = bench_module("precision").replication(_tables(["AV", "AW", "AX", "AY", "AZ", "BA", "BB"]))
    c2 = rep[rep["claim"] == "C2"].set_index(["comparison", "target"])
    mariadb = c2.xs("mariadb", level="target")
    assert (mariadb["between"] <= 0.007).all() and mariadb["sd_block"].between(0.036, 0.044).all(), mariadb
    mysql = c2.xs("mysql", level="target")["between"]
    assert mysql["unicode_vs_general"] < 0.001 and mysql.drop("unicode_vs_general").between(0.013, 0.016).all(), mysql


COMMITS |= {"BE": "8747008c2149843e9c9493dcee439d1267923417"}


def test_a_third_build_with_each_starts_own_band_agrees_with_bc_and_records_its_cap(capsys):
    # BE (23:33, 8747008: the runner looks once more at a sequential run's cap): BC-BE 48 of 54
    # verdicts alike, all six differences marked near an edge (BC vs BE 18 of 18); every C2 estimate
    # within 3% in every pair; its MariaDB C2 run measured its cap of 36 starts, and the look
    # after the last one found every comparison decided after 35 counted blocks
    precision = bench_module("precision")
    builds = [*START_BANDS, "BE"]
    precision.print_builds(_tables(builds))
    out = capsys.readouterr().out
    assert "all 3 pairs: same verdict 48 of 54, same label 48; label differs 6, 6 of them marked" in out, out
    pairs = precision.builds_agreement(_tables(builds)).set_index("builds")
    assert (pairs["c2_over_3pct"] == "-").all() and pairs.loc["BC vs BE", "same_label"] == 18, pairs
    (c2,) = [path for name, path, manifest in _made_by(["BE"]) if manifest["experiment"] == "collation_cost"
             and manifest["default_target"] == "mariadb"]
    cap = _cap_event(c2)
    assert (cap["blocks"], cap["decided"]) == (36, True) and "all comparisons done after 35 blocks" in cap["reason"]


# 2026-11-27 00:54, the same Intel host in a slower hour (C2's scans in the fast state: 16-19%,
# against 36-43% in BE): C2's MariaDB run stops once every open comparison's repeated interval is
# within 6% (`target_rel_width`), C1's MySQL run is five starts again (data/README.md, "A slow hour")
COMMITS |= {"BF": "e8aecc71cefb3b9a2eccdb4530aab09b305470be"}


def test_a_build_in_a_slow_hour_agrees_with_be_but_near_edges_and_its_mariadb_c2_reaches_its_cap(capsys):
    # BE vs BF: 14 of 18 alike, the four that differ marked near an edge in either build; every C2
    # estimate within 3% (MariaDB 1.3%, MySQL 0.3% apart at most); BF's MariaDB C2 run measured its
    # 36 starts, of which 19 had fast-state scans on both sides of every comparison, and the cap
    # left unicode/general open; C2 main ±3.6% on MySQL (not met) and ±2.2% on MariaDB there
    _pair_and_c2_main(capsys, ["BE", "BF"], 14, "-", mysql=(0.025, 0.036), mariadb_under=0.023)
    _every_claims_overhead_at_most(["BF"], 0.245)
    (c2,) = [path for name, path, manifest in _made_by(["BF"]) if manifest["experiment"] == "collation_cost"
             and manifest["default_target"] == "mariadb"]
    assert store.read_manifest(c2)["design"]["sequential"]["target_rel_width"] == 0.06
    cap = _cap_event(c2)
    assert (cap["blocks"], cap["decided"]) == (36, False) and cap["reason"].startswith("19 blocks"), cap
    assert "open: unicode_vs_general@mariadb" in cap["reason"], cap


# 2026-11-27 01:32, the same hour: C2's MySQL run sequential too (ten starts at least, looks after
# every block of two until decided or within 6%, at most fourteen)
COMMITS |= {"BG": "fdaa063672d9caadac703e13c0fca2ac3d551921"}


def _c2_fast_share(build: str) -> dict[str, float]:
    """The share of a build's C2 scans in the fast state (`stats.observations.fast_state`), per server."""
    shares = {}
    for _, path, manifest in _made_by([build]):
        if manifest["experiment"] == "collation_cost":
            scans = store.read_results(path).query("metric == 'elapsed_s'")
            fast = fast_state(np.log(scans["value"]), scans[["run_id", "condition"]],
                              scans[["repetition", "seq", "attempt"]], "near_min")
            shares[manifest["default_target"]] = fast.mean()
    return shares


def test_in_the_slow_hour_c2_finds_few_fast_scans_and_mysqls_main_estimate_moves_8pct(capsys):
    # data/README.md, "A slow hour": 36-43% of BE's C2 scans lie in the fast state, 11-16% of BF's
    # and 7-15% of BG's; BG's MySQL C2 run measured its cap of fourteen starts and six counted (its
    # rule's minimum is ten: analysed at the fixed-sample level), its main comparison 1.71 against
    # 1.58 in BE and BF (8% apart: not met); 17 of 18 verdicts alike with BF (16 labels), C4 on MySQL
    # "as published" at 2.88 [2.22, 3.73]
    shares = {build: _c2_fast_share(build) for build in ("BE", "BF", "BG")}
    assert shares["BE"] == pytest.approx({"mariadb": 0.43, "mysql": 0.36}, abs=0.005), shares
    assert shares["BF"] == pytest.approx({"mariadb": 0.11, "mysql": 0.155}, abs=0.005), shares
    assert shares["BG"] == pytest.approx({"mariadb": 0.15, "mysql": 0.07}, abs=0.005), shares
    precision = bench_module("precision")
    pairs = precision.builds_agreement(_tables(["BE", "BF", "BG"])).set_index("builds")
    assert (pairs.loc["BF vs BG", "same_verdict"], pairs.loc["BF vs BG", "same_label"]) == (17, 16), pairs
    assert pairs.loc["BF vs BG", "c2_over_3pct"] == "uca_ai_vs_utf8mb3 mysql 7.8%", pairs
    caps = {"mariadb": (36, "15 blocks"), "mysql": (14, "6 of at least 10 blocks")}
    for _, path, manifest in _made_by(["BG"]):
        if manifest["experiment"] == "collation_cost":
            cap = _cap_event(path)
            blocks, reason = caps[manifest["default_target"]]
            assert (cap["blocks"], cap["decided"]) == (blocks, False) and cap["reason"].startswith(reason), cap


# 2026-11-27 02:29, the same night: 62484f8 measures as fdaa063 (only verdict notes are shorter)
COMMITS |= {"BH": "62484f87ccc545602739eda2028c52ed4f8403eb"}


def test_a_third_build_of_the_slow_night_keeps_mysqls_main_comparison_within_3pct_with_twelve_counted_starts(capsys):
    # 16% of BH's MariaDB C2 scans and 27% of its MySQL ones in the fast state; its MySQL C2 run
    # measured fourteen starts, counted 12-13, and the look after the last found every comparison
    # done (utf8mb4_general/utf8mb3 by width); the main comparison 1.62 ±2.8% (met), 2.3% from BF
    # and 5.5% from BG; BF-BH 50 of 54 verdicts alike, all six label differences marked near an edge
    assert _c2_fast_share("BH") == pytest.approx({"mariadb": 0.16, "mysql": 0.27}, abs=0.005)
    _pair_and_c2_main(capsys, ["BF", "BH"], 16, "-", mysql=(0.036, 0.028), mariadb_under=0.023)
    pairs = bench_module("precision").builds_agreement(_tables(["BF", "BG", "BH"])).set_index("builds")
    assert pairs["same_verdict"].sum() == 50 and (pairs["label_differs"] == pairs["marked"]).all(), pairs
    assert pairs.loc["BG vs BH", "c2_over_3pct"] == "uca_ai_vs_utf8mb3 mysql 5.5%", pairs
    for _, path, manifest in _made_by(["BH"]):
        if manifest["experiment"] == "collation_cost" and manifest["default_target"] == "mysql":
            cap = _cap_event(path)
            assert (cap["blocks"], cap["decided"]) == (14, True), cap
            assert "narrower than 6%: utf8mb4_general" in cap["reason"], cap


# 2026-11-27 03:39, the next session: a clean clone of 4d43ebc (measures as 62484f8)
COMMITS |= {"BI": "4d43ebce79da50c3830528e56b331976223210d5"}


def test_the_slowest_hour_yet_reads_as_a_slow_hour_and_the_quiet_builds_do_not(capsys):
    # BI kept 6-7% of MariaDB's C2 values in the fast state and 11-13% of MySQL's. MariaDB's run
    # measured its cap of 36 starts and counted 12; C2's main comparison read 1.10 ±4.4% (MariaDB)
    # and 1.55 ±4.5% (MySQL): not met. BH vs BI: 16 of 18 verdicts alike, MySQL's main 4.0% apart.
    # Every C2 row of BC and BE kept 17% or more (stats.SLOW_HOUR is 20%).
    tables = _tables(["BC", "BE", "BI"])
    c2 = {name: t[t["claim"] == "C2"].groupby("target")["fast_share"] for name, t in tables.items()}
    assert c2["BI"].min().to_dict() == pytest.approx({"mariadb": 0.06, "mysql": 0.11}, abs=0.005)
    assert c2["BI"].max().max() < stats.SLOW_HOUR
    assert min(c2[name].min().min() for name in ("BC", "BE")) >= stats.SLOW_HOUR
    c2_runs = [path.name for _, path, m in _made_by(["BI"]) if m["experiment"] == "collation_cost"]
    slow = _slow_hour_list(c2_runs)
    assert slow.count("\n- C2 on ") == 2 and "C2 on MySQL 9.7.4: only 11% of" in slow, slow
    assert "claimlab run collation_cost --target mariadb" in slow, slow
    main = tables["BI"].query("comparison == 'uca_ai_vs_utf8mb3'").set_index("target")["half_width"]
    assert main.to_dict() == pytest.approx({"mariadb": 0.044, "mysql": 0.045}, abs=0.001)
    _pair_and_c2_main(capsys, ["BH", "BI"], 16, "uca_ai_vs_utf8mb3 mysql 4.0%, unicode_vs_general mysql 4.2%",
                      mysql=(0.028, 0.045), mariadb_under=0.045)
    for _, path, manifest in _made_by(["BI"]):
        if manifest["experiment"] == "collation_cost" and manifest["default_target"] == "mariadb":
            cap = _cap_event(path)
            assert (cap["blocks"], cap["decided"]) == (36, False) and cap["reason"].startswith("12 blocks"), cap


def test_the_slow_state_changes_c2s_ratios_so_slow_scans_cannot_stand_in_for_fast_ones():
    # bench/state_ratios.py over BC-BI: rounds whose two scans were both in the fast state against
    # rounds whose two were both slow (over 1.5x the run's fast level). MySQL's uca/utf8mb3 reads
    # 1.57-1.73 fast and 1.46-1.55 slow in every build; MariaDB's unicode/general 1.029-1.073 fast,
    # 1.032-1.040 slow (data/README.md, "Does the ratio hold in the slow state?")
    state_ratios = bench_module("state_ratios")
    claim = load_claims(ROOT / "data" / "claims.yaml")["C2"]
    read = {}
    for build, path, manifest in _made_by(["BC", "BD", "BE", "BF", "BG", "BH", "BI"]):
        if manifest["experiment"] == "collation_cost":
            table = state_ratios.state_ratios(store.read_results(path), claim).set_index("comparison")
            read[build, manifest["default_target"]] = table
    mysql = pd.DataFrame({b: t.loc["uca_ai_vs_utf8mb3"] for (b, target), t in read.items() if target == "mysql"}).T
    assert mysql["fast_ratio"].min() > 1.56 and mysql["slow_ratio"].max() < 1.56, mysql
    assert (mysql["fast_ratio"] > mysql["slow_ratio"]).all() and mysql["slow_rounds"].min() >= 31, mysql
    mariadb = pd.DataFrame({b: t.loc["unicode_vs_general"] for (b, target), t in read.items() if target == "mariadb"}).T
    assert mariadb["slow_ratio"].agg(["min", "max"]).tolist() == pytest.approx([1.032, 1.040], abs=0.001), mariadb
    assert mariadb["fast_ratio"].agg(["min", "max"]).tolist() == pytest.approx([1.029, 1.073], abs=0.001), mariadb


def test_state_ratios_names_what_it_cannot_read():
    state_ratios = bench_module("state_ratios")
    with pytest.raises(ClaimlabError, match="no build ZZ"):
        state_ratios.main(["--builds", "ZZ"])
    c4 = json.loads((ROOT / "data" / "quick_builds.json").read_text())["BI"]["runs"][-1]
    with pytest.raises(ClaimlabError, match=fr"{c4}: its claim has no comparison read by its fastest scans"):
        state_ratios.main(["--run", c4])


# 2026-11-27 04:10: a clean clone of 45d7385 (it measures as 62484f8; it reports slow hours)
COMMITS |= {"BJ": "45d7385df0dac51296f96c35dcfb5ec8495a2b58"}


def test_a_fifth_slow_hour_build_says_so_and_its_c1_mariadb_run_carries_the_contention_it_met():
    # BJ: C2 kept 12% of MariaDB's values in the fast state and 7-9% of MySQL's; MySQL's C2
    # measured its fourteen starts and counted six (main 1.55 ±6.6%, not met); MariaDB's 36, 18
    # counted (±1.8%, met). Its C1 run on MariaDB overlapped analysis scripts of the session at idle
    # priority: 12 of its 45 measurements carry the contention flag, mismatch/latin1 ±9.1% (not
    # met; ±5.4% with --exclude-contention). BI vs BJ: 16 of 18 verdicts alike (15 labels), C2's main
    # comparison 0.8% and 0.3% apart, MySQL's unicode/general 3.6% (not met).
    tables, fast, main, pair = _against("BI", "BJ")
    assert fast == pytest.approx({"mariadb": 0.115, "mysql": 0.066}, abs=0.005)
    assert tables["BJ"].query("claim == 'C2'")["fast_share"].max() < stats.SLOW_HOUR
    assert main == pytest.approx({"mariadb": 0.018, "mysql": 0.066}, abs=0.001)
    assert (pair["same_verdict"], pair["same_label"], pair["marked"]) == (16, 15, 1), pair
    assert (pair["c2_apart"], pair["c2_over_3pct"]) == ("mariadb 0.8%, mysql 0.3%", "unicode_vs_general mysql 3.6%")
    for _, path, manifest in _made_by(["BJ"]):
        if manifest["experiment"] == "collation_cost" and manifest["default_target"] == "mysql":
            cap = _cap_event(path)
            assert (cap["blocks"], cap["decided"]) == (14, False) and cap["reason"] == "6 of at least 10 blocks", cap
        if manifest["experiment"] == "charset_mismatch" and manifest["default_target"] == "mariadb":
            qps = store.read_results(path).query("metric == 'qps'")
            assert (int(qps["contention"].sum()), len(qps)) == (12, 45)
            c1 = tables["BJ"].query("claim == 'C1' and target == 'mariadb'").set_index("comparison")
            assert c1.loc["mismatch_vs_latin1", "half_width"] == pytest.approx(0.091, abs=0.001)


# 2026-11-27 04:55: a clean clone of fac119e (it measures as 62484f8)
COMMITS |= {"BK": "fac119edfb3538ed9086785be6148a48f04a612f"}


def test_mysqls_c2_stops_at_its_first_look_when_its_hour_is_not_slow_and_mariadbs_is_named_slow():
    # BK: 21-24% of MySQL's C2 values fast, 14-15% of MariaDB's. MySQL's run stopped at its first
    # look, after ten starts, every comparison decided (main 1.58 ±1.7%); MariaDB's ran to its cap of
    # 36, counting 17 (main 1.12 ±2.9%, met). Only MariaDB's C2 is listed as measured in a slow hour.
    # BJ vs BK: 15 of 18 verdicts alike, the three differences marked near an edge, C2 within 1.7%.
    tables, fast, main, pair = _against("BJ", "BK")
    assert fast == pytest.approx({"mariadb": 0.14, "mysql": 0.21}, abs=0.005)
    assert main == pytest.approx({"mariadb": 0.029, "mysql": 0.017}, abs=0.001)
    assert (pair["same_verdict"], pair["label_differs"], pair["marked"], pair["c2_over_3pct"]) == (15, 3, 3, "-")
    c2_runs = []
    for _, path, manifest in _made_by(["BK"]):
        if manifest["experiment"] != "collation_cost":
            continue
        c2_runs.append(path.name)
        looks = [e for e in store.read_jsonl(path / "events.jsonl") if e["event"].startswith("sequential")]
        if manifest["default_target"] == "mysql":
            assert [(e["blocks"], e["stop"]) for e in looks] == [(10, True)], looks
        else:
            assert (looks[-1]["event"], looks[-1]["blocks"]) == ("sequential_cap", 36), looks[-1]
            assert looks[-1]["reason"].startswith("17 blocks"), looks[-1]
    slow = _slow_hour_list(c2_runs)
    assert slow.count("\n- C2 on ") == 1 and "C2 on MariaDB 10.11.19: only 14% of" in slow, slow


# 2026-11-27 05:33: a clean clone of 1aa4832 (it measures as 62484f8)
COMMITS |= {"BL": "1aa48327f19893fb66ffb67b74d238d4ded1f153"}


def test_a_build_on_the_slow_hours_edge_names_both_servers_and_mysqls_main_misses_3pct():
    # BL: 19-21% of both servers' C2 values fast, the least of each under 20%, so both are named.
    # MySQL's C2 measured its fourteen starts (the look at the cap found every comparison decided
    # after 11 counted), main 1.62 ±3.8% (not met); MariaDB's ±2.6% (met). BK vs BL: 15 of 18
    # verdicts alike (14 labels, 3 of the 4 label differences marked), every C2 estimate within 2.6%.
    tables, fast, main, pair = _against("BK", "BL")
    assert fast == pytest.approx({"mariadb": 0.19, "mysql": 0.19}, abs=0.005)
    assert main == pytest.approx({"mariadb": 0.026, "mysql": 0.038}, abs=0.001)
    assert (pair["same_verdict"], pair["same_label"], pair["marked"], pair["c2_over_3pct"]) == (15, 14, 3, "-")
    c2 = [(path, m["default_target"]) for _, path, m in _made_by(["BL"]) if m["experiment"] == "collation_cost"]
    c2_runs = [path.name for path, _ in c2]
    for path, target in c2:
        if target == "mysql":
            cap = _cap_event(path)
            assert (cap["blocks"], cap["decided"]) == (14, True), cap
            assert cap["reason"].startswith("all comparisons done after 11 blocks"), cap
    slow = _slow_hour_list(c2_runs)
    assert slow.count("\n- C2 on ") == 2, slow


# 2026-11-27 07:24: a clean clone of 46cf5e6 (it measures as 62484f8)
COMMITS |= {"BM": "46cf5e64dd8a6f94c2be0df01d2e0dc3401421fa"}


def test_the_slowest_hour_yet_widens_mysqls_claims_and_moves_its_unicode_level():
    # BM: 9-10% of MariaDB's C2 values fast, 4-6% of MySQL's, the fewest yet. MySQL's C2 measured its
    # fourteen starts and counted six: main 1.63 ±7.6% (not met), unicode/general 1.15 [1.02, 1.30]
    # where every other build read 1.23-1.41; MariaDB's ran to its cap of 36, counting 13 (±2.3%,
    # met). MySQL's C4 read ±17.4% (two of its four blocks ran at about twice the time on both
    # sides). BL vs BM: 15 of 18 verdicts alike, MySQL's unicode/general 11.8% apart.
    tables, fast, main, pair = _against("BL", "BM")
    assert fast == pytest.approx({"mariadb": 0.09, "mysql": 0.04}, abs=0.005)
    assert main == pytest.approx({"mariadb": 0.023, "mysql": 0.076}, abs=0.001)
    assert (pair["same_verdict"], pair["same_label"], pair["marked"]) == (15, 14, 2), pair
    assert pair["c2_over_3pct"] == "utf8mb4_general_vs_utf8mb3 mysql 5.1%, unicode_vs_general mysql 11.8%"
    c4 = tables["BM"].query("claim == 'C4'").set_index("target")["half_width"]
    assert c4.to_dict() == pytest.approx({"mariadb": 0.075, "mysql": 0.174}, abs=0.001)
    c2_runs = []
    for _, path, manifest in _made_by(["BM"]):
        if manifest["experiment"] != "collation_cost":
            continue
        c2_runs.append(path.name)
        cap = _cap_event(path)
        blocks, counted = {"mysql": (14, "6 of at least 10 blocks"), "mariadb": (36, "13 blocks, continuing")}[
            manifest["default_target"]]
        assert (cap["blocks"], cap["decided"]) == (blocks, False)
        assert cap["reason"].startswith(counted), cap
    slow = _slow_hour_list(c2_runs)
    assert slow.count("\n- C2 on ") == 2 and "C2 on MySQL 9.7.4: only 4% of" in slow, slow


def test_the_builds_intervals_hold_the_other_builds_median_about_as_often_as_their_level_says(capsys):
    # data/README.md, "Do the intervals hold across hours?": over BC-BN (the analysis of each start's
    # own band, quiet and slow hours) 205 of the 216 intervals (95-97.5%) hold the median of the
    # other eleven builds' estimates; the misses include BG's MySQL main comparison (1.708 against 1.580)
    precision = bench_module("precision")
    builds = ["BC", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BK", "BL", "BM", "BN"]
    tables = _tables(builds)
    covered = precision.coverage(tables)
    assert (int(covered["covers"].sum()), len(covered)) == (205, 216)
    missed = covered[~covered["covers"]].set_index(["build", "comparison", "target"])
    assert missed.loc[("BG", "uca_ai_vs_utf8mb3", "mysql"), "reference"] == pytest.approx(1.580, abs=0.001)
    precision.print_builds(tables)
    assert "it holds it in 205 of 216 (95%; at levels 95.0%-97.5%)" in capsys.readouterr().out
    # leave one out: a build's own estimate is never its reference, and two builds give no reference
    four = {name: pd.DataFrame({"claim": ["C4"], "comparison": ["binlog_on_vs_off"], "target": ["mysql"],
                                "estimate": [est], "ci_low": [est / 1.02], "ci_high": [est * 1.02],
                                "confidence": [0.95], "n_blocks": [4]})
            for name, est in {"w": 2.5, "x": 2.52, "y": 2.51, "z": 2.7}.items()}
    got = precision.coverage(four).set_index("build")
    assert got["covers"].to_dict() == {"w": True, "x": True, "y": True, "z": False}
    assert got["reference"].to_dict() == pytest.approx({"w": 2.52, "x": 2.51, "y": 2.52, "z": 2.51})
    assert precision.coverage(dict(list(four.items())[:2])).empty


# 2026-11-27 08:03: a clean clone of e314abd (it measures as 62484f8)
COMMITS |= {"BN": "e314abdcfa0a6f65a9a5b584d50edf36ee74a4db"}


def test_the_next_slow_build_turns_to_mariadb_and_leaves_its_c2_undecided():
    # BN: 4-7% of MariaDB's C2 values fast (its fastest scans 145-210 ms in most starts against a
    # fast level near 90-100 ms), 10-11% of MySQL's. MariaDB's C2 ran to its cap of 36 and counted
    # nine: main 1.15 [1.01, 1.31], ±13.5%, inconclusive (not met); MySQL's counted nine of fourteen,
    # ±4.6% (not met). The witness flagged 47-50% of C1's measurements (the probe alone 40-45%, the
    # idle-time witness added since); C1 still read ±1.1-4.1% (met). BM vs BN: 14 of 18 verdicts
    # alike, every label difference marked near an edge.
    tables, fast, main, pair = _against("BM", "BN")
    assert fast == pytest.approx({"mariadb": 0.039, "mysql": 0.102}, abs=0.002)
    assert main == pytest.approx({"mariadb": 0.135, "mysql": 0.046}, abs=0.001)
    assert (pair["same_verdict"], pair["same_label"], pair["label_differs"], pair["marked"]) == (14, 13, 5, 5)
    c1 = tables["BN"].query("claim == 'C1'")
    flagged = c1.groupby("target")["flagged_share"].max().to_dict()
    assert flagged == pytest.approx({"mariadb": 0.467, "mysql": 0.50}, abs=0.001)
    assert c1["half_width"].max() == pytest.approx(0.041, abs=0.001)
    for _, path, manifest in _made_by(["BN"]):
        if manifest["experiment"] == "collation_cost":
            cap = _cap_event(path)
            blocks, counted = {"mariadb": (36, "9 of at least 12"), "mysql": (14, "9 of at least 10")}[
                manifest["default_target"]]
            assert (cap["blocks"], cap["decided"]) == (blocks, False) and cap["reason"].startswith(counted), cap


# 2026-11-27 09:48: a clean clone of bda88d0 (it measures as 62484f8)
COMMITS |= {"BO": "bda88d0f5fdbdbd157519fae45cc4d735a0a230f"}


def test_the_next_session_starts_in_the_same_slow_hour():
    # BO: 8% of MariaDB's C2 values fast, 6% of MySQL's. MariaDB's C2 ran to its cap of 36 and
    # counted 13: main ±3.3% (not met, by a hair); MySQL's counted 7 of 14: ±4.6% (not met).
    # C1 ±0.7-1.6% (met). BN vs BO: 16 of 18 verdicts alike, both label differences marked near an
    # edge (BN's ±13.5% MariaDB intervals).
    tables, fast, main, pair = _against("BN", "BO")
    assert fast == pytest.approx({"mariadb": 0.079, "mysql": 0.061}, abs=0.002)
    assert main == pytest.approx({"mariadb": 0.033, "mysql": 0.046}, abs=0.001)
    assert (pair["same_verdict"], pair["same_label"], pair["label_differs"], pair["marked"]) == (16, 16, 2, 2)
    assert tables["BO"].query("claim == 'C1'")["half_width"].max() == pytest.approx(0.016, abs=0.001)
    for _, path, manifest in _made_by(["BO"]):
        if manifest["experiment"] == "collation_cost":
            cap = _cap_event(path)
            blocks, counted = {"mariadb": (36, "13 blocks, continuing"), "mysql": (14, "7 of at least 10")}[
                manifest["default_target"]]
            assert (cap["blocks"], cap["decided"]) == (blocks, False) and cap["reason"].startswith(counted), cap


def test_a_slow_hours_c2_run_stopped_at_its_first_look_would_miss_its_3pct_more_often(capsys):
    # data/README.md, "Stop at the first look in a slow hour?": BF-BO's sequential C2 runs cut at
    # their rule's minimum (12 MariaDB starts, 10 MySQL). MariaDB's main comparison within 3% in 3 of
    # 10 builds there against 7 of 10 at the end (its 36 starts), for 1.9-3.4 measured minutes
    # against 6.1-8.7; MySQL's in 1 of 9 against 2 of 9 (BF's MySQL run had a fixed design)
    first_look = bench_module("first_look")
    runs = bench_module("precision").build_runs(["BF", "BG", "BH", "BI", "BJ", "BK", "BL", "BM", "BN", "BO"], None)
    rows = pd.concat([first_look.first_look(path).assign(build=name) for name, paths in runs.items()
                      for path in paths if _shipped(path.name)["experiment"] == "collation_cost"])
    main = rows[rows["comparison"] == "uca_ai_vs_utf8mb3"].set_index(["target", "build"])
    met = (main[["half_width_cut", "half_width_end"]] <= 0.03).groupby("target").sum()
    assert met.to_dict("index") == {"mariadb": {"half_width_cut": 3, "half_width_end": 7},
                                    "mysql": {"half_width_cut": 1, "half_width_end": 2}}
    assert (main["starts_cut"].to_dict() == {**{("mariadb", b): 12 for b in runs},
                                               **{("mysql", b): 10 for b in runs if b != "BF"}})
    mariadb = main.loc["mariadb"]
    assert mariadb["minutes_cut"].between(1.8, 3.5).all() and mariadb["minutes_end"].between(6.0, 8.8).all()
    assert first_look.main(["--builds", "BK"]) == 0
    assert re.search(r"BK\s+mysql\s+uca_ai_vs_utf8mb3\s+10\s+10\s+supported", capsys.readouterr().out)
    assert first_look.main(["--builds", "BK", "--experiment", "binlog_default"]) == 2


# 2026-11-27 11:10: a clean clone of 81e23f5 (it measures as 62484f8)
COMMITS |= {"BP": "81e23f52e0c629950ea1d41d51837f47735ff877"}


def test_as_the_slow_hour_eases_mysqls_c2_stops_at_its_first_look_short_of_3pct():
    # BP: 15% of MariaDB's C2 values fast, 24-27% of MySQL's. MySQL's C2 stopped at its first look,
    # every comparison decided after ten starts, its main comparison ±3.6% (not met: the width target
    # holds only comparisons still open); MariaDB's ran to its cap of 36, counted 23, ±1.7% (met).
    # BO vs BP: 15 of 18 verdicts alike, the three label differences marked near an edge.
    tables, fast, main, pair = _against("BO", "BP")
    assert fast == pytest.approx({"mariadb": 0.150, "mysql": 0.242}, abs=0.002)
    assert main == pytest.approx({"mariadb": 0.017, "mysql": 0.036}, abs=0.001)
    assert (pair["same_verdict"], pair["same_label"], pair["label_differs"], pair["marked"]) == (15, 15, 3, 3)
    assert tables["BP"].query("claim == 'C1'")["half_width"].max() == pytest.approx(0.010, abs=0.001)
    for _, path, manifest in _made_by(["BP"]):
        if manifest["experiment"] != "collation_cost":
            continue
        events = store.read_jsonl(path / "events.jsonl")
        looks = [e for e in events if e["event"] in ("sequential", "sequential_cap")]
        if manifest["default_target"] == "mysql":
            assert [(e["blocks"], e["stop"]) for e in looks] == [(10, True)], looks
            assert looks[0]["reason"].startswith("all comparisons done after 10 blocks")
        else:
            assert (looks[-1]["event"], looks[-1]["blocks"]) == ("sequential_cap", 36)
            assert looks[-1]["reason"].startswith("23 blocks, continuing"), looks[-1]


# 2026-11-27 11:52: a clean clone of 29d9613 (`precise`: C2's main comparison must reach the 6% width)
COMMITS |= {"BQ": "29d96133877a13bab915d3c5713d24f6b6a7f4ac"}


def _read_after(previous: str, build: str, *, fast: dict, main: dict, c1_widest: float, c2_blocks: dict,
                overhead: dict, c2_apart: str | None = None) -> tuple[list, dict]:
    """A build read against the one before it, as the builds since BQ are: C2's fast shares and main
    half-widths (`_c2_reading`), 16 of 18 verdicts alike with both differences marked near an edge,
    every C2 estimate within 3% (`c2_apart`: the pair's exact distances), C1's widest half-width, the
    starts each C2 run stopped after with every comparison done, and each claim's overhead. Returns
    the build's (path, manifest) pairs and each C2 run's sequential looks by target."""
    tables, got_fast, got_main, pair = _against(previous, build)
    assert got_fast == pytest.approx(fast, abs=0.002)
    assert got_main == pytest.approx(main, abs=0.001)
    assert (pair["same_verdict"], pair["same_label"], pair["label_differs"], pair["marked"]) == (16, 16, 2, 2)
    assert pair["c2_over_3pct"] == "-"
    if c2_apart is not None:
        assert pair["c2_apart"] == c2_apart
    assert tables[build].query("claim == 'C1'")["half_width"].max() == pytest.approx(c1_widest, abs=0.001)
    runs, looks = [], {}
    for _, path, manifest in _made_by([build]):
        runs.append((path, manifest))
        if manifest["experiment"] == "collation_cost":
            target = manifest["default_target"]
            looks[target] = [e for e in store.read_jsonl(path / "events.jsonl") if e["event"] == "sequential"]
            last = looks[target][-1]
            assert last["stop"] and last["blocks"] == c2_blocks[target], last
            assert last["reason"].startswith("all comparisons done after"), last
    claims = _claims_overhead([path for path, _ in runs])
    assert claims.set_index("experiment")["overhead_share"].round(3).to_dict() == overhead
    return runs, looks


def test_a_quiet_hour_at_last_both_c2_runs_stop_early_and_make_report_takes_12_minutes():
    # BQ: 22-25% of MariaDB's C2 values fast, 45-53% of MySQL's, neither named slow. MariaDB's C2
    # stopped after 23 starts (main decided and within 6%, the two near-edge ones narrower than 6%),
    # the first run on this host whose width target saved starts; MySQL's at its first look, main
    # ±1.1%. BP vs BQ: 16 of 18 verdicts alike, both label differences near an edge, every C2
    # estimate within 3%. C3's overhead 25.8%, over its 25% (not met) in a quiet hour.
    runs, _ = _read_after("BP", "BQ", fast={"mariadb": 0.219, "mysql": 0.446}, main={"mariadb": 0.019, "mysql": 0.011},
                          c1_widest=0.017, c2_blocks={"mariadb": 23, "mysql": 10},
                          overhead={"binlog_default": 0.244, "charset_mismatch": 0.166, "collation_cost": 0.182,
                                    "insert_57_vs_80": 0.258})
    for _, manifest in runs:
        if manifest["experiment"] == "collation_cost":
            assert manifest["design"]["sequential"]["precise"] == ["uca_ai_vs_utf8mb3"]


# 2026-11-27 13:46: a clean clone of d054637 (C3's MySQL blocks at thirty rounds)
COMMITS |= {"BR": "d054637519d13330199d8eed8c59846b1ca3bb45"}


def test_a_milder_hour_meets_c2s_3pct_on_both_servers_and_c3s_thirty_rounds_bring_its_overhead_under_a_quarter():
    # BR: 49% of MariaDB's C2 values fast, 41% of MySQL's. MariaDB's C2 stopped after 15 starts (main
    # decided, the near-edge two narrower than 6%), ±1.5%; MySQL's main was still open at its first
    # look (ten starts) and closed after the next block, ±2.5%. BQ vs BR: 16 of 18 verdicts alike,
    # both differences near an edge, every C2 estimate within 3%. Every claim's overhead under 25%
    # (C3 22.9% with thirty MySQL rounds, 25.8% in BQ with twenty-four); `make report` 11 m 4 s.
    runs, looks = _read_after("BQ", "BR", fast={"mariadb": 0.490, "mysql": 0.407},
                              main={"mariadb": 0.015, "mysql": 0.025}, c1_widest=0.022,
                              c2_blocks={"mariadb": 15, "mysql": 12},
                              overhead={"binlog_default": 0.247, "charset_mismatch": 0.160, "collation_cost": 0.166,
                                        "insert_57_vs_80": 0.229})
    for path, manifest in runs:
        if manifest["experiment"] == "insert_57_vs_80":
            rounds = {"mariadb": 12, "mysql": 30}[manifest["default_target"]]
            assert manifest["design"]["iterations"] == rounds, path.name
    # `precise` held MySQL's main comparison open at ten starts
    assert looks["mysql"][0]["reason"].endswith("open: uca_ai_vs_utf8mb3@mysql)"), looks["mysql"][0]


# 2026-11-27 14:19: a clean clone of c799f60 (the command line loads pandas on first read; runs as BR's)
COMMITS |= {"BS": "c799f60fbc23872f64d4c003c042b71e49ab91eb"}


def test_a_third_build_of_the_afternoon_agrees_with_br_within_half_a_percent_on_c2():
    # BS: 59% of MariaDB's C2 values fast, 48% of MySQL's. MariaDB's C2 stopped after 15 starts as in
    # BR, main ±0.9%; MySQL's first look found one of its ten starts short of a fast-state scan on a
    # side (9 counted, under its minimum of 10) and it stopped after 12, main ±1.9%. BR vs BS: 16 of
    # 18 verdicts alike, the same two comparisons apart as in BQ vs BR (both near an edge), every C2
    # estimate within 0.5%. Every claim's overhead 15-24%; `make report` 11 m 37 s.
    _, looks = _read_after("BR", "BS", fast={"mariadb": 0.590, "mysql": 0.480}, main={"mariadb": 0.009, "mysql": 0.019},
                           c1_widest=0.011, c2_blocks={"mariadb": 15, "mysql": 12}, c2_apart="mariadb 0.4%, mysql 0.5%",
                           overhead={"binlog_default": 0.237, "charset_mismatch": 0.153, "collation_cost": 0.162,
                                     "insert_57_vs_80": 0.231})
    assert (looks["mysql"][0]["blocks"], looks["mysql"][0]["reason"]) == (10, "9 of at least 10 blocks")


# 2026-11-27 15:53: a clean clone of e46bbca, on the family-26 EPYC host (the builds since AV were
# made on the Intel one)
COMMITS |= {"BT": "e46bbca6041213bef19af2549c113f6502689d99"}


def _epyc_build(previous: str, build: str, *, fast: dict, main: dict, c1_widest: float,
                overhead: dict, pair_reads: dict, looks=((10, True),)) -> tuple[list, list]:
    """An EPYC build read against the one before it: its C2 reading (`_c2_reading`), C1's widest
    half-width, each claim's overhead and what the pair's `bench/precision.py --builds` row reads
    (`pair_reads`, by column); returns the events of MySQL's C2 run, whose looks read `looks`
    (starts, stop), and the start time of each of its blocks."""
    tables, got_fast, got_main, pair = _against(previous, build)
    assert {column: pair[column] for column in pair_reads} == pair_reads
    assert got_fast == pytest.approx(fast, abs=0.002)
    assert got_main == pytest.approx(main, abs=0.001)
    assert tables[build].query("claim == 'C1'")["half_width"].max() == pytest.approx(c1_widest, abs=0.001)
    runs = {(manifest["experiment"], manifest["default_target"]): path for _, path, manifest in _made_by([build])}
    claims = _claims_overhead(list(runs.values())).set_index("experiment")["overhead_share"].round(3).to_dict()
    assert claims == overhead
    events = store.read_jsonl(runs["collation_cost", "mysql"] / "events.jsonl")
    assert [(e["blocks"], e["stop"]) for e in events if e["event"] == "sequential"] == list(looks)
    return events, [e["phases"]["start_s"] for e in events if e["event"] == "unit_done"]


def test_on_the_epyc_host_c2_is_all_fast_and_a_look_that_stops_wastes_mysqls_next_block():
    # BT: 99% of both servers' C2 values fast. MariaDB's C2 stopped after 16 starts, main ±1.6%; MySQL's
    # at its first look, main ±0.5%, but the look ran beside the next block, whose two servers
    # started, warmed up and shut down unmeasured: about 3 s of C2's 27% overhead, over its 25%
    # (runner.look_wait since). `make report` 8 m 57 s. Against BS (Intel): 17 of 18 verdicts alike;
    # MySQL's main comparison 9.8% apart: C2's ratios belong to the processor.
    events, starts = _epyc_build("BS", "BT", fast={"mariadb": 0.991, "mysql": 0.990},
                               main={"mariadb": 0.016, "mysql": 0.005}, c1_widest=0.027,
                               overhead={"binlog_default": 0.205, "charset_mismatch": 0.156,
                                         "collation_cost": 0.267, "insert_57_vs_80": 0.185},
                               pair_reads={"same_verdict": 17, "same_label": 16,
                                           "c2_over_3pct": "uca_ai_vs_utf8mb3 mysql 9.8%",
                                           "processors": "Intel(R) Xeon(R) Processor (GenuineIntel family 6 model 207 "
                                                         "stepping 2) / AMD EPYC (AuthenticAMD family 26 model 2 "
                                                         "stepping 1)"})
    (unused,) = [e for e in events if e["event"] == "unit_not_measured"]
    assert unused["repetition"] == 10


# 2026-11-27 16:18: a clean clone of 351df20 (runner.look_wait), the same EPYC host
COMMITS |= {"BU": "351df204fe83b2a97e30f24c3625274572e20c82"}


def test_a_second_epyc_build_agrees_with_bt_on_every_verdict_and_its_mysql_c2_starts_nothing_unused():
    # BU: 98-100% of C2's values fast. MariaDB's C2 stopped after 13 starts (main ±1.4%), MySQL's at
    # its first look (±0.3%), which answered before the next block's servers started: no block
    # unmeasured, and C2's overhead 24.3% against BT's 26.7%. `make report` 7 m 55 s (its tables
    # already loaded by BT's). BT vs BU: 18 of 18 verdicts and labels alike, every C2 estimate within
    # 2.3%.
    events, starts = _epyc_build("BT", "BU", fast={"mariadb": 0.982, "mysql": 0.995},
                               main={"mariadb": 0.014, "mysql": 0.003}, c1_widest=0.022,
                               overhead={"binlog_default": 0.201, "charset_mismatch": 0.152,
                                         "collation_cost": 0.243, "insert_57_vs_80": 0.175},
                               pair_reads={"same_verdict": 18, "same_label": 18,
                                           "c2_apart": "mariadb 2.3%, mysql 0.3%"})
    assert not [e for e in events if e["event"] == "unit_not_measured"]
    assert len([e for e in events if e["event"] == "stopped"]) == 5    # five blocks of two starts, no sixth


def test_on_one_processor_a_day_and_a_half_apart_every_verdict_agrees():
    # AJ-AN (2026-11-26 06:34-09:19) and BT-BU (11-27 15:53-16:18), all on AMD family 26 model 2:
    # 21 pairs, every verdict and label alike; C2's estimates within 3% but MySQL's unicode/general
    # against AK, whose ten starts were all in that scan's slow state
    pairs = bench_module("precision").builds_agreement(_tables(["AJ", "AK", "AL", "AM", "AN", "BT", "BU"]))
    assert len(pairs) == 21 and (pairs["processors"] == "same").all()
    assert (pairs["same_verdict"] == 18).all() and (pairs["same_label"] == 18).all()
    over = pairs.set_index("builds")["c2_over_3pct"]
    assert set(over[over != "-"].index) == {f"AK vs {b}" for b in ("AL", "AM", "AN", "BT", "BU")} | {"AJ vs AK"}
    assert all(text.startswith("unicode_vs_general mysql") for text in over[over != "-"])


def test_a_pair_of_builds_names_its_processors_where_their_provenance_does():
    processors = bench_module("precision")._processors
    epyc = "AMD EPYC (AuthenticAMD family 26 model 2 stepping 1)"
    xeon = "Intel(R) Xeon(R) Processor (GenuineIntel family 6 model 207 stepping 2)"

    def build(*labels):
        return pd.DataFrame({"processor": list(labels)})

    assert processors(build(epyc, epyc), build(epyc)) == "same"
    assert processors(build(xeon), build(epyc)) == f"{xeon} / {epyc}"
    # runs before the family was recorded: "AMD EPYC" named two hosts whose C2 ratios differ
    assert processors(build("AMD EPYC (family not recorded)"), build(epyc)) == "not recorded"


# 2026-11-27 16:36: a clean clone of d618802 (its measuring code is BU's), the same EPYC host
COMMITS |= {"BV": "d6188024065bed85adbbbd0f6026191965e2f7c9"}


def test_a_third_epyc_build_agrees_but_mysqls_data_directory_copies_put_c2_over_a_quarter():
    # BV: 98-100% of C2's values fast. MariaDB's C2 stopped at its first look (12 starts, main ±0.5%),
    # MySQL's at its first (±0.4%), before the next block started. BU vs BV: 18 of 18 verdicts, 17
    # labels (C4's size on MySQL, 2.74-2.80 against the published 2.85, near an edge), C2 within
    # 0.5%. C2's overhead 26.3%: MySQL's first two blocks spent 2.0-2.6 s starting, copying the
    # cached 835 MB data directory into four slots, 496 MB of it spare redo files of zeros (left
    # out of the copies since, datacache._SPARE_REDO).
    events, starts = _epyc_build("BU", "BV", fast={"mariadb": 0.997, "mysql": 0.980},
                               main={"mariadb": 0.005, "mysql": 0.004}, c1_widest=0.014,
                               overhead={"binlog_default": 0.206, "charset_mismatch": 0.143,
                                         "collation_cost": 0.263, "insert_57_vs_80": 0.181},
                               pair_reads={"same_verdict": 18, "same_label": 17, "marked": 1,
                                           "c2_apart": "mariadb 0.5%, mysql 0.4%"})
    assert not [e for e in events if e["event"] == "unit_not_measured"]
    assert min(starts[:2]) > 2.0 > max(starts[2:])


# 2026-11-27 16:51: a clean clone of bbe9454 (the spare redo files left out of data directory copies)
COMMITS |= {"BW": "bbe9454918fdfbbac923e9fe8e3b6088b402bb5f"}


def test_without_the_spare_redo_files_mysqls_first_blocks_start_as_quickly_as_the_rest():
    # BW: 92-100% of C2's values fast. MariaDB's C2 counted 11 of its 12 starts at the first look
    # and stopped at the next (12 counted of 13), main ±1.1%; MySQL's at its first look, ±0.8%. Its
    # first two blocks started in 1.13-1.15 s, copying the cached directory without the spares
    # (2.0-2.6 s in BV), and C2's overhead read 24.0%; C3's MySQL run 15.0% (18.0% in BV). BV vs
    # BW: 18 of 18 verdicts and labels alike, C2 within 0.4%. `make report` 7 m 58 s.
    events, starts = _epyc_build("BV", "BW", fast={"mariadb": 0.918, "mysql": 0.990},
                               main={"mariadb": 0.011, "mysql": 0.008}, c1_widest=0.018,
                               overhead={"binlog_default": 0.198, "charset_mismatch": 0.145,
                                         "collation_cost": 0.240, "insert_57_vs_80": 0.161},
                               pair_reads={"same_verdict": 18, "same_label": 18,
                                           "c2_apart": "mariadb 0.4%, mysql 0.0%"})
    assert max(starts) < 1.2


# 2026-11-27 17:29: a clean clone of 0d27cd3 (BW's measuring code)
COMMITS |= {"BX": "0d27cd3ae12217c0e7b65e9b67190a33652eae12"}


def test_in_an_hour_of_slower_mysql_starts_c2s_overhead_is_over_a_quarter_again():
    # BX: 99% of C2's values fast, the scans as quick as in BW, but MySQL's starts slower: 0.8-3.3 s
    # a block of C2 (0.7-1.2 in BW), 1.1-2.1 s a start of C1 (0.6-0.8), warm-ups up to 2.3 s. C2's
    # overhead 28.2% (MySQL's run 30.6%), C1's 17.5%. A single MySQL start timed at 17:40 took 0.54 s
    # again. BW vs BX: 18 of 18 verdicts, 17 labels (C4's size on MySQL, near an edge), C2 within
    # 0.7%. `make report` 8 m 24 s.
    events, starts = _epyc_build("BW", "BX", fast={"mariadb": 0.987, "mysql": 0.990},
                               main={"mariadb": 0.014, "mysql": 0.005}, c1_widest=0.017,
                               overhead={"binlog_default": 0.207, "charset_mismatch": 0.175,
                                         "collation_cost": 0.282, "insert_57_vs_80": 0.177},
                               pair_reads={"same_verdict": 18, "same_label": 17,
                                           "c2_apart": "mariadb 0.7%, mysql 0.1%"})
    assert min(starts) > 0.8 and max(starts) > 3.0


def test_five_epyc_builds_in_an_hour_and_a_half_agree_on_every_verdict():
    # BT-BX (15:53-17:29): ten pairs, 180 of 180 verdicts alike, 174 labels; the six label differences
    # are all C4's size on MySQL (2.74-2.80 against the published 2.85), marked near an edge
    pairs = bench_module("precision").builds_agreement(_tables(["BT", "BU", "BV", "BW", "BX"]))
    assert (pairs["same_verdict"].sum(), pairs["same_label"].sum(), pairs["marked"].sum()) == (180, 174, 6)
    assert (pairs["c2_over_3pct"] == "-").all()


# 2026-11-27 17:50: a clean clone of 79a93ef (BW's measuring code)
COMMITS |= {"BY": "79a93ef39f5e919977a200cd09953154e610c366"}


def test_twenty_minutes_after_bx_mysql_starts_quickly_again_and_c2s_overhead_is_under_a_quarter():
    # BY: 99-100% of C2's values fast; MariaDB's C2 ran 18 starts (main ±0.7%), MySQL's stopped at its
    # first look (±0.5%), its blocks starting in 1.0-1.5 s (0.8-3.3 in BX). C2's overhead 24.4%.
    # BX vs BY: 18 of 18 verdicts and labels, C2 within 0.1%. `make report` 8 m 13 s.
    events, starts = _epyc_build("BX", "BY", fast={"mariadb": 0.998, "mysql": 0.990},
                                 main={"mariadb": 0.007, "mysql": 0.005}, c1_widest=0.012,
                                 overhead={"binlog_default": 0.194, "charset_mismatch": 0.142,
                                           "collation_cost": 0.244, "insert_57_vs_80": 0.166},
                                 pair_reads={"same_verdict": 18, "same_label": 18,
                                             "c2_apart": "mariadb 0.1%, mysql 0.1%"})
    assert 0.9 < min(starts) and max(starts) < 1.6
    # all six EPYC builds of the evening: 15 pairs, every verdict alike
    pairs = bench_module("precision").builds_agreement(_tables(["BT", "BU", "BV", "BW", "BX", "BY"]))
    assert (pairs["same_verdict"].sum(), pairs["same_label"].sum()) == (270, 262)
    assert (pairs["c2_over_3pct"] == "-").all()


# 2026-11-27 18:38: a clean clone of 9454920 (design.timed_rounds: MySQL's C2 starts measured eight
# seconds, at most sixteen rounds; measurements flushed to disk once per unit)
COMMITS |= {"BZ": "945492033f3b24547b8770d95ac2247c6903ac86"}


def test_sixteen_rounds_a_mysql_start_bring_c2s_overhead_to_a_fifth_and_two_starts_slow_one_collation():
    # BZ: MySQL's C2 starts measured 15-16 rounds (8.0-8.5 s each) and C2's overhead read 19.6%
    # (MySQL's run 18.2%; MariaDB's 23.5%, its gaps between scans 5.6% of its wall time against
    # 6.6-6.8% with an fsync after every measurement). But two of MySQL's fourteen starts ran their
    # utf8mb3 scan 12% slower in every round (a layout state of that scan's code, unseen in the 110
    # EPYC starts before), so its main comparison read +-2.6% and the run went to its cap: C2 took
    # 196 s and `make report` 9 m 33 s. BY vs BZ: 18 of 18 verdicts and labels, C2 within 1.7%.
    events, _ = _epyc_build("BY", "BZ", fast={"mariadb": 0.963, "mysql": 0.991},
                            main={"mariadb": 0.014, "mysql": 0.026}, c1_widest=0.011,
                            overhead={"binlog_default": 0.185, "charset_mismatch": 0.143,
                                      "collation_cost": 0.196, "insert_57_vs_80": 0.154},
                            pair_reads={"same_verdict": 18, "same_label": 18,
                                        "c2_apart": "mariadb 0.9%, mysql 1.7%"},
                            looks=((10, False), (12, False)))
    added = [(e["added"], e["measured_s"]) for e in events if e["event"] == "timed_rounds"]
    assert len(added) == 7 and {a for a, _ in added} == {5, 6} and all(8 <= m < 8.6 for _, m in added)
    [run] = [path for _, path, m in _made_by(["BZ"])
             if (m["experiment"], m["default_target"]) == ("collation_cost", "mysql")]
    cap = _cap_event(run)
    assert cap["blocks"] == 14 and cap["decided"]
    scans = store.read_results(run).query("metric == 'elapsed_s'")
    fastest = scans.groupby(["repetition", "collation"])["value"].min().unstack()
    slow_mb3 = fastest["utf8mb3_general_ci"] / fastest["utf8mb3_general_ci"].median()
    assert sorted(slow_mb3[slow_mb3 > 1.05].index) == [1, 9] and slow_mb3.max() < 1.13
    # the same starts' utf8mb4_general scan was as quick as the others'
    mb4 = fastest["utf8mb4_general_ci"] / fastest["utf8mb4_general_ci"].median()
    assert mb4.max() < 1.03
    pairs = bench_module("precision").builds_agreement(_tables(["BT", "BU", "BV", "BW", "BX", "BY", "BZ"]))
    assert (pairs["same_verdict"].sum(), pairs["same_label"].sum()) == (378, 368)


# 2026-11-27 18:51: a clean clone of 507dbe8 (MySQL's C2 starts measure seven seconds, at most 14 rounds)
COMMITS |= {"CA": "507dbe8a8e3ec56385f70f1f1ada8617d7b5694b"}


def test_fourteen_rounds_a_mysql_start_keep_c2s_overhead_under_a_quarter_and_every_epyc_verdict_agrees():
    # CA: every MySQL C2 start measured 14 rounds (7.0-7.4 s); its look stopped it at ten starts,
    # main ±0.7%; MariaDB's stopped after 14 starts (±0.6%). C2's overhead 21.2% (MySQL's run 20.3%),
    # every claim 14.0-21.2%; `make report` 8 m 23 s. BZ vs CA: 18 of 18 verdicts and labels.
    events, _ = _epyc_build("BZ", "CA", fast={"mariadb": 0.995, "mysql": 0.968},
                            main={"mariadb": 0.006, "mysql": 0.007}, c1_widest=0.013,
                            overhead={"binlog_default": 0.187, "charset_mismatch": 0.14,
                                      "collation_cost": 0.212, "insert_57_vs_80": 0.162},
                            pair_reads={"same_verdict": 18, "same_label": 18,
                                        "c2_apart": "mariadb 0.3%, mysql 1.6%"})
    added = [(e["added"], e["measured_s"]) for e in events if e["event"] == "timed_rounds"]
    assert [a for a, _ in added] == [4] * 5 and all(6.9 < m < 7.5 for _, m in added)
    # every build on this processor, 2026-11-26 morning to 11-27 evening: 78 pairs, every verdict alike
    epyc = ["AJ", "AK", "AL", "AM", "AN", "BT", "BU", "BV", "BW", "BX", "BY", "BZ", "CA"]
    pairs = bench_module("precision").builds_agreement(_tables(epyc))
    assert len(pairs) == 78 and (pairs["same_verdict"].sum(), pairs["same_label"].sum()) == (1404, 1382)
    assert (pairs["processors"] == "same").all()


# 2026-11-27 19:19: a clean clone of f92df3f (CA's measuring code)
COMMITS |= {"CB": "f92df3f07230a941e5248c773dee21234a183dad"}


def test_a_second_build_of_fourteen_rounds_reads_as_ca_did():
    # CB: MySQL's C2 starts measured 14 rounds (7.1-7.2 s), its look stopped it at ten starts
    # (main ±0.5%), MariaDB's after 12 (±0.6%). C2's overhead 20.7%, every claim 14.1-20.7%;
    # `make report` 8 m 17 s. CA vs CB: 18 of 18 verdicts and labels, C2 within 0.4%.
    events, _ = _epyc_build("CA", "CB", fast={"mariadb": 0.99, "mysql": 0.97},
                            main={"mariadb": 0.006, "mysql": 0.005}, c1_widest=0.013,
                            overhead={"binlog_default": 0.189, "charset_mismatch": 0.141,
                                      "collation_cost": 0.207, "insert_57_vs_80": 0.156},
                            pair_reads={"same_verdict": 18, "same_label": 18,
                                        "c2_apart": "mariadb 0.4%, mysql 0.0%"})
    added = [(e["added"], e["measured_s"]) for e in events if e["event"] == "timed_rounds"]
    assert [a for a, _ in added] == [4] * 5 and all(7 <= m < 7.3 for _, m in added)


# 2026-11-27 19:29: a clean clone of 52e6ab6 (CA's measuring code)
COMMITS |= {"CC": "52e6ab6be3272c66c566add6d6af8541e0934d58"}


def test_a_third_build_of_fourteen_rounds_agrees_with_the_one_before():
    # CC: MySQL's C2 stopped at ten starts (main ±1.1%), MariaDB's after 14 (±1.4%); C2's overhead
    # 20.3%, every claim 14.1-20.3%. `make report` 9 m 5 s: C3's MariaDB run needed ten blocks
    # (seven in CA and CB), its defaults/v57_values comparison near its edge (1.012).
    # CB vs CC: 18 of 18 verdicts and labels, C2 within 0.6%.
    _epyc_build("CB", "CC", fast={"mariadb": 0.985, "mysql": 1.0},
                main={"mariadb": 0.014, "mysql": 0.011}, c1_widest=0.024,
                overhead={"binlog_default": 0.188, "charset_mismatch": 0.141,
                          "collation_cost": 0.203, "insert_57_vs_80": 0.153},
                pair_reads={"same_verdict": 18, "same_label": 18, "c2_apart": "mariadb 0.6%, mysql 0.6%"})


COMMITS |= {"CD": "c113f946d1bc28329797c14ee677ea3ef05919ec"}


def test_a_build_an_hour_later_agrees_with_the_one_before():
    # CD (2026-11-27 20:17, c113f94): MySQL's C2 stopped at ten starts (main ±0.7%), MariaDB's
    # after 12 (±0.7%); C2's overhead 20.8%, every claim 14.2-20.8%, `make report` 8 m 24 s.
    # CC vs CD: 18 of 18 verdicts and labels, C2 within 1.2%.
    _epyc_build("CC", "CD", fast={"mariadb": 0.991, "mysql": 0.996},
                main={"mariadb": 0.007, "mysql": 0.007}, c1_widest=0.017,
                overhead={"binlog_default": 0.185, "charset_mismatch": 0.142,
                          "collation_cost": 0.208, "insert_57_vs_80": 0.157},
                pair_reads={"same_verdict": 18, "same_label": 18, "c2_apart": "mariadb 1.2%, mysql 1.1%"})


COMMITS |= {"CE": "2ecd2d6bb1b703b791eaa6ee64d5f06a55749752"}


def test_a_build_after_the_full_runs_agrees_and_every_build_on_this_processor_agrees():
    # CE (2026-11-27 21:37, 2ecd2d6): MySQL's C2 stopped at ten starts (main ±0.4%), MariaDB's after
    # 12 (±1.0%); C2's overhead 20.5%, every claim 14.2-20.5%, `make report` 8 m 18 s.
    # CD vs CE: 18 of 18 verdicts and labels, C2 within 0.3%.
    _epyc_build("CD", "CE", fast={"mariadb": 0.988, "mysql": 0.996},
                main={"mariadb": 0.010, "mysql": 0.004}, c1_widest=0.011,
                overhead={"binlog_default": 0.191, "charset_mismatch": 0.142,
                          "collation_cost": 0.205, "insert_57_vs_80": 0.159},
                pair_reads={"same_verdict": 18, "same_label": 18, "c2_apart": "mariadb 0.0%, mysql 0.3%"})
    # every build on this processor, 2026-11-26 morning to 11-27 night: 136 pairs, every verdict alike;
    # every C2 estimate within 3% but in the 16 pairs with AK (MySQL's unicode/general, a run-level state)
    epyc = ["AJ", "AK", "AL", "AM", "AN", "BT", "BU", "BV", "BW", "BX", "BY", "BZ", "CA", "CB", "CC", "CD", "CE"]
    pairs = bench_module("precision").builds_agreement(_tables(epyc))
    assert len(pairs) == 136 and (pairs["same_verdict"].sum(), pairs["same_label"].sum()) == (2448, 2418)
    assert set(pairs.loc[pairs["c2_over_3pct"] != "-", "builds"].str.contains("AK")) == {True}
    assert (pairs["c2_over_3pct"] != "-").sum() == 16


# 2026-11-28, a third host: AMD EPYC family 25 model 17. CF and CG: clean clones of dff8cbf (CE's
# measuring code); CH: 51f7f8a (C3's and C4's rounds set by time, C1 MariaDB two bursts, C3
# MariaDB eight to fourteen timed rounds); CI: eef5cb6 (C3 MariaDB back to twelve fixed rounds); CJ:
# 2e4d47e, CK and CL (the next session): d83a98a (CI's measuring code); CM: d1f5d79 (the same
# measuring code, with the report's near-an-edge lines); CN (a session later): 86984b8 (the same);
# CO: 00c72ad (the same).
COMMITS |= {"CF": "dff8cbf441ea78f1d849d16c98c203f2bc2f15f9", "CG": "dff8cbf441ea78f1d849d16c98c203f2bc2f15f9",
            "CH": "51f7f8a897eea35753830650ccc0ad9cd36480db", "CI": "eef5cb6a545a053f2d04cd19e0e2971edacf0435",
            "CJ": "2e4d47e0a80eb4a0c0c1a44d972a08fafedba297", "CK": "d83a98a8af03eb39c821c589126b6e60e7451923",
            "CL": "d83a98a8af03eb39c821c589126b6e60e7451923", "CM": "d1f5d7902fd93aa01b788c93b867907fca9f8b0e",
            "CN": "86984b81a956322dc86087bdd9ce238bef15bc94", "CO": "00c72ad62501bb7fa2dc645667bfadeddef1a3aa"}


def _rounds(build: str) -> dict:
    """The rounds each block of a build's C1, C3 and C4 runs measured, block by block, per
    (experiment, server)."""
    rounds = {}
    for _, path, manifest in _made_by([build]):
        if manifest["experiment"] == "collation_cost":
            continue
        per_block = store.read_results(path).groupby("repetition")["iteration"].max() + 1
        rounds[manifest["experiment"], manifest["default_target"]] = list(per_block)
    return rounds


def test_the_family_25_builds_meet_every_width_and_differ_only_on_mariadbs_edge_comparison(capsys):
    # CF (00:45), CG (01:00), CH (01:21), CI (02:15), CJ (04:12), CK (05:59), CL (06:19), CM (07:00),
    # CN (10:25), CO (12:11): C2's main comparison within ±0.6-2.6%, C1 ±2.1% at the widest, every
    # claim's overhead at most 25%; 67-98% of C2's values fast. MySQL's main comparison reads 1.80-1.82
    # here (1.44 on family 26). Over the 45 pairs, 794 of 810 verdicts alike; the sixteen differences
    # are MariaDB's utf8mb4_general/utf8mb3 (1.051-1.066 against its 5% band): "contradicted: higher
    # than 1.05" in CF, CG and CJ-CO, "inconclusive" in CH and CI.
    builds = ["CF", "CG", "CH", "CI", "CJ", "CK", "CL", "CM", "CN", "CO"]
    tables = _tables(builds)
    readings = {b: _c2_reading(tables, b) for b in builds}
    assert {b: {t: round(x, 3) for t, x in main.items()} for b, (_, main) in readings.items()} == {
        "CF": {"mariadb": 0.015, "mysql": 0.015}, "CG": {"mariadb": 0.016, "mysql": 0.020},
        "CH": {"mariadb": 0.012, "mysql": 0.026}, "CI": {"mariadb": 0.017, "mysql": 0.016},
        "CJ": {"mariadb": 0.012, "mysql": 0.010}, "CK": {"mariadb": 0.009, "mysql": 0.012},
        "CL": {"mariadb": 0.008, "mysql": 0.007}, "CM": {"mariadb": 0.010, "mysql": 0.006},
        "CN": {"mariadb": 0.008, "mysql": 0.012}, "CO": {"mariadb": 0.007, "mysql": 0.017}}
    assert all(0.67 <= share <= 0.98 for fast, _ in readings.values() for share in fast.values())
    assert max(tables[b].query("claim == 'C1'")["half_width"].max() for b in builds) == pytest.approx(0.021, abs=0.001)
    _every_claims_overhead_at_most(builds, 0.25)
    pairs = bench_module("precision").builds_agreement(tables)
    assert (pairs["same_verdict"].sum(), pairs["same_label"].sum(), len(pairs)) == (794, 794, 45)
    assert (pairs["c2_over_3pct"] == "-").all() and set(pairs["processors"]) == {"same"}
    verdicts = pd.DataFrame({name: t.set_index(["claim", "comparison", "target"])["verdict"]
                             for name, t in tables.items()})
    assert list(verdicts[verdicts.nunique(axis=1) > 1].index) == [("C2", "utf8mb4_general_vs_utf8mb3", "mariadb")]
    mysql_main = [t.query("comparison == 'uca_ai_vs_utf8mb3' and target == 'mysql'")["estimate"].item()
                  for t in tables.values()]
    assert all(1.79 < x < 1.83 for x in mysql_main)


def test_the_family_25_builds_analysed_together_decide_mariadbs_edge_comparison():
    # No single quick run of this host decides MariaDB's utf8mb4_general/utf8mb3 (1.051-1.064 against
    # 1.05); its seven runs of CF-CL analysed together, runs as the top level, read it above the band
    tables = _tables(["CF", "CG", "CH", "CI", "CJ", "CK", "CL"])
    runs = [path.name for name, dirs in bench_module("precision").build_runs(list(tables), None).items()
            for path in dirs if store.read_manifest(path)["experiment"] == "collation_cost"
            and store.read_manifest(path)["default_target"] == "mariadb"]
    (together,) = report.analyze_runs(runs, RAW)
    general = together.table.set_index("comparison").loc["utf8mb4_general_vs_utf8mb3"]
    assert general["n_runs"] == 7 and general["verdict_label"] == "contradicted: higher than 1.05"
    assert 1.05 < general["ci_low"] < general["estimate"] < 1.07
    # two runs that each decide it (CK, CL) read it inconclusive together: runs are the units, df 1
    (pair,) = report.analyze_runs(runs[-2:], RAW)
    general = pair.table.set_index("comparison").loc["utf8mb4_general_vs_utf8mb3"]
    assert general["n_runs"] == 2 and general["verdict_label"] == "inconclusive"
    assert general["ci_low"] < 1.04 and general["ci_high"] > 1.08


def test_rounds_set_by_time_give_the_slow_disk_fewer_rounds_and_keep_c3_mariadbs_blocks_fixed():
    # CG measured C3 MySQL's thirty fixed rounds and C4's eleven; with rounds set by time (CH, CI) a
    # block measured until 18 s (C3 MySQL) or 8 s (C4), so this host's slower disk got 18-20 and 8-10.
    # C1 MariaDB: two bursts a start. CH's C3 MariaDB at eight to nine rounds needed 16 blocks; CI's at
    # twelve fixed rounds, 7 (CG's: 10).
    rounds = {build: _rounds(build) for build in ("CG", "CH", "CI")}
    kinds = {build: {key: sorted(set(per_block)) for key, per_block in r.items()} for build, r in rounds.items()}
    assert kinds["CG"] == {("charset_mismatch", "mariadb"): [3], ("charset_mismatch", "mysql"): [4],
                             ("insert_57_vs_80", "mariadb"): [12], ("insert_57_vs_80", "mysql"): [30],
                             ("binlog_default", "mariadb"): [11], ("binlog_default", "mysql"): [11]}
    assert kinds["CH"] == {("charset_mismatch", "mariadb"): [2], ("charset_mismatch", "mysql"): [4],
                             ("insert_57_vs_80", "mariadb"): [8, 9], ("insert_57_vs_80", "mysql"): [18, 19, 20],
                             ("binlog_default", "mariadb"): [8, 10], ("binlog_default", "mysql"): [8]}
    assert kinds["CI"] == {("charset_mismatch", "mariadb"): [2], ("charset_mismatch", "mysql"): [4],
                             ("insert_57_vs_80", "mariadb"): [12], ("insert_57_vs_80", "mysql"): [18],
                             ("binlog_default", "mariadb"): [9], ("binlog_default", "mysql"): [8]}
    blocks = {build: len(r["insert_57_vs_80", "mariadb"]) for build, r in rounds.items()}
    assert blocks == {"CG": 10, "CH": 16, "CI": 7}


def _full_c4_sets_meet_5pct(listing: str, cpu: tuple[str, str, str], commit: str,
                            mariadb: tuple[float, float], mysql: tuple[float, float]) -> None:
    """A host's two sets of C4 full runs (data/full_runs_*.json): each on that processor, from a
    clean clone of `commit`, within 5% on both servers, smaller than published, in the ranges."""
    listed = json.loads((ROOT / "data" / listing).read_text())
    precision = bench_module("precision")
    for runs in (listed["runs"], listed["second"]["runs"]):
        assert list(runs) == ["binlog_default"]
        for run_id in runs["binlog_default"]:
            manifest = _shipped(run_id)
            assert manifest["profile"] == "full" and manifest["experiment"] == "binlog_default", run_id
            host = manifest["provenance"]["host"]["cpu"]
            assert (host["vendor"], host["family"], host["model"]) == cpu, run_id
            assert manifest["provenance"]["git"] == {"commit": commit, "dirty": False}, run_id
        table = precision.table([store.find_run(r, RAW) for r in runs["binlog_default"]]).set_index("target")
        assert sorted(table.index) == ["mariadb", "mysql"]
        assert (table["half_width"] <= 0.05).all(), table["half_width"]
        assert (table["verdict_label"] == "supported, smaller than published").all()
        assert mariadb[0] < table.loc["mariadb", "estimate"] < mariadb[1]
        assert mysql[0] < table.loc["mysql", "estimate"] < mysql[1]


def test_the_family_25_full_runs_meet_c4s_5pct_on_both_servers():
    # data/README.md, "A third host": C4 at the full profile (twelve blocks of sixteen rounds),
    # MariaDB and MySQL, in two sets at different times, each from the clean clone of a quick build
    _full_c4_sets_meet_5pct("full_runs_family25.json", ("AuthenticAMD", "25", "17"), COMMITS["CK"],
                            mariadb=(2.1, 2.4), mysql=(2.35, 2.6))


# The shipped builds up to CN (2026-11-28 10:25): the calibration below is read over exactly these.
THROUGH_CN = list(json.loads((ROOT / "data" / "quick_builds.json").read_text()))[:70]


def test_same_on_a_rerun_is_read_against_the_other_builds_of_each_processor(capsys):
    # README, "Same on a rerun": over the 70 builds I-CN (1260 verdicts), the reported plug-in chance
    # runs above the other builds' agreement where it is below 99%, most on the noisy hosts; a
    # predictive chance (the truth drawn from the run's interval) scores better over all the builds
    # and worse on the two EPYC hosts whose builds agree most, so the reports keep the plug-in
    assert THROUGH_CN[0] == "I" and THROUGH_CN[-1] == "CN"
    precision = bench_module("precision")
    frame = precision.calibration(_tables(THROUGH_CN))
    assert len(frame) == 1260 and frame["build"].nunique() == 70
    assert frame[["rerun_chance", "predictive", "observed"]].apply(lambda c: c.between(0, 1).all()).all()
    reported, predictive = (precision.calibration_bins(frame, c) for c in ("rerun_chance", "predictive"))
    assert reported.loc["all", "observed"] == pytest.approx(0.930, abs=0.001)
    assert reported.loc["all", "chance"] == pytest.approx(0.956, abs=0.001)
    assert reported.loc["all", "brier"] == pytest.approx(0.0214, abs=0.0002)
    assert predictive.loc["all", "brier"] == pytest.approx(0.0191, abs=0.0002)
    over = reported["chance"] - reported["observed"]
    assert over["90%-95%"] > 0.15 and over["95%-99%"] > 0.05 and abs(over["0%-80%"]) < 0.02
    assert reported["verdicts"].iloc[:-1].sum() == 1260
    brier = frame.assign(reported=(frame["rerun_chance"] - frame["observed"]) ** 2,
                         predicted=(frame["predictive"] - frame["observed"]) ** 2).groupby("processor")[
        ["reported", "predicted"]].mean()
    epyc = brier.index.str.contains("family 2[56]")
    assert epyc.sum() == 2 and (brier.loc[epyc, "reported"] < brier.loc[epyc, "predicted"]).all()
    assert (brier.loc[~epyc, "reported"] > brier.loc[~epyc, "predicted"]).all()
    # the chances between 80% and 99% hold on the EPYC hosts and not on the Intel host
    middle = frame[frame["rerun_chance"].between(0.8, 0.99, inclusive="left")]
    held = middle.groupby("processor")[["rerun_chance", "observed"]].mean()
    family = {re.search(r"family (\d+ model \d+)", p).group(1): row for p, row in held.iterrows() if " model " in p}
    assert abs(family["25 model 17"]["rerun_chance"] - family["25 model 17"]["observed"]) < 0.01
    assert abs(family["26 model 2"]["rerun_chance"] - family["26 model 2"]["observed"]) < 0.03
    assert family["6 model 207"]["rerun_chance"] - family["6 model 207"]["observed"] > 0.2
    precision.print_calibration(_tables(["CF", "CG", "CH"]))
    out = capsys.readouterr().out
    assert out.startswith("Same on a rerun against the other builds of each processor (54 verdicts of 3 builds)")
    assert "reported (plug-in):" in out and "predictive:" in out
    assert "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1): 54 verdicts" in out


# 2026-11-29 03:49-04:41, an Intel Xeon of family 6, model 167 (the fourth processor of this VM kind
# here), nothing beside the builds: CP-CS clean clones of b7394d6, CT of e4e0a4f (the idle-time
# witness; the same measuring code), CU (05:39) of 36d8940. data/README.md, "A fourth host".
MODEL_167 = ["CP", "CQ", "CR", "CS", "CT", "CU"]
COMMITS |= {"CP": "b7394d6fc266861bd249d25b6f8043cdb4f3a4ef", "CQ": "b7394d6fc266861bd249d25b6f8043cdb4f3a4ef",
            "CR": "b7394d6fc266861bd249d25b6f8043cdb4f3a4ef", "CS": "b7394d6fc266861bd249d25b6f8043cdb4f3a4ef",
            "CT": "e4e0a4fbd70392340efa8fc7d96575f97abe12fe", "CU": "36d89403270ea30ef2460daa26b191ec34fcbe70"}


def test_the_model_167_builds_meet_c2s_width_and_differ_where_a_comparison_sits_on_an_edge():
    # C2 stops at its fewest starts here (12 MariaDB, 10 MySQL), 98-100% of its values fast, main
    # comparison ±0.25-1.1%; MySQL's reads 1.55-1.56 (1.44 on family 26, 1.80 on family 25). C1 meets
    # its 5% but in CP, whose MariaDB run was 40% idle time (±6.7%). 248 of 270 verdicts alike over
    # fifteen pairs: CP's C1 mismatch/utf8mb4 on MariaDB, and two comparisons on their edges in every
    # build, MySQL's C1 utf8mb4/latin1 (0.957-0.973 against 0.95) and MariaDB's C2 utf8mb4_general/
    # utf8mb3 (1.043-1.050 against 1.05).
    for _, _, manifest in _made_by(MODEL_167):
        cpu = manifest["provenance"]["host"]["cpu"]
        assert (cpu["vendor"], cpu["family"], cpu["model"]) == ("GenuineIntel", "6", "167")
    tables = _tables(MODEL_167)
    readings = {b: _c2_reading(tables, b) for b in MODEL_167}
    assert {b: {t: round(x, 3) for t, x in main.items()} for b, (_, main) in readings.items()} == {
        "CP": {"mariadb": 0.005, "mysql": 0.007}, "CQ": {"mariadb": 0.003, "mysql": 0.011},
        "CR": {"mariadb": 0.004, "mysql": 0.006}, "CS": {"mariadb": 0.004, "mysql": 0.006},
        "CT": {"mariadb": 0.003, "mysql": 0.004}, "CU": {"mariadb": 0.003, "mysql": 0.005}}
    assert all(share >= 0.98 for fast, _ in readings.values() for share in fast.values())
    c1_widest = {b: round(t.query("claim == 'C1'")["half_width"].max(), 3) for b, t in tables.items()}
    assert c1_widest == {"CP": 0.067, "CQ": 0.019, "CR": 0.015, "CS": 0.037, "CT": 0.016, "CU": 0.025}
    _every_claims_overhead_at_most(MODEL_167, 0.25)
    pairs = bench_module("precision").builds_agreement(tables)
    assert (pairs["same_verdict"].sum(), pairs["same_label"].sum(), len(pairs)) == (248, 243, 15)
    assert (pairs["c2_over_3pct"] == "-").all() and set(pairs["processors"]) == {"same"}
    verdicts = pd.DataFrame({name: t.set_index(["claim", "comparison", "target"])["verdict"]
                             for name, t in tables.items()})
    assert sorted(verdicts[verdicts.nunique(axis=1) > 1].index) == [
        ("C1", "mismatch_vs_utf8mb4", "mariadb"), ("C1", "utf8mb4_vs_latin1", "mysql"),
        ("C2", "utf8mb4_general_vs_utf8mb3", "mariadb")]
    mysql_main = [t.query("comparison == 'uca_ai_vs_utf8mb3' and target == 'mysql'")["estimate"].item()
                  for t in tables.values()]
    assert all(1.54 < x < 1.57 for x in mysql_main)


def test_cps_idle_c1_iterations_are_flagged_and_its_normal_state_reads_as_the_other_builds():
    # CP's C1 MariaDB run: 4 of 10 iterations at 0.55-0.65x the QPS with busy shares 0.80-0.87 against
    # 0.98-1.00, every probe normal. The idle-time witness flags exactly those; the probe none.
    (path,) = [p for _, p, m in _made_by(["CP"])
               if (m["experiment"], m["default_target"]) == ("charset_mismatch", "mariadb")]
    results = store.read_results(path)
    qps = results[results["metric"] == "qps"]
    flags = stats.speed_flags(results)[qps.index]
    probes = results[results["metric"].isin(stats.PROBE_METRICS)]["value"]
    assert probes.max() < 1.2 * probes.min()
    latin1 = qps.assign(slow=flags)[qps["charset"] == "latin1"]
    assert latin1["slow"].sum() == 4
    assert latin1.loc[latin1["slow"], "value"].max() < 0.7 * latin1.loc[~latin1["slow"], "value"].min()
    claim = load_claims(ROOT / "data" / "claims.yaml")["C1"]
    every = stats.analyze(results, claim).set_index("comparison")
    normal = stats.analyze(results, claim, normal_only=True).set_index("comparison")
    assert every.loc["mismatch_vs_latin1", "flagged_share"] == pytest.approx(0.4)
    assert (round(every.loc["mismatch_vs_latin1", "estimate"], 3), every.loc["mismatch_vs_utf8mb4", "verdict"]) == (
        0.883, "inconclusive")
    main = normal.loc["mismatch_vs_latin1"]
    assert round(main["estimate"], 3) == 0.854 and main["ci_high"] / main["ci_low"] - 1 < 0.02
    assert normal.loc["mismatch_vs_utf8mb4", "verdict"] == "supported"
    # the other builds' MariaDB runs, every measurement used: 0.846-0.859
    others = [t.query("comparison == 'mismatch_vs_latin1' and target == 'mariadb'")["estimate"].item()
              for b, t in _tables(MODEL_167).items() if b != "CP"]
    assert all(0.84 < x < 0.86 for x in others)


def test_the_model_167_full_runs_meet_c4s_5pct_on_both_servers():
    # data/README.md, "A fourth host": C4 at the full profile (twelve blocks of sixteen rounds),
    # MariaDB and MySQL, in two sets (05:02 and 05:12), from the clean clone of 92e33db after build CT
    _full_c4_sets_meet_5pct("full_runs_model167.json", ("GenuineIntel", "6", "167"),
                            "92e33dbf60dc055e9065861e05287d90311ebae1", mariadb=(2.3, 2.55), mysql=(2.5, 2.75))


def test_over_the_one_vcpu_builds_c1s_estimate_follows_the_machines_speed():
    # `claimlab analyze` of CV-DA's C1 runs: the runs differ (MariaDB's mismatch / latin1 0.855-0.887),
    # and a run's estimate falls as its latin1 QPS rises (DA's 37,400 against 26,000-27,600).
    runs = [path.name for _, path, manifest in _made_by(ONE_VCPU) if manifest["experiment"] == "charset_mismatch"]
    (c1,) = report.analyze_runs(runs, RAW)
    spread = stats.run_spread(c1.results, c1.claim).set_index(["comparison", "target"])
    mariadb, mysql = (spread.loc[("mismatch_vs_latin1", t)] for t in ("mariadb", "mysql"))
    assert mariadb["n_runs"] == 22 and mariadb["p_runs_differ"] < 1e-6
    # MariaDB -0.95 over CV-DI; -0.94 with DJ (20% of its bursts flagged by one probe of 19 ms), -0.93 with DK-DQ
    assert mariadb["baseline_corr"] < -0.9 and mysql["baseline_corr"] < -0.6
    assert mariadb["baseline"] == "charset=latin1 oltp/qps"
    # data/README.md, "The edge comparisons, runs as the top level": the runs together settle
    # MySQL's mismatch / latin1, which DD alone left "inconclusive" across its 0.952 edge
    together = c1.table.set_index(["comparison", "target"]).loc[("mismatch_vs_latin1", "mysql")]
    assert (together["verdict"], round(together["estimate"], 3)) == ("contradicted", 0.973)
    assert together["ci_low"] > 0.97 and together["rerun_chance"] > 0.99


def test_within_a_start_mysqls_c1_effect_grows_from_burst_to_burst_and_mariadbs_does_not():
    # data/README.md, "MySQL's C1 effect after a start's first minute": over CV-DF's C1 runs, a MySQL
    # start's third burst read mismatch / latin1 0.8% further from 1 than its first (0.968 against
    # 0.976 on average, 50 starts; with DG 0.7%, 55 starts, p 0.005); MariaDB's two bursts read alike.
    # A quick run measures a MySQL start's first 15 s, where the effect is still growing toward the ~0.96
    # of its later minutes.
    from scipy import stats as scipy_stats
    steps = {}
    for _, path, manifest in _made_by(ONE_VCPU):
        if manifest["experiment"] != "charset_mismatch":
            continue
        results = store.read_results(path)
        qps = results[results["metric"] == "qps"].pivot_table(
            index=["repetition", "iteration"], columns="charset", values="value")
        log_ratio = np.log(qps["mismatch"] / qps["latin1"]).unstack("iteration")
        last = 2 if manifest["default_target"] == "mysql" else 1
        if last not in log_ratio:   # CX measured two MySQL bursts a start
            continue
        steps.setdefault(manifest["default_target"], []).extend(log_ratio[last] - log_ratio[0])
    mysql, mariadb = (np.array(steps[t]) for t in ("mysql", "mariadb"))
    assert (len(mysql), len(mariadb)) == (105, 110)
    assert -0.01 < mysql.mean() < -0.006 and scipy_stats.ttest_1samp(mysql, 0).pvalue < 0.01
    assert abs(mariadb.mean()) < 0.003 and scipy_stats.ttest_1samp(mariadb, 0).pvalue > 0.05


def test_over_the_model_167_builds_mariadbs_c2_ratios_follow_the_machines_speed_and_mysqls_do_not():
    # data/README.md, "C2 follows the machine's speed too": 28 runs a server (CP-DQ), C2's design
    # unchanged since CP; MariaDB's utf8mb3 scan 52.9-54.4 ms in CP-CU, 56.7-67.1 ms after.
    runs = [path.name for _, path, manifest in _made_by(MODEL_167 + ONE_VCPU)
            if manifest["experiment"] == "collation_cost"]
    (c2,) = report.analyze_runs(runs, RAW)
    spread = stats.run_spread(c2.results, c2.claim).set_index(["comparison", "target"])
    assert (spread["n_runs"] == 28).all()
    mariadb = spread.xs("mariadb", level="target")
    # -0.71 to -0.86 over CP-DC; with DD (a faster baseline, utf8mb4_general/utf8mb3 at 1.050), DE, DF and DG,
    # -0.69 to -0.80; with DH (slower, utf8mb4_general/utf8mb3 at 1.051) -0.60 to -0.73, with DI -0.58 to
    # -0.73, with DJ -0.62 to -0.76, with DK -0.60 to -0.75, with DL
    # -0.59 to -0.72, with DM and DN -0.58 to -0.70, with DO and DP -0.60 to -0.72, with DQ too (unicode/general's
    # runs differ at p 0.005-0.009 since DM, under 0.005 before), and MySQL's runs p 0.68-0.9993 (0.66-0.9997 with DQ)
    assert (mariadb["p_runs_differ"] < 0.01).all() and (mariadb["baseline_corr"] < -0.55).all()
    assert (spread.xs("mysql", level="target")["p_runs_differ"] > 0.35).all()
    main = spread.loc[("uca_ai_vs_utf8mb3", "mariadb")]
    assert main["baseline"] == "collation=utf8mb3_general_ci varchar_scan/elapsed_s"
    # data/README.md, "The edge comparisons, runs as the top level": utf8mb4_general / utf8mb3,
    # which single runs read on both sides of "inconclusive", is within 5% on both servers
    together = c2.table.set_index(["comparison", "target"]).loc["utf8mb4_general_vs_utf8mb3"]
    assert together["verdict"].to_dict() == {"mariadb": "supported", "mysql": "supported"}
    assert together["ci_high"].round(3).to_dict() == {"mariadb": 1.045, "mysql": 1.012}
    assert (together["rerun_chance"] > 0.99).all()
    levels = stats.run_levels(c2.results, c2.claim).query("comparison == 'uca_ai_vs_utf8mb3' and target == 'mariadb'")
    assert levels["run_id"].is_monotonic_increasing   # run ids begin with their time
    assert max(levels["baseline_level"][:6]) < 0.0545 < 0.0565 < min(levels["baseline_level"][6:])


def test_c1s_full_runs_on_one_vcpu_agree_in_two_states_and_the_faster_reads_the_larger_effect(capsys):
    # data/README.md, "C1's full runs on one vCPU": two sets from the clean clone of ffaeafd, at
    # 11:24 (the slower state of CV-CZ) and 12:16 (the faster one of DA). Every verdict alike, every
    # half-width under 2.2%; the second set ran at 1.25-1.36x the QPS and read MariaDB's effect
    # larger (0.894 against 0.914), as the quick builds and the bench do.
    listed = json.loads((ROOT / "data" / "full_runs_c1_one_vcpu.json").read_text())
    sets = [listed["runs"]["charset_mismatch"], listed["second"]["runs"]["charset_mismatch"]]
    assert list(listed["runs"]) == list(listed["second"]["runs"]) == ["charset_mismatch"]
    latin1 = {}
    for number, run_ids in enumerate(sets):
        for run_id in run_ids:
            manifest = _shipped(run_id)
            assert (manifest["profile"], manifest["experiment"], manifest["design"]["cpus"]) == (
                "full", "charset_mismatch", [1]), run_id
            cpu = manifest["provenance"]["host"]["cpu"]
            assert (cpu["vendor"], cpu["family"], cpu["model"]) == ("GenuineIntel", "6", "167")
            assert manifest["provenance"]["git"] == {"commit": COMMITS["CZ"], "dirty": False}, run_id
            results = store.read_results(store.find_run(run_id, RAW))
            qps = results[(results["metric"] == "qps") & (results["charset"] == "latin1")]["value"]
            latin1[number, manifest["default_target"]] = qps.median()
    assert all(1.2 < latin1[1, t] / latin1[0, t] < 1.4 for t in ("mariadb", "mysql")), latin1
    precision = bench_module("precision")
    tables = [precision.table([store.find_run(r, RAW) for r in run_ids]).set_index(["comparison", "target"])
              for run_ids in sets]
    assert all((t["half_width"] < 0.022).all() for t in tables)
    main = [round(t.loc[("mismatch_vs_latin1", "mariadb"), "estimate"], 3) for t in tables]
    assert main == [0.914, 0.894]
    assert precision.main(["--data", str(RAW), "--run", *sets[0], "--against", *sets[1]]) == 0
    assert "same verdict: 6 of 6; same label: 6 of 6" in capsys.readouterr().out


def test_with_normal_state_measurements_only_every_model_167_c1_run_meets_5pct(capsys):
    # `bench/precision.py --normal-only`: C1's widest comparison under 2% in every build of this host
    # (CP: 6.7% with every measurement), MariaDB's mismatch / latin1 0.845-0.859 in all six
    precision = bench_module("precision")
    for name, dirs in precision.build_runs(MODEL_167, None).items():
        c1 = precision.table([d for d in dirs if d.parent.name == "charset_mismatch"], normal_only=True)
        assert c1["half_width"].max() < 0.02, name
        main = c1.query("comparison == 'mismatch_vs_latin1' and target == 'mariadb'")["estimate"].item()
        assert 0.84 < main < 0.86, name
    assert precision.main(["--normal-only", "--run", "20261129T035044Z-7fb728"]) == 0
    assert "0.854 [0.846, 0.861] at 0.975" in capsys.readouterr().out


# 2026-11-29 09:13 and 09:30, the same host (model 167), C1 on one vCPU (`design.cpus: [1]`,
# data/README.md, "Idle time is wake-ups across vCPUs"): CV a clean clone of ffa68c5, CW of f831e53
# (documentation only after ffa68c5). Nothing ran beside them but in CW's first C1 MariaDB start:
# this session's `bench/precision.py` on CV, pinned to vCPU 0 (0.87 and 0.31 of a core, recorded
# as `other_cpu_cores`), its bursts' QPS and ratios within those of the other four starts.
# CX (09:55), of 8d1ebc9, measured two MySQL C1 bursts a start instead of four; in a slow hour (C2's
# MariaDB run 23 starts, `make report` 12 m 6 s). CY (10:11), of 13f0e9a, three MySQL bursts a start.
# CZ (11:34, the next session), of ffaeafd (CY's design): `make report` 9 m 44 s. DA (12:07), of
# bafb3bf (the same design), in a faster state: `make report` 8 m 40 s, MariaDB's C1 back at 0.855.
# DB (12:35), of e9161b9 (the same design; `claimlab analyze` prints each run's baseline): 8 m 49 s.
# DC (13:55, the next session), of 0a6e10d (the same design): 8 m 52 s, every goal met. DD (14:42), of
# 84f91ae (the same design; `stats.run_levels`): 8 m 41 s, in the faster state (MySQL's C1 at 1.45x DC's QPS).
# DE (15:14), of 37df8e0 (the same design): 9 m 20 s (C3's MariaDB run to more blocks), every goal met.
# DF (17:06, the next session), of 4005a63 (the same design): 9 m 20 s, every goal met. DG (17:48), of
# b02e025 (the speed probe sized from the fastest warm-up call, since reverted): 9 m 23 s. DH (18:19), of
# d5c5f73 (DF's design), in a slower state: 10 m 17 s, C2's overhead 25.3%. DI (20:23, the next session),
# of 788a670 (DF's design; messages and docs only): 10 m 27 s, C2's MySQL main comparison ±2.9%, overhead 17.0-23.0%.
# DJ (21:05), of fdcf6c0 (the same measured design): 9 m 44 s; one 19-ms probe flagged 20% of MariaDB's C1 run.
# DK (21:22), of 7a150cc (the same measured design), in a slower state: 11 m 21 s, overhead 19.0-24.1%.
# DL (21:39), of b943306 (the same measured design): 9 m 44 s; C2's overhead 25.4%, its scans fast.
# DM (23:09), of b25b412 (the same measured design): 9 m 34 s; overhead 16.6-24.1%.
# DN (23:49), of 4073ba1 (the same measured design): 9 m 8 s; overhead 17.1-24.1%.
# DO (00:15), of ab0b6ed (the same measured design): 9 m 44 s; overhead 18.8-24.1%.
# DP (02:07), of e7ea20d (the same measured design): 9 m 46 s; C2's overhead 25.1%.
# DQ (02:33), of b080180 (the same measured design): 9 m 40 s; overhead 16.1-23.7%.
ONE_VCPU = ["CV", "CW", "CX", "CY", "CZ", "DA", "DB", "DC", "DD", "DE", "DF", "DG", "DH", "DI", "DJ", "DK", "DL",
            "DM", "DN", "DO", "DP", "DQ"]
COMMITS |= {"CV": "ffa68c57b31d4be81b4829a891d50396d43286c8", "CW": "f831e53c92960cc5633f2972ff66a013801e7211",
            "CX": "8d1ebc9c4ea2276166a31e8d3bc301e6c1f66856", "CY": "13f0e9ae407228510a52a9b24aca6fb185752485",
            "CZ": "ffaeafd05bce9cb53bbdcbd4f24bc27848ff2e3a", "DA": "bafb3bf12606ec79225d04b274416997006739cb",
            "DB": "e9161b983d5e49fdaa023ccc5e48fe949723ef6e", "DC": "0a6e10de561197fce1551232f91e302b0c0407b5",
            "DD": "84f91ae1bd42f585a54444d563723a15568c827b", "DE": "37df8e0cfa32b795c4b2cefef32f2176949de1cf",
            "DF": "4005a63e4c72904f448969b0b342614d555ea331", "DG": "b02e0250a8618d44f81448b43dcd2473273afaaf",
            "DH": "d5c5f731688c75fc62a741937744445a43f93f2f", "DI": "788a670e7926c5aec34a4b9ca52e015beb236cee",
            "DJ": "fdcf6c063b8366034d926123cfe7287d3a29017f", "DK": "7a150cc6e13ee3b43d6b9f87cdcb24d793eaba7c",
            "DL": "b943306e2577de51794be79949cfd7071a9d7ad4", "DM": "b25b412e6fba4189643b6d2ca43cba531e7d9dd2",
            "DN": "4073ba18fd7132baf10ed754c55fbf07409863a2", "DO": "ab0b6ed53ae850718898ae2d943ab59e6895a2a3",
            "DP": "e7ea20d467d78467b579bccf5d9fed58d7705ca8", "DQ": "b080180fc890c7a122b44ec4dd5d3c2aa1b67211"}


def test_c1_on_one_vcpu_never_idles_and_meets_5pct_with_room_where_two_vcpus_did_not():
    # C1's runs: every measurement with the machine about half busy (its vCPU 1 of two), none
    # flagged by either witness, and the widest comparison ±0.9-1.0% (CP-CU on two vCPUs: ±1.5-6.7%);
    # ±1.7% in CX, whose MySQL run measured two bursts a start, ±1.3% in CY (three), ±1.6% in CZ,
    # ±1.4% in DA and DB, ±1.0% in DC, ±2.4% in DD, ±1.7% in DE, ±1.4% in DF, ±1.5% in DG, ±1.4% in DH,
    # ±1.3% in DI, ±1.4% in DJ, ±1.5% in DK, ±2.3% in DL. C1's verdicts
    # alike but in DD; what differs there is C2's utf8mb4_general / utf8mb3, on its edges. In DD, faster,
    # MySQL's mismatch / latin1 read
    # 0.960 [0.937, 0.983]: "inconclusive" across its 0.952 edge, as in CP-CU on two vCPUs. The
    # machine's state moved C1's ratios: MariaDB's mismatch / latin1 0.876-0.887 in CV-CZ, 0.855 in
    # DA as in CP-CU (0.846-0.859, 03:49-05:39), 0.861 in DD; MySQL's latin1 comparisons 0.968-0.986
    # in CV-DC, 0.957-0.973 in CP-CU.
    c1, flagged = 0, {}
    for name, path, manifest in _made_by(ONE_VCPU):
        cpu = manifest["provenance"]["host"]["cpu"]
        assert (cpu["vendor"], cpu["family"], cpu["model"]) == ("GenuineIntel", "6", "167")
        if manifest["experiment"] != "charset_mismatch":
            assert manifest["design"]["cpus"] is None
            continue
        c1 += 1
        assert manifest["design"]["cpus"] == [1]
        results = store.read_results(path)
        per_metric = results.pivot_table(index=["repetition", "iteration"], columns="metric", values="value")
        own = per_metric["machine_busy_share"] - per_metric["other_cpu_cores"] / 2   # two vCPUs
        # 0.49 and over but in DQ's last MySQL burst, 0.486: vCPU 1 idle for about 3% of it, at
        # the QPS of the run's other bursts and with normal probes
        assert own.between(0.485, 0.6).all(), own.describe()
        # with every probe made equal nothing is flagged: the idle-time witness does not apply at a
        # busy share of 0.5; the probe flagged 7% of CY's MySQL run (a slow CPU state) and 20% of DH's MariaDB
        # run (one probe of 18 ms among 10.4-11.0 ms, between two bursts of normal QPS), and of DJ's (19 ms);
        # DK's one (20 ms, after a start's last burst) 10%
        qps = results["metric"] == "qps"
        flagged[name, manifest["default_target"]] = round(stats.speed_flags(results)[qps].mean(), 2)
        assert stats.speed_flags(results.drop(columns="value").assign(
            value=results["value"].where(~results["metric"].isin(stats.PROBE_METRICS), 0.01)))[qps].eq(False).all()
    assert c1 == 44
    assert {k: v for k, v in flagged.items() if v} == {("CY", "mysql"): 0.07, ("DH", "mariadb"): 0.2,
                                                            ("DJ", "mariadb"): 0.2, ("DK", "mariadb"): 0.1}
    tables = _tables(ONE_VCPU)
    c1_widest = {b: round(t.query("claim == 'C1'")["half_width"].max(), 3) for b, t in tables.items()}
    assert c1_widest == {"CV": 0.009, "CW": 0.01, "CX": 0.017, "CY": 0.013, "CZ": 0.016, "DA": 0.014, "DB": 0.014,
                         "DC": 0.01, "DD": 0.024, "DE": 0.017, "DF": 0.014,
                         "DG": 0.015, "DH": 0.014, "DI": 0.013, "DJ": 0.014, "DK": 0.015,
                         "DL": 0.023, "DM": 0.01, "DN": 0.02, "DO": 0.011, "DP": 0.017, "DQ": 0.02}
    pairs = bench_module("precision").builds_agreement(tables)
    assert (pairs["same_verdict"].sum(), pairs["same_label"].sum(), len(pairs)) == (4020, 3935, 231)
    verdicts = pd.DataFrame({name: t.set_index(["claim", "comparison", "target"])["verdict"]
                             for name, t in tables.items()})
    assert sorted(verdicts[verdicts.nunique(axis=1) > 1].index) == [
        ("C1", "mismatch_vs_latin1", "mysql"),
        ("C2", "utf8mb4_general_vs_utf8mb3", "mariadb"), ("C2", "utf8mb4_general_vs_utf8mb3", "mysql")]
    assert verdicts.loc[("C1", "mismatch_vs_latin1", "mysql")].drop("DD").eq("contradicted").all()
    main = [t.query("comparison == 'mismatch_vs_latin1' and target == 'mariadb'")["estimate"].item()
            for t in tables.values()]
    assert sorted(round(x, 3) for x in main) == [0.855, 0.861, 0.869, 0.87, 0.873, 0.874, 0.874, 0.874, 0.875, 0.876,
                                                 0.879, 0.88, 0.88, 0.881, 0.881, 0.882, 0.882, 0.882, 0.883, 0.883,
                                                 0.884, 0.887]


def test_a_time_budget_would_cut_slow_hours_runs_and_turn_their_edge_verdicts_inconclusive(capsys):
    # data/README.md, "A time budget for the sequential rule? (2026-11-30)": CV-DO's sequential runs
    # cut at the look where a budget of measured seconds runs out. MySQL's C2 at 100 s (its ten
    # starts take 88-114): four runs cut, each back to its ten starts, and two of the four read
    # utf8mb4_general / utf8mb3 "inconclusive" where their whole run read "supported".
    # MariaDB's C3 at 80 s (its seven starts take 60-77): eleven runs cut, no verdict changed.
    first_look = bench_module("first_look")
    runs = bench_module("precision").build_runs(ONE_VCPU[:ONE_VCPU.index("DO") + 1], None)
    budgets = {("collation_cost", "mysql"): 100, ("insert_57_vs_80", "mariadb"): 80}
    rows = []
    for name, paths in runs.items():
        for path in paths:
            manifest = _shipped(path.name)
            budget = budgets.get((manifest["experiment"], manifest["default_target"]))
            if budget:
                rows.append(first_look.first_look(path, budget).assign(build=name, claim=manifest["claim"]))
    tested = pd.concat(rows).query("verdict_end != 'not_tested'")
    cut = tested[tested["starts_cut"] < tested["starts_end"]]
    assert cut.groupby("claim")["build"].unique().map(sorted).to_dict() == {
        "C2": ["CX", "CY", "DI", "DK"], "C3": ["CV", "CW", "CX", "CY", "DE", "DF", "DH", "DI", "DJ", "DK", "DM"]}
    assert set(cut.query("claim == 'C2'")["starts_cut"]) == {10}
    changed = cut[cut["verdict_cut"] != cut["verdict_end"]]
    assert changed[["build", "comparison", "verdict_cut", "verdict_end"]].values.tolist() == [
        ["CY", "utf8mb4_general_vs_utf8mb3", "inconclusive", "supported"],
        ["DI", "utf8mb4_general_vs_utf8mb3", "inconclusive", "supported"]]
    # where the hour was slower than in CV-DO, MariaDB's C3 first look left its no-effect
    # comparison open and the looks after it closed it: these four read "inconclusive" at seven starts
    slow = bench_module("precision").build_runs(["BK", "BM", "CH", "CQ"], None)
    c3 = pd.concat([first_look.first_look(path).assign(build=name) for name, paths in slow.items() for path in paths
                    if ((manifest := _shipped(path.name))["experiment"], manifest["default_target"])
                    == ("insert_57_vs_80", "mariadb")])
    values = c3.query("comparison == 'defaults_vs_v57_values_insert'").set_index("build")
    assert values[["starts_cut", "verdict_cut", "verdict_end"]].values.tolist() == [
        [7, "inconclusive", "contradicted"]] * 4
    assert values["starts_end"].to_dict() == {"BK": 18, "BM": 20, "CH": 16, "CQ": 16}
    assert first_look.main(["--builds", "DK", "--budget", "100", "--target", "mysql"]) == 0
    assert re.search(r"DK\s+mysql\s+uca_ai_vs_utf8mb3\s+10\s+10\s+supported", capsys.readouterr().out)
    assert first_look.main(["--builds", "DK", "--target", "external"]) == 2
    assert "no sequential collation_cost run on external in builds DK" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        first_look.main(["--builds", "DK", "--budget", "0"])


# 2026-11-30 04:07 and 04:35, an AMD EPYC of family 25, model 1 (the fifth processor of this VM kind
# here), nothing beside the builds: DR a clean clone of 44d0371 (DQ's measured design), DS of 0030135
# (the same measured design; `runs_to_settle`). data/README.md, "A fifth host".
FIFTH_HOST = ["DR", "DS"]
COMMITS |= {"DR": "44d03718b1123366376ab9ecb1e4e6f57dc6350e", "DS": "00301359f407eb66aaaa7bda62d94010638447dc"}


def test_the_fifth_hosts_builds_agree_and_read_mariadbs_c2_at_levels_of_their_own():
    # every verdict alike in DR and DS, C2's main estimates within 1.7%, every goal on precision met
    # (C2 main ±1.1-2.9%, C1 ±2.2% at the widest), in slow hours (C2's fast-state share 18-34%; DR's
    # MySQL run named slow); against model 167 (DP, DQ) MariaDB's C2 splits its unicode cost the
    # other way: utf8mb4_general / utf8mb3 1.09-1.10 ("contradicted: higher than 1.05", 1.04 there)
    # and unicode / general 1.04-1.05 ("inconclusive", 1.10-1.11 there, "supported: higher")
    for _, _, manifest in _made_by(FIFTH_HOST):
        cpu = manifest["provenance"]["host"]["cpu"]
        assert (cpu["vendor"], cpu["family"], cpu["model"]) == ("AuthenticAMD", "25", "1")
    tables = _tables(FIFTH_HOST)
    pairs = bench_module("precision").builds_agreement(tables)
    assert (pairs["same_verdict"].sum(), pairs["same_label"].sum(), len(pairs)) == (18, 18, 1)
    main = {b: t.query("comparison == 'uca_ai_vs_utf8mb3'").set_index("target") for b, t in tables.items()}
    assert {b: m["estimate"].round(3).to_dict() for b, m in main.items()} == {
        "DR": {"mariadb": 1.105, "mysql": 1.672}, "DS": {"mariadb": 1.123, "mysql": 1.65}}
    assert {b: m["half_width"].round(3).to_dict() for b, m in main.items()} == {
        "DR": {"mariadb": 0.015, "mysql": 0.029}, "DS": {"mariadb": 0.011, "mysql": 0.021}}
    assert {b: round(t.query("claim == 'C1'")["half_width"].max(), 3) for b, t in tables.items()} == {
        "DR": 0.022, "DS": 0.015}
    assert {b: t.query("claim == 'C2'").groupby("target")["fast_share"].min().round(2).to_dict()
            for b, t in tables.items()} == {"DR": {"mariadb": 0.26, "mysql": 0.18},
                                            "DS": {"mariadb": 0.34, "mysql": 0.33}}
    verdicts = pd.DataFrame({name: t.set_index(["claim", "comparison", "target"])["verdict"]
                             for name, t in (_tables(["DP", "DQ"]) | tables).items()})
    differ = verdicts[verdicts.nunique(axis=1) > 1]
    assert differ.to_dict("index") == {
        ("C2", "utf8mb4_general_vs_utf8mb3", "mariadb"):
            {"DP": "supported", "DQ": "supported", "DR": "contradicted", "DS": "contradicted"},
        ("C2", "unicode_vs_general", "mariadb"):
            {"DP": "supported", "DQ": "supported", "DR": "inconclusive", "DS": "inconclusive"}}


def test_in_a_slow_hour_mysqls_added_rounds_buy_its_c2_width_and_verdicts():
    # data/README.md, "What the added rounds buy": each start's first ten rounds, the rule replayed
    # on them. DR (18% of the scans fast): its fourteen starts either way, the main comparison
    # ±4.3% against ±2.9% with the rounds added, in 224 measured seconds against 457. BK (model 207,
    # a slow hour): utf8mb4_general / utf8mb3 "inconclusive" where its run read "supported".
    first_look = bench_module("first_look")
    runs = bench_module("precision").build_runs(["BK", "DR"], None)
    rows = [first_look.first_look(path, rounds=10).assign(build=name) for name, paths in runs.items()
            for path in paths if (m := _shipped(path.name))["experiment"] == "collation_cost"
            and m["default_target"] == "mysql"]
    table = pd.concat(rows).set_index(["build", "comparison"])
    dr = table.loc["DR"]
    assert set(dr["starts_cut"]) == set(dr["starts_end"]) == {14}
    assert (dr["verdict_cut"] == dr["verdict_end"]).all()
    assert dr.loc["uca_ai_vs_utf8mb3", ["half_width_cut", "half_width_end"]].round(3).tolist() == [0.043, 0.029]
    assert dr["measured_s_cut"].round().iloc[0] == 224 and dr["measured_s_end"].round().iloc[0] == 457
    changed = table[table["verdict_cut"] != table["verdict_end"]]
    assert changed[["verdict_cut", "verdict_end"]].to_dict("index") == {
        ("BK", "utf8mb4_general_vs_utf8mb3"): {"verdict_cut": "inconclusive", "verdict_end": "supported"}}
    with pytest.raises(SystemExit):
        first_look.main(["--builds", "DR", "--rounds", "10", "--budget", "100"])
    with pytest.raises(SystemExit):
        first_look.main(["--builds", "DR", "--rounds", "0"])


# 2026-12-01 22:32, the AMD EPYC of family 25, model 17 again (CF-CO, 2026-11-28), a clean clone of
# ed4dbb1 (the analysis' group sums in numpy; the measured design of DQ), nothing beside it. 29-34% of
# C2's scans fast: `make report` took 14 m 33 s of runs. data/README.md, "Family 25 model 17 again".
COMMITS |= {"DT": "ed4dbb1dc987c360abcd93a0441934444855ff34"}
MODEL_17 = ["CF", "CG", "CH", "CI", "CJ", "CK", "CL", "CM", "CN", "CO"]


def test_three_days_later_on_model_17_every_width_holds_and_only_the_edge_comparison_differs():
    # against each of CF-CO, 17 or 18 of 18 verdicts alike: the one that differs is MariaDB's
    # utf8mb4_general / utf8mb3 on its 1.05 edge (DT 1.060 [1.044, 1.076] inconclusive, as CH and CI
    # read it; the other eight "contradicted: higher than 1.05"); C2's main comparison within 2.4%
    # of every one of them, but MariaDB's unicode / general read 1.112, 3.1-4.3% from five of them
    for _, _, manifest in _made_by(["DT"]):
        cpu = manifest["provenance"]["host"]["cpu"]
        assert (cpu["vendor"], cpu["family"], cpu["model"]) == ("AuthenticAMD", "25", "17")
    tables = _tables([*MODEL_17, "DT"])
    dt = tables["DT"]
    main = dt.query("comparison == 'uca_ai_vs_utf8mb3'").set_index("target")
    assert main["estimate"].round(3).to_dict() == {"mariadb": 1.117, "mysql": 1.846}
    assert main["half_width"].round(3).to_dict() == {"mariadb": 0.017, "mysql": 0.027}
    assert round(dt.query("claim == 'C1'")["half_width"].max(), 3) == 0.027
    assert dt.query("claim == 'C2'").groupby("target")["fast_share"].min().round(2).to_dict() == {
        "mariadb": 0.29, "mysql": 0.33}
    pairs = bench_module("precision").builds_agreement(tables)
    with_dt = pairs[pairs["builds"].str.endswith("vs DT")].set_index("builds")
    assert with_dt["same_verdict"].to_dict() == {f"{b} vs DT": 18 if b in ("CH", "CI") else 17 for b in MODEL_17}
    assert set(with_dt["c2_over_3pct"]) == {"-", "unicode_vs_general mariadb 4.3%", "unicode_vs_general mariadb 3.7%",
                                           "unicode_vs_general mariadb 3.6%", "unicode_vs_general mariadb 3.1%"}
    verdicts = pd.DataFrame({name: t.set_index(["claim", "comparison", "target"])["verdict"]
                             for name, t in tables.items()})
    differ = verdicts[verdicts.nunique(axis=1) > 1]
    assert list(differ.index) == [("C2", "utf8mb4_general_vs_utf8mb3", "mariadb")]
    assert differ.iloc[0].to_dict() == {b: "inconclusive" if b in ("CH", "CI", "DT") else "contradicted"
                                        for b in [*MODEL_17, "DT"]}
