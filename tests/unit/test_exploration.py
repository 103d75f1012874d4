"""The exploration notebook's library: runs from both stores, filters, and a two-condition
comparison that agrees with stats.analyze on the same data."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimlab import exploration, report, store
from claimlab.errors import DataError
from conftest import RAW, frozen_id

C1, C4 = frozen_id("c1"), frozen_id("format_1")


def test_runs_lists_the_shipped_runs_with_their_servers(frozen_checkout, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_ROOT", str(frozen_checkout))
    table = exploration.runs()
    ids = report.shipped_run_ids()
    shipped = table[table["run_id"].isin(ids)]
    assert len(shipped) == len(ids) and len(table) > len(ids)   # the earlier sessions' too
    assert list(table["created_at"]) == sorted(table["created_at"], reverse=True)
    # Each lists the server it measured, as its target's kind says.
    for row in table.itertuples(index=False):
        manifest = store.read_manifest(Path(row.path))
        kind = manifest["targets"][manifest.get("default_target") or "default"]["kind"]
        assert ("MariaDB" in row.servers) == (kind == "mariadb"), (row.run_id, kind, row.servers)
        assert ("9.7" in row.servers) == (kind == "mysql-debian"), (row.run_id, kind, row.servers)


def test_select_filters_by_claim_server_condition_and_metric():
    results = exploration.load([C4, C1], RAW)
    assert set(results["claim"]) == {"C1", "C4"}
    c4 = exploration.select(results, claim="C4", server="mariadb", conditions=["binlog=on"], metric="elapsed_s")
    assert len(c4) and set(c4["condition"]) == {"binlog=on"} and set(c4["metric"]) == {"elapsed_s"}
    # a filter that keeps nothing says what there is: the versions and the targets
    with pytest.raises(DataError, match=r"server 'MySQL 9': no such rows here \(they have: 10\.11\.19-MariaDB"
                                        r"-0\+deb12u1, 10\.11\.19-MariaDB-0\+deb12u1-log, default, mariadb\)"):
        exploration.select(results, server="MySQL 9")
    with pytest.raises(DataError, match=r"metric 'qps_typo': no such rows here \(they have: "):
        exploration.select(results, claim="C1", metric="qps_typo")


def test_compare_agrees_with_the_claim_analysis():
    a = report.analyze_runs([C4], RAW)[0]
    for row in a.table[a.table["comparison"] == "binlog_on_vs_off"].itertuples(index=False):
        c = exploration.compare(a.results, "binlog=off", "binlog=on", row.metric, workload=row.workload,
                                confidence=row.confidence)
        c = c[c["target"] == row.target].iloc[0]
        assert (c["estimate"], c["ci_low"], c["ci_high"]) == pytest.approx((row.estimate, row.ci_low, row.ci_high))
        assert c["n_blocks"] == row.n_blocks
    with pytest.raises(DataError, match=r"conditions \['nope'\]: no such rows here \(they have: binlog=off, "
                                        r"binlog=on\)"):
        exploration.compare(a.results, "nope", "binlog=on", "elapsed_s")
