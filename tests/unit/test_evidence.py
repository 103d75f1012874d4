"""Which stored runs `cpu_evidence` profiles: every run of a report that has none, each on its own
server (before, only the first run's, so a MariaDB-and-MySQL report profiled MariaDB alone); what
callgrind counts and how; counts added later to stored evidence."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace

import pytest

from claimlab import cli, evidence, evidence_tables, instructions, profiling, store
from claimlab.errors import DataError
from claimlab.workloads import Sysbench
from conftest import frozen, store_evidence


def test_every_run_without_stored_evidence_is_profiled_not_only_the_first(tmp_path):
    with_evidence = [frozen("c1")]
    assert all(evidence.exists(r) for r in with_evidence)   # the frozen C1 run was profiled
    without = []
    for copy in ("a", "b"):                                 # the same run, its evidence left out
        (tmp_path / copy).mkdir()
        shutil.copy(with_evidence[0] / "manifest.json", tmp_path / copy)
        without.append(tmp_path / copy)
    runs = [without[0], *with_evidence, without[1]]
    assert evidence.missing(runs) == without
    assert evidence.missing(with_evidence) == []


def test_runs_profiled_before_threads_were_counted_apart_show_all_thread_counts_only(tmp_path):
    """Evidence as callgrind counted it before the statement's own thread was counted apart:
    instructions.csv without the own_* columns, beside the frozen C1 run's profiles."""
    run = tmp_path / "run"
    shutil.copytree(frozen("c1") / evidence.DIRECTORY, run / evidence.DIRECTORY)
    counts = run / evidence.DIRECTORY / "instructions.csv"
    counts.write_text("condition,statement,rows,repeats,instructions,per_row,relative_spread\n"
                      "charset_latin1,SELECT 1,20000,3,66137509.7,3306.9,0.048\n"
                      "charset_mismatch,SELECT 1,20000,3,99891876.3,4994.6,0.028\n")
    index = run / evidence.DIRECTORY / evidence.INDEX
    meta = json.loads(index.read_text())
    meta["checksums"]["instructions.csv"] = store.sha256_file(counts)
    index.write_text(json.dumps(meta))
    table = evidence.load(run).summary(".")
    assert {"per_row", "relative_spread"} <= set(table.columns)
    assert not {"own_per_row", "own_spread"} & set(table.columns)
    shown = evidence_tables.evidence_table(evidence.load(run), "charset_mismatch")
    assert "instructions per row (all threads)" in shown


def test_a_statement_thread_counting_more_than_all_threads_is_refused():
    statement = instructions.Statement("SELECT 1", rows=10)
    counts = instructions.InstructionCounts("c", statement, counts=(1_000, 1_100), own=(900, 1_000))
    assert counts.own_per_row == 95 and counts.per_row == 105
    assert counts.own_spread == pytest.approx(100 / 950)
    with pytest.raises(profiling.ProfilingError, match="condition c"):
        instructions.InstructionCounts("c", statement, counts=(1_000, 1_100), own=(900, 1_200))
    with pytest.raises(profiling.ProfilingError, match="counted no instructions"):
        instructions.InstructionCounts("c", statement, counts=(1_000,), own=(0,))


def test_a_query_counted_fifty_times_a_window_is_counted_per_query():
    statement = instructions.Statement("SELECT 1", rows=1, times=50, per="query")
    counts = instructions.InstructionCounts("c", statement, counts=(60_000,), own=(50_000,))
    assert counts.own_per_row == 1_000 and counts.per_row == 1_200
    assert counts.summary()["per"] == "query"
    with pytest.raises(ValueError, match="per: must be row or query"):
        instructions.Statement("SELECT 1", rows=1, per="call")


def test_sysbench_is_counted_through_its_range_query_in_its_connection_charset_over_the_text_protocol():
    text = Sysbench(name="oltp", test="oltp_read_write", table_size=1000, ps_mode="disable", charset="latin1",
                    schema_charset="utf8mb4")
    statement = instructions.statement_for(text)
    assert statement.setup == "SET NAMES latin1" and statement.per == "query" and statement.times > 1
    assert re.fullmatch(r"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 AND pad <> '(\d{11}-){9}\d{11}' "
                        r"ORDER BY c", statement.sql)
    assert instructions.statement_for(replace(text, charset=None)).setup is None
    prepared = replace(text, ps_mode="auto")
    assert not instructions.countable(prepared)
    with pytest.raises(profiling.ProfilingError, match="sysbench with ps_mode disable"):
        instructions.statement_for(prepared)


def test_counts_added_to_stored_evidence_are_checked_like_the_rest_and_never_added_twice(tmp_path):
    functions = ("condition,function,object,self,inclusive,calls,operations,per_operation,per_call\n"
                 "charset_utf8mb4,my_ismbchar_utf8mb4,mysqld,3000,3000,1500,150,20.0,2.0\n")
    summary = ("condition,statement,rows,repeats,instructions,per_row,relative_spread,own_per_row,own_spread,per,"
               "times\ncharset_utf8mb4,SELECT 1,1,3,1000000,20000,0.01,19000,0.001,query,50\n")
    out = store_evidence(tmp_path, "charset_mismatch", {"charset_utf8mb4": "mysqld;MYSQLlex;my_ismbchar_utf8mb4"},
                         {"/opt/mysql/bin/mysqld": "ab12"},
                         added={"instructions.added.csv": summary, "functions.added.csv": functions})
    ev = evidence.load(tmp_path)
    assert ev.instructions.set_index("condition").loc["charset_utf8mb4", "own_per_row"] == 19_000
    assert ev.functions.set_index("function").loc["my_ismbchar_utf8mb4", "calls"] == 1500
    assert "instructions per query (statement" in evidence_tables.evidence_table(ev, "charset_mismatch")
    with pytest.raises(DataError, match="already added .*not overwritten"):
        evidence.add_instructions("charset_mismatch", tmp_path, target="mysql57")
    (out / "functions.added.csv").write_text(functions.replace("3000,3000", "2000,2000"))
    with pytest.raises(DataError, match="functions.added.csv changed after profiling"):
        evidence.load(tmp_path)


def test_counts_are_added_to_the_evidence_of_the_experiment_named_only(tmp_path):
    store_evidence(tmp_path, "charset_mismatch", {"charset_utf8mb4": "mysqld;MYSQLlex"}, {"/x/mysqld": "ab12"})
    with pytest.raises(DataError, match="evidence is of charset_mismatch, not collation_cost"):
        evidence.add_instructions("collation_cost", tmp_path, target="mysql57")


def test_profile_run_says_in_one_line_that_counts_were_added_before(tmp_path, capsys):
    run = tmp_path / "run"
    store_evidence(run, "charset_mismatch", {"charset_utf8mb4": "mysqld;MYSQLlex"}, {"/x/mysqld": "ab12"},
                   added={"functions.added.csv": "condition,function\n"})
    (run / "manifest.json").write_text("{}")
    code = cli.main(["profile", "charset_mismatch", "--run", str(run), "--target", "mysql57"])
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1 and "instruction counts were already added" in err, err
