"""The exploration notebook's library: runs from both stores, filters, and a two-condition
comparison that agrees with stats.analyze on the same data."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimlab import exploration, report, store
from claimlab.errors import DataError
from conftest import ROOT

SHIPPED = report.published_runs(ROOT)


def test_runs_lists_the_shipped_runs_with_their_servers():
    table = exploration.runs()
    ids = report.shipped_run_ids(ROOT)
    shipped = table[table["run_id"].isin(ids)]
    assert len(shipped) == len(ids)
    # One run per server and experiment: each lists the server it measured.
    for row in shipped.itertuples(index=False):
        target = store.read_manifest(Path(row.path))["default_target"]
        assert ("MariaDB" in row.servers) == (target == "mariadb"), (row.run_id, target, row.servers)
        assert ("9.7" in row.servers) == (target == "mysql"), (row.run_id, target, row.servers)


def test_select_filters_by_claim_server_condition_and_metric():
    results = exploration.load([*SHIPPED["binlog_default"], *SHIPPED["charset_mismatch"]])
    assert set(results["claim"]) == {"C1", "C4"}
    c4 = exploration.select(results, claim="C4", server="mariadb", conditions=["binlog=on"], metric="elapsed_s")
    assert len(c4) and set(c4["condition"]) == {"binlog=on"} and set(c4["metric"]) == {"elapsed_s"}
    assert exploration.select(results, server="MySQL 9").empty


def test_compare_agrees_with_the_claim_analysis():
    a = report.analyze_runs(SHIPPED["binlog_default"])[0]
    for row in a.table[a.table["comparison"] == "binlog_on_vs_off"].itertuples(index=False):
        c = exploration.compare(a.results, "binlog=off", "binlog=on", row.metric, workload=row.workload,
                                confidence=row.confidence)
        c = c[c["target"] == row.target].iloc[0]
        assert (c["estimate"], c["ci_low"], c["ci_high"]) == pytest.approx((row.estimate, row.ci_low, row.ci_high))
        assert c["n_blocks"] == row.n_blocks
    with pytest.raises(DataError, match="condition 'nope'"):
        exploration.compare(a.results, "nope", "binlog=on", "elapsed_s")
