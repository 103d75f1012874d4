"""The summary's per-host view: one row per host (processor, ratio [interval], verdict) and the
pooled row (pooled ratio, between-host spread, every/some/no host) from synthetic host tables;
from stored runs, one line when they come from one host, and the table when copies of a frozen
run are stamped as two hosts' (as workers stamp theirs)."""

from __future__ import annotations

import json
import math

import pandas as pd

from claimlab import hosts_view, provenance, report, store
from claimlab.claims import load_claims
from claimlab.stats import hosts
from conftest import RAW, ROOT, copy_run, frozen, frozen_id

C2 = load_claims(ROOT / "data" / "claims.yaml")["C2"]


def _table(estimate: float, low: float, high: float, verdict: str, blocks: int = 8) -> pd.DataFrame:
    return pd.DataFrame([{"claim": "C2", "comparison": "uca_ai_vs_utf8mb3", "target": "mysql", "n_runs": 1,
                          "n_blocks": blocks, "estimate": estimate, "sd_unit": 0.02, "ci_low": low,
                          "ci_high": high, "confidence": 0.95, "verdict": verdict, "verdict_label": verdict}])


def test_each_host_has_a_row_and_the_pool_says_on_how_many_hosts_the_claim_holds():
    per = hosts.per_host({"amd-a": _table(1.83, 1.80, 1.86, "supported"),
                          "intel-b": _table(1.02, 1.00, 1.04, "contradicted")},
                         {"amd-a": "AMD EPYC (family 25)", "intel-b": "Intel Xeon (family 6)"})
    pooled = hosts.pool(per, C2)
    verdicts = pd.DataFrame([{"claim": "C2", "comparison": "uca_ai_vs_utf8mb3", "target": "mysql",
                              "server_version": "9.7.4-2", "workload": "varchar_scan",
                              "baseline": "collation=utf8mb3_general_ci", "treatment": "collation=uca_ai"}])
    view = hosts_view.host_view(per, pooled, verdicts)
    assert list(view["host"]) == ["amd-a", "intel-b", "pooled over 2 hosts"]
    assert list(view["processor"][:2]) == ["AMD EPYC (family 25)", "Intel Xeon (family 6)"]
    assert list(view["ratio [interval]"][:2]) == ["1.83 [1.80, 1.86]", "1.02 [1.00, 1.04]"]
    assert set(view["comparison"]) == {"utf8mb4_0900_ai_ci vs utf8mb3_general_ci"}
    assert set(view["server"]) == {"MySQL 9.7.4"}
    pool_row = view.iloc[-1]
    assert "holds on some hosts (1 of 2 supported)" in pool_row["verdict"]
    assert pool_row["processor"].startswith("hosts read 1.02 to 1.83; between-host SD ")
    tau = pooled.iloc[0]["tau"]
    assert tau > 0.2 and f"{100 * tau:.2g}%" in pool_row["processor"]
    # keys and targets, without a verdict table to name them
    bare = hosts_view.host_view(per, pooled)
    assert set(bare["comparison"]) == {"uca_ai vs utf8mb3"} and set(bare["server"]) == {"mysql"}


def test_runs_from_one_host_say_so_in_one_line():
    ids = [frozen_id("c1"), frozen_id("format_1")]
    cpu = provenance.cpu_label(store.read_manifest(frozen("c1"))["provenance"]["host"])
    text = hosts_view.host_view_html(ids, data_root=RAW)
    # not "this machine": the machine rendering the page is not the one that measured
    assert text.startswith("<p>All 2 runs were made outside a Dask cluster, with no host name recorded "
                           f"(processors: {cpu}")
    assert text.count("<p>") == 1 and "<table" not in text


def test_runs_of_two_hosts_show_each_host_and_the_pool(tmp_path):
    """A frozen C1 run and two sessions more (copies, their values jittered), stamped as two
    workers' as a cluster stamps them (the manifest is not among the checksummed files)."""
    c1 = frozen_id("c1")
    ids = {"amd-a": [c1], "amd-b": [f"{c1}-b1", f"{c1}-b2"]}
    for host, runs in ids.items():
        for seed, run_id in enumerate(runs):
            copy = copy_run(frozen("c1"), tmp_path, run_id=run_id, jitter=seed if run_id != c1 else None)
            manifest = json.loads((copy / "manifest.json").read_text())
            manifest["provenance"]["host"]["worker_name"] = host
            (copy / "manifest.json").write_text(json.dumps(manifest))
    every = [r for runs in ids.values() for r in runs]
    table = report.analyze_runs(every, tmp_path)[0].table
    html = hosts_view.host_view_html(every, table, tmp_path)
    assert "2 hosts: each host" in html
    assert html.count("pooled over 2 hosts") == len(table[table["estimate"].notna()])
    assert "amd-a" in html and "amd-b" in html and "MariaDB 10.11.19" in html
    per_host, pooled = hosts_view.host_tables(every, tmp_path)
    a = per_host[(per_host["host"] == "amd-a") & (per_host["comparison"] == "mismatch_vs_latin1")
                 & (per_host["target"] == "mariadb")].iloc[0]
    shipped = table[(table["comparison"] == "mismatch_vs_latin1") & (table["target"] == "mariadb")]
    assert not math.isclose(a["estimate"], shipped["estimate"].iloc[0])   # one host's own, not the pool
    assert f"{a['estimate']:.3g}" in html
