"""Command-line behaviour that needs no server: unknown experiment and target names,
--exclude-contention's account of what it left out, the end-of-report verdict table, runs/ beside
data/raw; stored runs are the frozen ones (conftest.FROZEN) and copies of them."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from claimlab import campaign, cards, cli, records, report, runner, store, writer
from claimlab import params as params_mod
from claimlab.errors import ClaimlabError
from conftest import ROOT, copy_run, frozen, frozen_id

SHIPPED_C1 = frozen_id("c1")


def test_exclude_contention_says_what_it_left_out_and_why_not_tested(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    run = copy_run(frozen("c1"), tmp_path)
    results = pd.read_csv(run / "results.csv", dtype=str)
    results["contention"] = "True"                       # every measurement taken on a busy machine
    results.to_csv(run / "results.csv", index=False)
    code = cli.main(["analyze", SHIPPED_C1, "--data", str(tmp_path), "--exclude-contention", "--accept-modified"])
    out = capsys.readouterr().out
    assert code == 0, out
    measurements = results.groupby(["condition", "workload", "repetition", "iteration"]).ngroups
    assert f"left out {measurements} of {measurements} measurements ({len(results)} of {len(results)} rows)" in out
    # the comparison in words, and the exclusion that emptied a side (not the outliers' note, kept)
    assert re.search(r"^  latin1 client, utf8mb4 server vs latin1 throughout \(sysbench oltp_read_write\) on "
                     r"target mariadb: not tested because every row of one side excluded \(\d+ under contention\)$",
                     out, re.M), out
    assert "_vs_" not in out and "outliers" not in out


def test_the_report_ends_with_the_verdict_table(tmp_path):
    rows = [dict(claim="C4", comparison="binlog_on_vs_off", server_version="10.11.19-MariaDB-0+deb12u1",
                 target="mariadb", estimate=2.3612, ci_low=2.07, ci_high=2.65, published_ratio=2.85,
                 verdict="supported", verdict_label="supported, effect smaller than published"),
            dict(claim="C1", comparison="mismatch_vs_latin1", server_version=None, target="mysql", estimate=None,
                 ci_low=None, ci_high=None, published_ratio=None, verdict="not_tested", verdict_label="not tested")]
    (tmp_path / "binlog_default.summary.json").write_text(json.dumps({"rows": rows[:1]}))
    (tmp_path / "charset_mismatch.summary.json").write_text(json.dumps({"rows": rows[1:]}))
    assert report.verdict_rows(tmp_path) == [rows[1], rows[0]]          # the index's order: C1 first
    assert report.verdict_rows(tmp_path, since=2e10) == []              # only what this build wrote
    header, c4, c1 = cards.verdict_lines(rows)
    assert header.split()[:2] == ["CLAIM", "COMPARISON"]
    assert "binlog_on vs off" in c4 and "MariaDB 10.11.19" in c4 and "2.36 [2.07, 2.65]" in c4 and "2.85" in c4
    assert c4.endswith("supported, effect smaller than published")
    assert "not measured" in c1 and c1.endswith("not tested")
    assert c4.index("2.36") == header.index("MEASURED") == c1.index("not measured")
    _, c2 = cards.verdict_lines([{**rows[0], "published_ratio": 1.025}])
    assert " 1.025 " in c2                                              # as published, not 1.02
    header, c4 = cards.verdict_lines([{**rows[0], "rerun_chance": 0.546}])
    assert c4[header.index("SAME ON RERUN"):].startswith("about 55%")


def _manifest(experiment: str):
    return records.RunManifest.new(experiment=experiment, claim="C4", profile="smoke", factors=[])


def test_new_runs_go_to_the_ignored_runs_directory_and_readers_look_in_both(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_ROOT", str(tmp_path))
    assert store.runs_root() == tmp_path / "runs" and store.raw_root() == tmp_path / "data" / "raw"
    shipped = writer.RunStore.create(store.raw_root(), _manifest("exp"))
    new = writer.RunStore.create(store.runs_root(), _manifest("exp"))
    assert store.find_run(shipped.run_id) == shipped.path and store.find_run(new.run_id) == new.path
    assert {r["run_id"] for r in store.list_runs()} == {shipped.run_id, new.run_id}
    ignored = (ROOT / ".gitignore").read_text().split()
    assert "runs/" in ignored and "data/" not in ignored


def test_a_target_no_params_file_declares_is_an_error_before_anything_runs(tmp_path, monkeypatch, capsys):
    # Before, `report --targets foo` ran every claim on the files' default target (MariaDB) while
    # saying "running the quick profile on foo".
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("CLAIMLAB_ROOT", str(ROOT))
    code = cli.main(["report", "--targets", "foo", "--only", "collation_cost", "--out", str(tmp_path / "r"),
                     "--data", str(tmp_path / "raw")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == ["claimlab: error: --targets: no params file (collation_cost) declares 'foo'; "
                                 "they declare: mariadb, mysql, mysql57, mysql80"]
    assert not (tmp_path / "raw").exists() and not (tmp_path / "r").exists()
    code = cli.main(["prepare", "collation_cost", "--target", "mysql", "mine"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == ["claimlab: error: --target: no params file (collation_cost) declares 'mine'; "
                                 "they declare: mariadb, mysql, mysql57, mysql80"]


def test_a_params_file_of_your_own_runs_its_default_when_it_declares_none_of_the_targets():
    exp = params_mod.load(params_mod.find("collation_cost", ROOT / "params"), "quick")
    assert campaign.chosen_targets(exp, ["mysql", "elsewhere"]) == ["mysql"]
    assert campaign.chosen_targets(exp, ["elsewhere"]) == [exp.default_target] == ["mariadb"]


def test_a_directory_a_command_writes_to_is_checked_before_anything_starts(tmp_path, capsys):
    # Before: a traceback, from `report --figures` only once the runs were measured.
    (tmp_path / "a_file").write_text("")
    cases = {("run", "collation_cost", "--data", "a_file"): "--data {0}/a_file: {0}/a_file is not a directory",
             ("run", "collation_cost", "--work", "/proc/claimlab/w"): "--work /proc/claimlab/w: cannot write in "
                                                                        "/proc (No such file or directory)",
             ("report", "--out", "a_file/r"): "--out {0}/a_file/r: {0}/a_file is not a directory",
             ("report", "--figures", "/proc/claimlab"): "--figures /proc/claimlab: cannot write in /proc "
                                                        "(No such file or directory)",
             ("analyze", "X", "--table", "a_file/t.csv"): "--table {0}/a_file: {0}/a_file is not a directory",
             ("analyze", "X", "--table", "/tmp"): "--table /tmp: is a directory; name the CSV file to write",
             # scratch is removed when a run ends: inside the store it was the run's own directory
             ("prepare", "collation_cost", "--work", str(ROOT / "runs")):
                 f"--work {ROOT / 'runs'}: overlaps the run store {ROOT / 'runs'}; give a scratch directory "
                 "apart from stored runs (default: work/ of the checkout)"}
    for argv, message in cases.items():
        argv = [str(tmp_path / a) if a.startswith("a_file") else a for a in argv]
        assert cli.main(argv) == 1, argv
        assert capsys.readouterr().err.strip().splitlines() == [f"claimlab: error: {message.format(tmp_path)}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]   # nothing made, nothing left
    # a table in a folder yet to be made is written there
    assert cli.main(["analyze", SHIPPED_C1, "--table", str(tmp_path / "new" / "t.csv")]) == 0
    assert (tmp_path / "new" / "t.csv").stat().st_size > 0
    # --data that is only read (a reviewer's copy of the runs) is not asked to be writable
    assert cli.main(["analyze", SHIPPED_C1, "--data", "/proc/claimlab"]) == 1
    assert "no run" in capsys.readouterr().err
    assert cli.main(["report", "--from-data", SHIPPED_C1, "--data", "/proc/claimlab", "--out",
                     str(tmp_path / "r")]) == 1
    assert capsys.readouterr().err.startswith(f"claimlab: error: no run '{SHIPPED_C1}' under /proc/claimlab")


def test_a_scratch_directory_inside_the_run_store_is_refused_before_anything_runs(tmp_path, capsys):
    # Before: the run measured to its end, then its scratch (--work/<run id>) was removed, and with
    # it the run's own directory, runs/<experiment>/<run id>: every measurement lost.
    for work in ("raw/collation_cost", "raw", "."):
        code = cli.main(["run", "collation_cost", "--profile", "smoke", "--data", str(tmp_path / "raw"),
                         "--work", str(tmp_path / work)])
        assert code == 1 and capsys.readouterr().err.strip().splitlines() == [
            f"claimlab: error: --work {tmp_path / work}: overlaps the run store {tmp_path / 'raw'}; give a "
            "scratch directory apart from stored runs (default: work/ of the checkout)"]
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ClaimlabError, match="overlaps the run store"):   # the runner's own check
        runner.run(params_mod.load(params_mod.find("collation_cost", ROOT / "params"), "smoke"),
                   data_root=tmp_path / "raw", work_root=tmp_path / "raw" / "collation_cost", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_shipped_run_is_never_resumed_nor_locked(frozen_checkout, monkeypatch, capsys):
    # Before: refused (complete, or another profile), but only after leaving a .writer.lock in data/raw.
    monkeypatch.setenv("CLAIMLAB_ROOT", str(frozen_checkout))
    shipped = frozen_checkout / "data" / "raw" / frozen("c1").relative_to(frozen("c1").parents[1])
    before = sorted(p.name for p in shipped.iterdir())
    assert cli.main(["run", "charset_mismatch", "--profile", "smoke", "--resume", str(shipped)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"claimlab: error: --resume {shipped}: {shipped} is a shipped run (data/raw): shipped runs are never "
        "written; start a new run instead"]
    assert sorted(p.name for p in shipped.iterdir()) == before


def test_a_params_file_of_ones_own_is_refused_on_a_cluster(tmp_path, capsys):
    # Before: the job named its experiment and the workers ran the checkout's params/ file of that
    # name (256M where the user's copy said 64M), or failed naming a file the user never gave.
    mine = tmp_path / "binlog_default.yaml"
    mine.write_text((ROOT / "params" / "binlog_default.yaml").read_text().replace("256M", "64M"))
    assert cli.main(["run", str(mine), "--scheduler", "tcp://127.0.0.1:1"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"claimlab: error: {mine}: a cluster job sends an experiment of params/ by name; copy this file to "
        "params/ under a name of its own and run that name"]


def test_analyze_says_how_to_settle_a_verdict_near_an_edge(capsys, tmp_path):
    # every comparison the analysis marks near an edge gets one line naming the command to rerun it:
    # a copy of the frozen C1 run, the mismatched charset's values 4% higher, which moves mismatch
    # vs utf8mb4 (no difference within ±5%) and mismatch vs latin1 (published 0.75) to their edges
    run = copy_run(frozen("c1"), tmp_path / "raw")
    results = pd.read_csv(run / "results.csv", dtype=str)
    moved = results["condition"] == "charset=mismatch"
    results.loc[moved, "value"] = (results.loc[moved, "value"].astype(float) * 1.04).map(repr)
    results.to_csv(run / "results.csv", index=False)
    assert cli.main(["analyze", run.name, "--data", str(tmp_path / "raw"), "--accept-modified",
                     "--table", str(tmp_path / "table.csv")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "near an edge:" in line]
    table = pd.read_csv(tmp_path / "table.csv", keep_default_na=False)
    marked = table[table["edge_label"] != ""]
    assert len(lines) == len(marked) > 0
    for line, row in zip(lines, marked.itertuples()):
        assert line.startswith(f"  near an edge: {row.claim} "), line
        assert f"claimlab run {row.experiment} --target {row.target}" in line


def test_a_run_named_twice_is_analysed_once(capsys):
    # Before: its rows twice over, and a between-runs line of one run ("between-run sd nan").
    path = store.find_run(SHIPPED_C1)
    (once,) = report.analyze_runs([SHIPPED_C1])
    (twice,) = report.analyze_runs([SHIPPED_C1, str(path), SHIPPED_C1])
    assert twice.run_id == SHIPPED_C1 and len(twice.results) == len(once.results)
    assert cli.main(["analyze", SHIPPED_C1, str(path)]) == 0
    assert "between-run" not in capsys.readouterr().out


def test_the_claim_notebook_refuses_runs_of_another_claim():
    # Before: the notebook failed on `analysis, = ...` with "too many values to unpack".
    c4 = frozen_id("format_1")
    with pytest.raises(ClaimlabError, match=rf"run_ids: {c4} is a run of binlog_default \(C4\), not of "
                                            r"charset_mismatch \(C1\)"):
        report.resolve_runs("charset_mismatch", [c4], data_root=None)
    assert [p.name for p in report.resolve_runs("charset_mismatch", [SHIPPED_C1], data_root=None)] == [SHIPPED_C1]


def test_a_reader_that_stops_reading_gets_no_traceback():
    """`claimlab analyze RUN RUN ... | head -c 10`: the pipe closes while claimlab still prints."""
    runs = [SHIPPED_C1, frozen_id("format_1")]
    proc = subprocess.run(f"{sys.executable} -m claimlab.cli analyze {' '.join(runs)} | head -c 10",
                          shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          executable="/bin/bash", env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert len(proc.stdout) == 10
    assert proc.stderr == ""


def test_two_targets_on_one_server_are_told_apart_by_name():
    # runs of two params files, one naming its MariaDB target `default`, the other `mariadb`
    row = dict(claim="C1", comparison="mismatch_vs_latin1", server_version="10.11.19-MariaDB-0+deb12u1",
               estimate=0.874, ci_low=0.838, ci_high=0.912, published_ratio=0.7509, verdict="supported",
               verdict_label="supported", rerun_chance=0.99, edge_label="")
    header, default, mariadb = cards.verdict_lines([{**row, "target": "default"}, {**row, "target": "mariadb"}],
                                                   claim=False)
    at = header.index("SERVER")
    assert default[at:].startswith("MariaDB 10.11.19 (target default) ")
    assert mariadb[at:].startswith("MariaDB 10.11.19 (target mariadb) ")
    (line,) = cards.verdict_lines([{**row, "target": "mariadb"}], claim=False)[1:]
    assert line[at:].startswith("MariaDB 10.11.19 ") and "(target" not in line
    # two claims, one target each: nothing to tell apart (C3's 8.0.40 against the fork beside C4's 8.0.40)
    _, c1, c4 = cards.verdict_lines([{**row, "target": "default"}, {**row, "claim": "C4", "target": "mariadb"}])
    assert "(target" not in c1 + c4


def test_terminal_tables_name_levels_and_give_each_line_its_level_when_they_differ():
    # Before: "v80 vs v57_insert" and "defaults80 vs defaults57_insert", and a heading of "95% and
    # 97.5% and 98.8%" over lines that did not say which was which (98.8% for 98.75%).
    row = dict(claim="C3", comparison="v80_vs_v57_insert", target="mysql57+mysql80", workload="insert_loop",
               server_version="5.7.23, 8.0.40", baseline="server=mysql57", treatment="server=mysql80", estimate=3.12,
               ci_low=2.83, ci_high=3.44, confidence=0.9875, published_ratio=3.3, verdict="supported",
               verdict_label="supported, as published", rerun_chance=0.83, edge_label="")
    bulk = {**row, "comparison": "v80_vs_v57_bulk_insert", "workload": "bulk_insert", "confidence": 0.975}
    header, loop, bulk = cards.verdict_lines([row, bulk], claim=False)
    assert "_vs_" not in loop + bulk and "mysql57" not in loop + bulk
    assert loop.startswith("MySQL 8.0.40 vs MySQL 5.7.23 (insert loop) ")
    assert bulk.startswith("MySQL 8.0.40 vs MySQL 5.7.23 (bulk insert) ")
    at = header.index("LEVEL")
    assert loop[at:].startswith("98.75% ") and bulk[at:].startswith("97.5% ")
    header, _ = cards.verdict_lines([row], claim=False)
    assert "LEVEL" not in header                                        # one level: the heading says it


def test_analyze_names_the_server_on_every_line_and_prints_no_nan(capsys, tmp_path):
    # Before: one line per claim with every comparison run together, servers unnamed, "between-run
    # sd nan" for a server with one run, and 0.8742 beside 0.874. C1 on MariaDB in two sessions
    # (copies of the frozen run, the second's values jittered).
    first = copy_run(frozen("c1"), tmp_path).name
    second = copy_run(frozen("c1"), tmp_path, run_id=f"{first}-again", jitter=1).name
    assert cli.main(["analyze", first, second, "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower()
    header, *lines = [line for line in out.splitlines() if line.startswith("  ") and " vs " in line[:60]
                      and not line.startswith("  between") or line.startswith("  COMPARISON")]
    # the prepared-statement comparison has no rows in these runs (its workload came later)
    lines = [line for line in lines if "prepared statements" not in line]
    assert header.split()[:2] == ["COMPARISON", "SERVER"] and len(lines) == 3
    assert all(line[header.index("SERVER"):].startswith("MariaDB 10.11.19 ") for line in lines)
    (between,) = [line for line in out.splitlines() if "between runs: latin1 client, utf8mb4 server vs latin1 "
                  "throughout (sysbench oltp_read_write) on MariaDB" in line]
    assert "baseline (latin1 throughout" in between
    assert first in between and second in between
    for number in re.findall(r"(?<![\w.])\d[\d,]*\.?\d*(?![\w.])", between.split("runs ", 1)[1]):
        digits = number.replace(",", "").replace(".", "").lstrip("0")
        assert len(digits) <= 3 or "." not in number, number      # three significant digits


def test_analyze_gives_scripts_csv_and_json_without_nan(capsys):
    runs = [SHIPPED_C1]
    assert cli.main(["analyze", *runs, "--format", "json"]) == 0
    captured = capsys.readouterr()
    records = json.loads(captured.out, parse_constant=lambda c: pytest.fail(f"JSON holds {c}"))
    assert {(r["comparison"], r["server"]) for r in records} == {
        (c, s) for c in ("mismatch_vs_latin1", "mismatch_vs_utf8mb4", "utf8mb4_vs_latin1")
        for s in ("MariaDB 10.11.19",)} | {("utf8mb4_vs_latin1_ps", "—")}   # not in this run
    assert any(r["published_ratio"] is None for r in records)   # a missing number is null
    # counts are whole numbers (before: "n_blocks": 6.0), a missing one null
    assert {r["n_runs"] for r in records} == {1, None} and 6 in {r["n_blocks"] for r in records}
    assert all(isinstance(r[c], (int, type(None))) for r in records for c in ("n_runs", "n_blocks", "runs_to_settle"))
    assert "C1 Charset" in captured.err                          # the heading goes to stderr
    assert cli.main(["analyze", *runs, "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out), dtype=str)
    assert len(table) == len(records) and "nan" not in table.to_csv(index=False).lower().replace(",,", ",")
    assert set(table["n_blocks"].dropna()) == {"6"}
    assert list(table.columns)[:4] == ["claim", "comparison", "target", "server"]


def test_runs_says_what_it_left_out_and_refuses_a_missing_folder(tmp_path, capsys):
    # Before: a run with an unreadable manifest was left out without a word, and `--data` naming no
    # folder printed "no stored runs" with exit 0.
    good = copy_run(frozen("c1"), tmp_path)
    bad = tmp_path / "charset_mismatch" / "20261201T000000Z-000000"
    bad.mkdir()
    (bad / "manifest.json").write_text("{")
    assert cli.main(["runs", "--data", str(tmp_path), "--format", "csv"]) == 0
    out = capsys.readouterr()
    assert list(pd.read_csv(io.StringIO(out.out))["run_id"]) == [good.name]
    assert out.err.startswith(f"claimlab: left out: {bad}") and len(out.err.splitlines()) == 1
    assert cli.main(["runs", "--data", str(tmp_path / "nope")]) == 1
    assert capsys.readouterr().err.strip() == f"claimlab: error: --data {tmp_path / 'nope'}: no such directory"


def test_runs_refuses_an_experiment_nothing_knows_and_suggests_running_one_it_knows(tmp_path, capsys):
    # Before: a misspelt --experiment listed nothing, said "no stored runs match" and exited 0.
    copy_run(frozen("c1"), tmp_path)
    assert cli.main(["runs", "--data", str(tmp_path), "--experiment", "charset_mismatc"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("claimlab: error: --experiment charset_mismatc: no params file and no stored run")
    assert "charset_mismatch, collation_cost" in err and len(err.splitlines()) == 1
    assert cli.main(["runs", "--data", str(tmp_path), "--experiment", "collation_cost"]) == 0   # a params file
    assert capsys.readouterr().out.strip().endswith("`claimlab run collation_cost --profile smoke`")


def test_a_data_folder_one_level_too_deep_names_the_one_above(tmp_path, capsys):
    # Before: `runs` said "no stored runs" and `analyze` "no run ... under it".
    run = copy_run(frozen("c1"), tmp_path)
    hint = f"{run.parent} holds runs itself: name the folder above it, --data {tmp_path}"
    assert cli.main(["runs", "--data", str(run.parent), "--format", "json"]) == 1
    assert capsys.readouterr().err.strip() == f"claimlab: error: --data {run.parent}: {hint}"
    assert cli.main(["analyze", run.name, "--data", str(run.parent)]) == 1
    assert capsys.readouterr().err.strip().endswith(hint)


def test_a_checkout_is_found_from_outside_it(tmp_path, monkeypatch):
    # Before: outside the checkout, `runs` said "no stored runs" and `run` wrote to ./runs
    monkeypatch.delenv("CLAIMLAB_ROOT", raising=False)
    assert store.project_root(tmp_path) == ROOT
    assert store.project_root(ROOT / "notebooks") == ROOT


def test_runs_shows_the_server_marks_published_runs_and_filters(capsys, monkeypatch, frozen_checkout):
    monkeypatch.setenv("CLAIMLAB_ROOT", str(frozen_checkout))
    monkeypatch.chdir(frozen_checkout)
    published = set(report.shipped_run_ids())
    c1, earlier = report.published_runs()["charset_mismatch"], report.published_runs(file=report.EARLIER_RUNS)
    assert cli.main(["runs", "--published", "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert {r["run_id"] for r in runs} == published and all(r["published"] for r in runs)
    assert cli.main(["runs", "--experiment", "charset_mismatch", "--server", "mariadb", "--published"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:7] == ["RUN", "EXPERIMENT", "CLAIM", "SERVER", "PROFILE", "STATUS", "PUBLISHED"]
    assert [row.split()[0] for row in rows] == c1
    assert "mariadb: MariaDB 10.11.19" in rows[0] and rows[0][header.index("PUBLISHED")] == "*"
    assert [row.split()[-1] for row in rows] == [f"data/raw/charset_mismatch/{r}" for r in c1]   # as typed here
    assert cli.main(["runs", "--experiment", "charset_mismatch", "--server", "mariadb", "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert set(table["run_id"]) == {*c1, *earlier["charset_mismatch"]}
    assert all(os.path.isabs(p) for p in table["path"])      # scripts get the full path
    assert (table["published"] == table["run_id"].isin(published)).all() and not table["published"].all()
    assert table["server"].str.contains("MariaDB").all() and set(table["experiment"]) == {"charset_mismatch"}
    assert cli.main(["runs", "--server", "mysql", "--format", "csv"]) == 0   # the investigation's run only
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table["run_id"]) == [frozen_id("why_slower")] and not table["published"].any()
    assert table["server"].str.contains("MySQL 9.7.4").all()


def test_a_run_of_a_fixed_design_loads_no_statistics_before_its_servers(tmp_path):
    # Before: `claimlab run` imported campaign (the report, pandas, scipy) for every run, so
    # refusing a hostile params file cost 1.7 s of CPU where 0.6 s had done.
    params = tmp_path / "fixed.yaml"
    params.write_text((ROOT / "tests" / "fixtures" / "bad_params" / "07_zero_repetitions.yaml").read_text())
    code = ("import sys\nfrom claimlab import cli\n"
            f"code = cli.main(['run', {str(params)!r}, '--data', {str(tmp_path / 'raw')!r}, '--no-progress'])\n"
            "print(code, sorted(m for m in sys.modules if m in ('scipy', 'claimlab.stats', 'claimlab.report')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "1 []", out


def test_an_interrupted_ablation_says_it_is_measured_again_not_resumed(tmp_path, capsys, monkeypatch):
    # Before: "resume with `claimlab run ... --resume RUN_ID`", which cannot finish an ablation.
    from claimlab import ablation
    from claimlab.errors import Interrupted

    def cut(*args, **kwargs):
        exc = Interrupted("interrupted by SIGINT")
        exc.run_id = "20261207T000000Z-abcdef"    # as the runner names the run it cut
        raise exc
    monkeypatch.setattr(ablation, "run", cut)
    assert cli.main(["ablate", "binlog_hunt", "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "w")]) == 130
    assert capsys.readouterr().err.splitlines()[-2:] == [
        "claimlab: error: interrupted by SIGINT",
        "claimlab: run 20261207T000000Z-abcdef keeps what was measured, but an ablation is not resumed: "
        "claimlab ablate binlog_hunt measures it again"]


def test_targets_says_each_target_once_with_the_files_that_declare_it(capsys, monkeypatch, tmp_path, mariadbd):
    # Before: a target was listed again for every params file declaring it (mariadb four times),
    # and a name longer than ten characters pushed its line out of the columns.
    monkeypatch.delenv("CLAIMLAB_MYSQL_MIRROR", raising=False)
    monkeypatch.setenv("CLAIMLAB_CACHE", str(tmp_path))        # nothing fetched here: no MySQL
    assert cli.main(["targets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    by_name = {line.split()[1]: line for line in lines}
    assert len(by_name) == len(lines) and {"mariadb", "mysql", "mysql57", "mysql80fork", "sysbench"} <= set(by_name)
    assert by_name["mariadb"].startswith("available ")
    assert by_name["mariadb"].endswith("(binlog_default, charset_mismatch, collation_cost, insert_57_vs_80)")
    assert by_name["mysql57"].startswith("unavailable ") and "CLAIMLAB_MYSQL_MIRROR" in by_name["mysql57"]
    assert len({line.index("mysql-tarball") for line in lines if "mysql-tarball" in line}) == 1   # one column
    assert lines[-1].split()[:2] == ["available", "sysbench"]


def test_runs_tells_a_killed_run_from_a_running_one(tmp_path, capsys):
    # Before: a run whose claimlab was killed showed "running" for ever.
    run = copy_run(frozen("c1"), tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps(manifest | {"status": "running"}))   # as a kill leaves it

    def status() -> str:
        assert cli.main(["runs", "--data", str(tmp_path), "--format", "json"]) == 0
        (listed,) = json.loads(capsys.readouterr().out)
        return listed["status"]
    assert status() == "killed"
    lock = writer.lock_writer(run)          # what the process writing a run holds
    try:
        assert status() == "running"
    finally:
        lock.close()
    assert status() == "killed"


def test_listing_runs_loads_no_statistics_library(tmp_path):
    """scipy.stats takes over a second to import (it builds docstrings at import): `claimlab runs`
    computes no statistic, so it loads none; the stats modules reach scipy.stats on first use."""
    copy_run(frozen("c1"), tmp_path)
    probe = ("import sys; from claimlab import cli; code = cli.main(['runs', '--data', sys.argv[1]]); "
             "print('scipy.stats' in sys.modules, code)")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, check=True)
    assert SHIPPED_C1 in out.stdout and out.stdout.splitlines()[-1] == "False 0", out.stdout + out.stderr


def test_validate_takes_a_folder_and_a_folder_named_as_a_params_file_is_one_line(tmp_path, monkeypatch, capsys):
    # Before: `claimlab validate params` said "params/params.yaml: no such params file".
    monkeypatch.chdir(ROOT)
    assert cli.main(["validate", "params", "params/ablation"]) == 0
    checked = capsys.readouterr().out.splitlines()
    assert checked == [f"ok: {p.relative_to(ROOT)}" for p in (*sorted((ROOT / "params").glob("*.yaml")),
                                                              *sorted((ROOT / "params" / "ablation").glob("*.yaml")))]
    (tmp_path / "empty").mkdir()
    assert cli.main(["validate", str(tmp_path / "empty")]) == 1
    assert capsys.readouterr().err == f"claimlab: error: {tmp_path / 'empty'}: is a folder, not a params file; " \
                                      "name a params file (it holds none)\n"
    with pytest.raises(ClaimlabError, match=r"^params: is a folder, not a params file; name one of its files "
                                            r"\(binlog_default.yaml, charset_mismatch.yaml"):
        params_mod.find("params")


def test_diff_of_a_target_nothing_declares_lists_the_targets_there_are(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert cli.main(["diff", "nope", "nope", "--work", str(tmp_path / "work")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("claimlab: error: no params file in params/ declares a target named 'nope' "
                          "(they declare: mariadb, mysql, ") and err.count("\n") == 1, err
