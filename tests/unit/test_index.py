"""The index page: rendered by an autoescaping template from the claim reports' side files."""

from __future__ import annotations

import json

from claimlab import report, store
from conftest import RAW, frozen_id


def test_index_has_a_card_per_comparison_and_escapes_what_it_is_given(tmp_path):
    a = report.analyze_runs([frozen_id("format_1")], RAW)[0]
    summary = tmp_path / "binlog_default.summary.json"
    run_dirs = [store.find_run(r, RAW) for r in a.run_id.split()]
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
    # a frozen C1 run, one server's fast-state shares set to what a slow hour leaves
    c1 = [frozen_id("c1")]
    a = report.analyze_runs(c1, RAW)[0]
    summary = tmp_path / "charset_mismatch.summary.json"
    report.write_summary(summary, [store.find_run(r, RAW) for r in c1], a.table, a.claim)
    data = json.loads(summary.read_text())
    slow = data["rows"][0]["target"]
    for row in data["rows"]:
        row["fast_share"] = 0.11 if row["target"] == slow else 0.9
    built = report.Built("charset_mismatch", tmp_path / "C1.ipynb", tmp_path / "C1.html", data)
    page = report.write_index(tmp_path / "index.html", [built], tmp_path / "summary.html").read_text()
    assert "Measured in a slow hour" in page and page.count("<li>C1 on ") == 1, page
    assert "only 11% of a comparison&#39;s values" in page, page
    assert f"--target {slow})" in page, page


def test_index_says_which_runs_did_not_finish(tmp_path):
    # Before: an interrupted run's verdicts stood on the index like a finished run's; only the
    # claim page's run section said "interrupted".
    a = report.analyze_runs([frozen_id("format_1")], RAW)[0]
    summary = tmp_path / "binlog_default.summary.json"
    report.write_summary(summary, [store.find_run(r, RAW) for r in a.run_id.split()], a.table, a.claim)
    data = json.loads(summary.read_text())
    built = report.Built("binlog_default", tmp_path / "C4.ipynb", tmp_path / "C4.html", data)
    assert "Not every run here finished" not in report.write_index(tmp_path / "index.html", [built],
                                                                   tmp_path / "summary.html").read_text()
    data["runs"][0]["status"] = "interrupted"
    page = report.write_index(tmp_path / "index.html", [built], tmp_path / "summary.html").read_text()
    assert f"Not every run here finished: C4&#39;s run {data['run_ids'][0]} (interrupted)." in page, page
