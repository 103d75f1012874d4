"""What the why-slower notebook calls instead of starting servers itself: the configuration diff
of a stored run, the stored ablation run to read and the ablation it measured, and the surprises
it must flag."""

from __future__ import annotations

import dataclasses
import time

import pandas as pd
import pytest

from claimlab import ablation, attribution, campaign, records, report, store, variables, writer
from claimlab.errors import DataError
from conftest import ROOT, frozen


def test_stored_facts_diff_a_run_without_a_server():
    # MariaDB's: its version gains "-log" with the binlog on (MySQL's does not)
    run_dir = frozen("format_1")
    d = variables.diff(variables.stored_facts(run_dir, "binlog=off"), variables.stored_facts(run_dir, "binlog=on"),
                       "off", "on")
    flagged = set(d.flagged["variable"])
    assert {"log_bin", "version"} <= flagged
    version = d.table.set_index("variable").loc["version"]
    assert version["value_b"] == version["value_a"] + "-log"
    with pytest.raises(DataError, match="no server start of condition 'nope'"):
        variables.stored_facts(run_dir, "nope")


def _manifest():
    return records.RunManifest.new(experiment="binlog_hunt", claim="ablation", profile="smoke", factors=[])


def test_stored_run_reads_the_newest_complete_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_ROOT", str(tmp_path))
    abl = ablation.load(ROOT / "params" / "ablation" / "binlog_hunt.yaml", "smoke")
    with pytest.raises(DataError, match="run `claimlab ablate binlog_hunt` first"):
        ablation.stored_run(abl)
    older = writer.RunStore.create(store.runs_root(), _manifest())
    older.finish("complete")
    time.sleep(0.01)
    newer = writer.RunStore.create(store.runs_root(), _manifest())
    newer.finish("complete")
    time.sleep(0.01)
    writer.RunStore.create(store.runs_root(), _manifest())   # still running
    assert ablation.stored_run(abl) == newer.path
    assert ablation.stored_run(abl, older.run_id) == older.path
    assert ablation.condition_id("slow") == "step=slow"


def test_the_ablation_of_a_stored_run_is_the_one_it_measured():
    """A later edit of the file cannot mislabel an old run's steps: the run's manifest keeps the
    document, profile and target it measured."""
    run = frozen("why_slower")
    measured = ablation.of_run(run)
    as_filed = ablation.load(ROOT / "params" / "ablation" / "seed004_hunt_mysql.yaml",
                             store.read_manifest(run)["profile"])
    assert measured.steps() == as_filed.steps() and measured.design == as_filed.design
    with pytest.raises(DataError, match="is not an ablation run"):
        ablation.of_run(frozen("format_1"))


def test_surprises_flag_a_step_that_made_it_slower():
    table = pd.DataFrame([
        dict(kind="total", option="(all)", share=1.0, share_lo=1.0, share_hi=1.0),
        dict(kind="one", option="performance_schema", share=-0.16, share_lo=-0.33, share_hi=-0.06),
        dict(kind="one", option="log_bin", share=0.7, share_lo=0.5, share_hi=0.9),
        dict(kind="cumulative", option="sync_binlog", share=-0.05, share_lo=-0.2, share_hi=0.1)])
    found = attribution.surprises(table)
    assert len(found) == 1 and "performance_schema" in found[0] and "-16% [-33%, -6%]" in found[0]


def test_callgrind_counts_one_statement_workloads_and_sysbench_over_the_text_protocol_only():
    """A prepared statement is lexed once, so one text query cannot stand for C1's `oltp_ps`."""
    from claimlab import instructions, profiling
    counted = {(c.workload.kind, getattr(c.workload, "ps_mode", None)): instructions.countable(c.workload)
               for name in ("charset_mismatch", "binlog_default") for c in profiling.conditions_of(name, "smoke", ROOT)}
    assert counted == {("sysbench", "disable"): True, ("proc_insert_loop", None): True}
    text = next(c.workload for c in profiling.conditions_of("charset_mismatch", "smoke", ROOT))
    assert not instructions.countable(dataclasses.replace(text, ps_mode="auto"))
    for c in profiling.conditions_of("binlog_default", "smoke", ROOT):
        assert instructions.statement_for(c.workload).rows == c.workload.rows


def test_conditions_on_servers_not_here_are_listed_not_fatal(tmp_path, monkeypatch):
    """Without a tarball mirror C3's 5.7/8.0 levels cannot run: profiling C3's run on MySQL 9.7
    lists them (the evidence then reports them unavailable) instead of failing the whole report."""
    from claimlab import profiling
    from claimlab.errors import TargetUnavailable
    from claimlab.servers import check_available
    conds = profiling.conditions_of("insert_57_vs_80", "smoke", ROOT, target="mysql")
    targets = {c.target.name for c in conds}
    assert {"mysql", "mysql57", "mysql80"} <= targets
    missing = next(c for c in conds if c.target.name == "mysql57")
    monkeypatch.delenv("CLAIMLAB_MYSQL_MIRROR", raising=False)
    monkeypatch.setenv("CLAIMLAB_CACHE", str(tmp_path))
    with pytest.raises(TargetUnavailable, match="CLAIMLAB_MYSQL_MIRROR"):
        check_available(missing.target)


def test_a_quick_build_reads_the_shipped_investigation_where_one_is_stored(tmp_path, frozen_checkout, monkeypatch):
    """make report re-analyses the shipped hunt of Yangsh888's toggles instead of running it (minutes); a data
    directory without one gets a fresh smoke run."""
    notebook, ablation_name = report.INVESTIGATIONS["why_slower"]
    assert (ROOT / "notebooks" / notebook).is_file()
    monkeypatch.setenv("CLAIMLAB_ROOT", str(frozen_checkout))   # a clone: runs/ and data/raw
    assert campaign._stored_ablation(ablation_name, None)
    assert not campaign._stored_ablation(ablation_name, tmp_path)


def test_profiling_an_unknown_name_lists_experiments_and_ablations():
    """Before: `claimlab profile` said "no such params file" and listed experiments only, though
    it takes an ablation's name too."""
    from claimlab import profiling
    from claimlab.errors import ConfigError
    with pytest.raises(ConfigError, match=r"^binlog_hnt: no experiment \(params/\) or ablation") as raised:
        profiling.conditions_of("binlog_hnt", "smoke", ROOT)
    assert "experiments: binlog_default, charset_mismatch" in str(raised.value)
    assert "ablations: binlog_hunt" in str(raised.value)
