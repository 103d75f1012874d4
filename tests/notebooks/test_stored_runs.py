"""The reports from stored runs only, no server: `claimlab report --from-data` over the shipped
runs (tables repeated, nothing written to a run, every page within 1280 px), the summary and the
exploration notebook, and the notebooks as committed."""

import html
import json
import re
from pathlib import Path

import nbformat
import pytest

from claimlab import report
from claimlab.store import find_run, read_manifest
from conftest import OVERFLOW_JS, ROOT, headless_browser, notebook_errors, run_cli

CLAIM_IDS = ("C1", "C2", "C3", "C4")


def test_summary_notebook_runs_from_shipped_data(tmp_path):
    """No server: the summary reads the runs shipped in data/ (data/published_runs.json)."""
    shipped = report.published_runs(ROOT)
    assert set(shipped) == set(report.NOTEBOOKS), "data/published_runs.json must list every experiment"
    out = report.execute(report.SUMMARY, tmp_path, {"figures_dir": str(tmp_path / "figures")}, ROOT)
    assert not notebook_errors(out)
    assert (tmp_path / "figures" / "summary" / "forest.png").exists()
    # between sessions: a table per claim, every earlier run listed with its estimates and baseline
    # levels in a row of its own
    text = out.read_text()
    captions = [html.escape(f"{claim}: each run's estimate beside its baseline level") for claim in CLAIM_IDS]
    assert all(caption in text for caption in captions)   # in the output: the source spells no claim
    assert all(f"<td>{run}</td>" in text for run in report.shipped_run_ids(file=report.EARLIER_RUNS))


@pytest.fixture(scope="module")
def from_data(tmp_path_factory):
    """A reviewer's path, once for the module: `claimlab report --from-data` over every shipped
    run (no server), with each run directory's listing taken before."""
    base = tmp_path_factory.mktemp("from-data")
    run_dirs = [find_run(run_id, ROOT / "data" / "raw") for run_id in report.shipped_run_ids(ROOT)]
    listings = {d: sorted(p.name for p in d.iterdir()) for d in run_dirs}
    result = run_cli("report", "--from-data", *(d.name for d in run_dirs), "--out", str(base / "r"),
                     "--figures", str(base / "figures"), timeout=900)
    assert result.returncode == 0, result.stderr
    return base / "r", listings


def test_rerender_from_shipped_data_starts_no_server_and_repeats_its_tables(from_data, tmp_path):
    """Rendered again, one claim's runs give the same tables and nothing is written to a run."""
    out, listings = from_data
    result = run_cli("report", "--from-data", *report.published_runs(ROOT)["binlog_default"],
                     "--out", str(tmp_path / "again"), "--figures", str(tmp_path / "figures"), timeout=600)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "again" / "C4_binlog_default.html").exists()
    for step in ("binlog_default", "summary"):         # where a report's minutes went
        assert re.search(rf"^report: {step}: done in \d+ s$", result.stderr, re.M), result.stderr
    tables = [json.loads((d / "binlog_default.summary.json").read_text())["rows"] for d in (out, tmp_path / "again")]
    assert tables[0] == tables[1]
    for run_dir, before in listings.items():
        assert sorted(p.name for p in run_dir.iterdir()) == before, run_dir.name   # nothing written to a run
        assert read_manifest(run_dir)["status"] == "complete"


def test_claim_reports_from_shipped_data_fit_the_page_and_name_cpu_samples(from_data, tmp_path):
    """--from-data over every shipped run: cards at the top, CPU evidence from the run directory
    with >= 80% of samples named, each comparison's server named, why-slower re-analysed from
    its stored run, and on every page (index, summary, C1-C4, why-slower) nothing wider than
    1280 px."""
    out, _ = from_data
    page = (out / "C2_collation_cost.html").read_text()
    assert re.search(r"""class=["']card """, page) and "instructions per row" in page
    assert "uca_ai vs utf8mb3 · MySQL 9.7" in page and "uca_ai vs utf8mb3 · MariaDB 10.11" in page
    from claimlab import evidence
    ev = evidence.load(find_run(report.published_runs(ROOT)["collation_cost"][0], ROOT / "data" / "raw"))
    assert max(p.named_share for p in ev.profiles) >= 0.8
    pages = sorted(out.glob("*.html"))
    investigations = [f"{Path(n).stem}.html" for n, _ in report.INVESTIGATIONS.values()]   # from stored runs
    assert [p.name for p in pages] == ["00_summary.html", *investigations,
                                       *(f"{n}.html" for n in sorted(report.NOTEBOOKS.values())), "index.html"]
    assert 'href="05_why_slower.html"' in (out / "index.html").read_text()
    driver = headless_browser(tmp_path / "chromium-profile")
    try:
        for path in pages:
            driver.get(path.as_uri())
            assert driver.execute_script(OVERFLOW_JS) == [], path.name
    finally:
        driver.quit()


def test_exploration_notebook_reads_several_sessions_without_a_server(tmp_path):
    # C4's published runs beside the earlier sessions' (three sessions, both servers)
    runs = [*report.published_runs(ROOT)["binlog_default"],
            *report.published_runs(ROOT, report.EARLIER_RUNS)["binlog_default"]]
    out = report.execute("explore.ipynb", tmp_path, {"run_ids": runs}, ROOT)
    assert not notebook_errors(out)
    html = "".join(o.get("data", {}).get("text/html", "") for c in nbformat.read(out, as_version=4).cells
                   if c.cell_type == "code" for o in c.get("outputs", []))
    assert all(run in html for run in runs) and "p value" in html          # every session, compared


def test_notebooks_are_committed_without_outputs_on_the_python3_kernel():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata["kernelspec"]["name"] == "python3", path.name
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert not any(c.get("outputs") or c.get("execution_count") for c in code), path.name
