"""Which stored runs `cpu_evidence` profiles: every run of a report that has none, each on its own
server (before, only the first run's, so a MariaDB-and-MySQL report profiled MariaDB alone)."""

from __future__ import annotations

import json
import shutil

import pytest

from claimlab import evidence, instructions, profiling, report, store
from conftest import ROOT


def test_every_run_without_stored_evidence_is_profiled_not_only_the_first(tmp_path):
    earlier = json.loads((ROOT / "data" / "earlier_runs.json").read_text())["collation_cost"]
    with_evidence = [store.find_run(r) for r in earlier]
    assert all(evidence.exists(r) for r in with_evidence)   # both servers' C2 runs were profiled
    without = []
    for run in with_evidence[:2]:                          # the same runs, their evidence left out
        (tmp_path / run.name).mkdir()
        shutil.copy(run / "manifest.json", tmp_path / run.name)
        without.append(tmp_path / run.name)
    runs = [with_evidence[0], without[0], *with_evidence[1:], without[1]]
    assert evidence.missing(runs) == without
    assert evidence.missing(with_evidence) == []


def test_runs_profiled_before_threads_were_counted_apart_show_all_thread_counts_only():
    run = store.find_run(json.loads((ROOT / "data" / "earlier_runs.json").read_text())["collation_cost"][0])
    table = evidence.load(run).summary(".")
    assert {"per_row", "relative_spread"} <= set(table.columns)
    assert not {"own_per_row", "own_spread"} & set(table.columns)
    assert "instructions per row (all threads)" in report.evidence_table(evidence.load(run), "collation_cost")


def test_a_statement_thread_counting_more_than_all_threads_is_refused():
    statement = instructions.Statement("SELECT 1", rows=10)
    counts = instructions.InstructionCounts("c", statement, counts=(1_000, 1_100), own=(900, 1_000), top=None)
    assert counts.own_per_row == 95 and counts.per_row == 105
    assert counts.own_spread == pytest.approx(100 / 950)
    with pytest.raises(profiling.ProfilingError, match="condition c"):
        instructions.InstructionCounts("c", statement, counts=(1_000, 1_100), own=(900, 1_200), top=None)
    with pytest.raises(profiling.ProfilingError, match="counted no instructions"):
        instructions.InstructionCounts("c", statement, counts=(1_000,), own=(0,), top=None)
