"""The index page: rendered by an autoescaping template from the claim reports' side files."""

from __future__ import annotations

import json

from claimlab import report, store
from conftest import ROOT


def test_index_has_a_card_per_comparison_and_escapes_what_it_is_given(tmp_path):
    a = report.analyze_runs(report.published_runs(ROOT)["binlog_default"])[0]
    summary = tmp_path / "binlog_default.summary.json"
    run_dirs = [store.find_run(r) for r in a.run_id.split()]
    report.write_summary(summary, run_dirs, a.table, a.claim)
    data = json.loads(summary.read_text())
    data["title"] = "<script>alert(1)</script>"
    built = report.Built("binlog_default", tmp_path / "C4.ipynb", tmp_path / "C4.html", data)
    page = report.write_index(tmp_path / "index.html", [built], tmp_path / "summary.html").read_text()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("class='card") + page.count('class="card') >= len(a.table)
    assert all(run_id in page for run_id in data["run_ids"])
    assert "short profile" not in page or data["profile"] != "full"
    assert "slow hour" not in page   # C4's comparisons have no fast state to count


def test_index_names_the_claims_and_servers_measured_in_a_slow_hour(tmp_path):
    # build BI's C2 runs (data/quick_builds.json): 6-7% of MariaDB's values fast, 11-13% of MySQL's
    bi = json.loads((ROOT / "data" / "quick_builds.json").read_text())["BI"]["runs"]
    c2 = [r for r in bi if store.read_manifest(store.find_run(r))["experiment"] == "collation_cost"]
    a = report.analyze_runs(c2)[0]
    summary = tmp_path / "collation_cost.summary.json"
    report.write_summary(summary, [store.find_run(r) for r in c2], a.table, a.claim)
    built = report.Built("collation_cost", tmp_path / "C2.ipynb", tmp_path / "C2.html",
                         json.loads(summary.read_text()))
    page = report.write_index(tmp_path / "index.html", [built], tmp_path / "summary.html").read_text()
    assert "Measured in a slow hour" in page and page.count("<li>C2 on ") == 2, page
    assert "<li>C2 on MySQL 9.7.4: only 11% of a comparison&#39;s values" in page, page
