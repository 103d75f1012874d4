"""CPU evidence on the claims' own MySQL versions from the mirror, whose builds keep their symbol
tables, so callgrind names the functions the sources name: C1's range query counted per query on
5.7.23 and added to evidence stored before C1 was countable (new files only, checksummed, once),
with the lexer's calls of my_ismbchar_utf8mb4 and the temporary table's of my_charpos_mb; C2's
comparison per call on 8.0.40, the bug's version. Skipped (one line) where no mirror is given."""

import datetime as dt
import json

import pandas as pd
import pytest

from claimlab import evidence, evidence_tables, instructions
from claimlab.claims import load_claims
from claimlab.errors import DataError
from claimlab.servers import Launcher, ServerOptions, installation
from claimlab.store import sha256_file
from claimlab.symbols import build_id
from claimlab.workloads import VarcharScan
from conftest import ROOT, evidence_servers, store_evidence

C1_TINY = """
claim: C1
targets:
  mysql57:
    kind: mysql-tarball
    version: "5.7.23"
    options: {innodb_flush_log_at_trx_commit: 2, log_bin: false, innodb_buffer_pool_size: 64M}
workloads:
  oltp: {kind: sysbench, test: oltp_read_write, threads: 1, time: 1, tables: 1, table_size: 100, ps_mode: disable}
factors:
  charset:
    latin1: {workloads: {oltp: {charset: latin1, schema_charset: latin1}}}
    utf8mb4: {workloads: {oltp: {charset: utf8mb4, schema_charset: utf8mb4}}}
design: {repetitions: 1, warmup: 0, iterations: 1}
"""
LITERAL_BYTES = 119   # the query's literal: sysbench's `c` format


def test_c1_counts_per_query_are_added_to_evidence_stored_without_them(tmp_path, write_params, mysql57):
    path = write_params(C1_TINY, "charset_mismatch")
    binary = str(installation(mysql57).binary)
    run = tmp_path / "run"
    out = store_evidence(run, str(path), {"charset_utf8mb4": "mysqld;do_command;MYSQLlex;my_ismbchar_utf8mb4"},
                         {binary: build_id(binary)})
    measured = {f.name: sha256_file(f) for f in out.iterdir() if f.name != evidence.INDEX}

    ev = evidence.add_instructions(str(path), run, target="mysql57")

    assert {f.name: sha256_file(f) for f in out.iterdir() if f.name in measured} == measured   # nothing rewritten
    added = json.loads((out / evidence.INDEX).read_text())[evidence.ADDED]
    assert set(added["checksums"]) == set(evidence.ADDED_FILES) == {f.name for f in out.iterdir()} - {
        evidence.INDEX, *measured}
    assert dt.datetime.fromisoformat(added["created_at"]) and added["conditions"] == ["charset_utf8mb4"]
    (counted,) = ev.instructions.itertuples()
    assert counted.per == "query" and counted.own_per_row > 10_000 and counted.own_spread < 0.05
    named = evidence_tables.named_functions(ev, "charset_mismatch").set_index("function")
    named, calls = named["instructions"], named["calls"]
    ismbchar, charpos, get_text, lexer = evidence_tables.NAMED_FUNCTIONS["charset_mismatch"]
    assert calls[ismbchar[0]] >= LITERAL_BYTES and calls[get_text[0]] == 1   # the lexer's: one per byte of the literal
    assert named[charpos[0]] > named[lexer[0]] > named[get_text[0]] > 0   # DISTINCT's MEMORY table hashes c through it
    assert not evidence_servers(binary)

    with pytest.raises(DataError, match="already added"):
        evidence.add_instructions(str(path), run, target="mysql57")
    (out / "functions.added.csv").write_text("condition,function\n")
    with pytest.raises(DataError, match="functions.added.csv changed after profiling"):
        evidence.load(run)


def test_c2_comparison_per_call_is_counted_on_the_bugs_version(tmp_path, mysql80):
    scan = VarcharScan(name="scan", rows=1_000, charset="utf8mb4", collation="utf8mb4_0900_ai_ci")
    counts = instructions.count_instructions(Launcher(tmp_path / "work"), mysql80,
                                             ServerOptions(innodb_buffer_pool_size="64M"), scan, "collation_uca_ai",
                                             tmp_path / "cg", repeats=1, warmup=1)
    ev = evidence.Evidence((), pd.DataFrame([counts.summary()]), {}, evidence.function_rows([counts], "collation_cost"))
    (comparison,) = evidence_tables.comparisons(ev, load_claims(ROOT / "data" / "claims.yaml")["C2"]).itertuples()
    assert comparison.function.startswith("my_strnncoll") and comparison.calls_per_row == 1   # one per row
    assert 1_000 < comparison.per_call < 20_000 and comparison.published_per_call == 4_710
