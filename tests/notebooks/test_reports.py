"""The main job end to end on the smoke profile: every claim notebook runs against real MariaDB,
the summary and index render, the HTML opens in a real headless browser with every figure loaded
and no error, and a planted password appears in no produced file."""

import html
import json
import re
import secrets
import shutil
from pathlib import Path

import nbformat
import pytest

from claimlab import report
from claimlab.servers import ServerOptions
from claimlab.store import find_run, list_runs, read_jsonl, read_manifest
from conftest import ROOT, run_cli


@pytest.fixture(scope="module")
def built(tmp_path_factory, mariadbd):
    base = tmp_path_factory.mktemp("report")
    # Both servers, every claim; CPU evidence is exercised from stored runs
    # (test_claim_report_from_shipped_data...) and by tests/integration/test_*evidence*. The
    # investigation re-analyses its shipped run, as `make report` does in a clone (its 32 MySQL
    # starts at the smoke size took two of this fixture's three minutes); it runs anew in
    # test_investigation_runs_its_ablation_anew_when_asked.
    for _, ablation_name in report.INVESTIGATIONS.values():
        (shipped,) = [Path(r["path"]) for r in list_runs(ROOT / "data" / "raw") if r["experiment"] == ablation_name]
        shutil.copytree(shipped, base / "raw" / ablation_name / shipped.name)
    # A cache of its own, empty: the build's preloading is what its runs copy (checked below).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CLAIMLAB_DATADIRS", str(base / "datadirs"))
        index = report.build(profile="smoke", out_dir=base / "reports", data_dir=base / "raw",
                             figures_dir=base / "figures", cpu_evidence=False, log=lambda msg: None)
    return base, index


def _errors(nb_path: Path) -> list[str]:
    nb = nbformat.read(nb_path, as_version=4)
    return [o.get("ename", "") + ": " + o.get("evalue", "") for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o.output_type == "error"]


def _mysql_available() -> bool:
    from claimlab.errors import ClaimlabError
    from claimlab.servers import TargetSpec, check_available
    try:
        check_available(TargetSpec(name="mysql", kind="mysql-debian"))
        return True
    except ClaimlabError:
        return False


@pytest.mark.parametrize("experiment", sorted(report.NOTEBOOKS))
def test_claim_notebook_ran_end_to_end(built, experiment):
    base, _ = built
    out = base / "reports" / f"{report.NOTEBOOKS[experiment]}.ipynb"
    assert out.exists() and not _errors(out)
    summary = json.loads((base / "reports" / f"{experiment}.summary.json").read_text())
    assert summary["profile"] == "smoke" and summary["rows"]
    assert {r["verdict"] for r in summary["rows"]} <= {"supported", "contradicted", "inconclusive", "not_tested"}
    manifests = [read_manifest(find_run(run_id, base / "raw")) for run_id in summary["run_ids"]]
    # One run per embedded server that can run here (MySQL whenever `make setup` could fetch it).
    expected = {"mariadb"} | ({"mysql"} if _mysql_available() else set())
    assert {m["default_target"] for m in manifests} == expected
    assert {r["target"] for r in summary["rows"] if r["verdict"] != "not_tested"} == expected
    # The tables were loaded before the runs (report.preload_all): every MySQL cell's first start
    # copies its directory (MySQL's initialisation alone is worth a copy; MariaDB's smoke loads are not).
    for m in manifests:
        if m["default_target"] == "mysql":
            starts = read_jsonl(find_run(m["run_id"], base / "raw") / "servers.jsonl")
            first = {s["cell"]: s for s in sorted(starts, key=lambda s: -s["seq"])}
            assert all(s["datadir_from_cache"] for s in first.values()), first
    # Inside a kernel too, the connector's C extension must load (see claimlab/__init__.py).
    assert all(m["provenance"]["connector_implementation"] == "c-extension" for m in manifests)
    claim_figures = base / "figures" / summary["claim"]
    for name in ["effects", "observations", "run_order"]:
        assert (claim_figures / f"{name}.png").stat().st_size > 1000
        assert (claim_figures / f"{name}.svg").exists()


def test_index_lists_every_claim_and_links_reports(built):
    base, index = built
    text = index.read_text()
    assert 'href="05_why_slower.html"' in text
    for name in report.NOTEBOOKS.values():
        assert f'href="{name}.html"' in text
        assert (base / "reports" / f"{name}.html").exists()
    for claim in ("C1", "C2", "C3", "C4"):
        assert f">{claim}: " in text


def test_html_loads_nothing_from_the_network(built):
    base, _ = built
    pages = list((base / "reports").glob("*.html"))
    assert len(pages) == 7   # index, summary, four claims, the why-slower investigation
    for page in pages:
        # What a browser fetches: src= of any element and href= of <link> (a citation's <a href> is not a load)
        text = page.read_text()
        remote = (re.findall(r"""src\s*=\s*["']?(?:https?:)?//[^"'\s>]+""", text)
                  + re.findall(r"""<link\b[^>]*href\s*=\s*["']?(?:https?:)?//[^"'\s>]+""", text))
        assert remote == [], (page.name, remote)


CLAIM_IDS = ("C1", "C2", "C3", "C4")


def test_summary_notebook_runs_from_shipped_data(tmp_path):
    """No server: the summary reads the runs shipped in data/ (data/published_runs.json)."""
    shipped = report.published_runs(ROOT)
    assert set(shipped) == set(report.NOTEBOOKS), "data/published_runs.json must list every experiment"
    out = report.execute(report.SUMMARY, tmp_path, {"figures_dir": str(tmp_path / "figures")}, ROOT)
    assert not _errors(out)
    assert (tmp_path / "figures" / "summary" / "forest.png").exists()
    # between sessions: a table per claim, every earlier run listed with its estimates and baseline
    # levels in a row of its own
    text = out.read_text()
    captions = [html.escape(f"{claim}: each run's estimate beside its baseline level") for claim in CLAIM_IDS]
    assert all(caption in text for caption in captions)   # in the output: the source spells no claim
    assert all(f"<td>{run}</td>" in text for run in report.shipped_run_ids(file=report.EARLIER_RUNS))


def test_investigation_runs_its_ablation_anew_when_asked(tmp_path, mariadbd):
    """The path of a build with no stored investigation run (and of `start_servers = True` in
    JupyterLab): the notebook runs the ablation on real servers, here MariaDB's analogue."""
    notebook, _ = report.INVESTIGATIONS["why_slower"]
    out = report.execute(notebook, tmp_path / "reports", {
        "ablation_name": "binlog_hunt", "profile": "smoke", "data_dir": str(tmp_path / "raw"),
        "start_servers": True, "cpu_evidence": False, "figures_dir": str(tmp_path / "figures"),
        "profile_dir": str(tmp_path / "profiles")}, ROOT)
    assert not _errors(out)
    (run,) = list_runs(tmp_path / "raw")
    assert run["experiment"] == "binlog_hunt" and run["status"] == "complete"
    assert read_manifest(Path(run["path"]))["default_target"] == "mariadb"
    assert (tmp_path / "figures" / "why_slower" / "waterfall.png").stat().st_size > 1000

# Every table, figure and card must fit the page: its right edge within the viewport, and a
# table not wider than its own box (a cut-off column).
OVERFLOW = """return Array.from(document.querySelectorAll('table, img, svg, .card, pre')).filter(e => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && (r.right > document.documentElement.clientWidth + 1
                         || (e.tagName === 'TABLE' && e.scrollWidth > e.clientWidth + 1));
}).map(e => e.tagName + ' ' + Math.round(e.getBoundingClientRect().right) + 'px');"""


def _browser(profile_dir: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile_dir}", "--window-size=1280,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


@pytest.mark.parametrize("page, figures", [("index.html", 0), ("C4_binlog_default.html", 3),
                                           ("C2_collation_cost.html", 3), ("00_summary.html", 1),
                                           ("05_why_slower.html", 3)])
def test_report_opens_in_a_real_browser(built, page, figures, tmp_path):
    base, _ = built
    driver = _browser(tmp_path / "chromium-profile")
    try:
        driver.get((base / "reports" / page).as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.src.slice(0, 30)]);")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        overflowing = driver.execute_script(OVERFLOW)
        shots = base / "screenshots"
        shots.mkdir(exist_ok=True)
        driver.save_screenshot(str(shots / f"{Path(page).stem}.png"))
    finally:
        driver.quit()
    assert not errors, errors
    assert overflowing == [], f"wider than the 1280 px page: {overflowing}"
    assert all(complete and width > 0 for complete, width, _ in images), images
    assert len(images) >= figures, "a report shows its figures"
    assert (shots / f"{Path(page).stem}.png").stat().st_size > 10_000


def test_planted_password_reaches_no_produced_file(tmp_path, launcher, default_target, monkeypatch):
    """An external target's password (from its environment variable) must not leak anywhere."""
    password = "pw-" + secrets.token_hex(12)
    with launcher.prepare(default_target, ServerOptions()).start() as srv:
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute("CREATE USER 'bench'@'localhost' IDENTIFIED BY %s", (password,))
        cur.execute("GRANT ALL ON `claimlab\\_%`.* TO 'bench'@'localhost'")
        conn.close()
        monkeypatch.setenv("CLAIMLAB_TEST_BENCH_PASSWORD", password)
        params_file = tmp_path / "external_insert.yaml"
        params_file.write_text(f"""
claim: C4
targets:
  mine: {{kind: external, socket: {srv.connect_args()['unix_socket']}, user: bench,
          password_env: CLAIMLAB_TEST_BENCH_PASSWORD}}
workloads:
  insert_loop: {{kind: proc_insert_loop, rows: 20}}
design: {{repetitions: 2, warmup: 0, iterations: 1}}
""")
        out = tmp_path / "out"
        nb = report.execute(report.CLAIM_NOTEBOOK, out, {
            "experiment": "binlog_default", "start_servers": True,
            "params_name": str(params_file), "profile": "smoke", "data_dir": str(tmp_path / "raw"),
            "figures_dir": str(tmp_path / "figures"), "summary_json": str(out / "s.json"),
            "cpu_evidence": False}, ROOT)
        assert not _errors(nb)
        report.render_html(nb, show_code=True)
        leftover = [r for r in _rows(srv, "SHOW DATABASES") if r[0].startswith("claimlab_")]
    assert leftover == [], "claimlab must drop its schemas on an external server"
    produced = [p for p in tmp_path.rglob("*") if p.is_file() and p != params_file]
    assert len(produced) > 5
    leaks = [str(p) for p in produced if password.encode() in p.read_bytes()]
    assert leaks == []


def _rows(server, sql):
    conn = server.connect()
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall()
    finally:
        conn.close()


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
    driver = _browser(tmp_path / "chromium-profile")
    try:
        for path in pages:
            driver.get(path.as_uri())
            assert driver.execute_script(OVERFLOW) == [], path.name
    finally:
        driver.quit()


def test_exploration_notebook_reads_several_sessions_without_a_server(tmp_path):
    out = report.execute("explore.ipynb", tmp_path, {}, ROOT)
    assert not _errors(out)
    html = "".join(o.get("data", {}).get("text/html", "") for c in nbformat.read(out, as_version=4).cells
                   if c.cell_type == "code" for o in c.get("outputs", []))
    assert html.count("20261122T") >= 4 and "p value" in html          # several C4 sessions, compared


def test_notebooks_are_committed_without_outputs_on_the_python3_kernel():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata["kernelspec"]["name"] == "python3", path.name
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert not any(c.get("outputs") or c.get("execution_count") for c in code), path.name
