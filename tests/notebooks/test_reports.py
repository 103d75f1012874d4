"""The main job end to end on the smoke profile: the run phase measures every claim on real
MariaDB (and C2 and C3 on MySQL 9.7 where it can run) in the test's process, then every notebook renders the
stored runs, the summary and index render, the HTML opens in a real headless browser at 1280 px
with every figure loaded and no error, and a planted password appears in no produced file. The
notebooks themselves never start a server."""

import json
import re
import secrets
import shutil
from pathlib import Path

import nbformat
import pytest

from claimlab import ablation, campaign, datacache, report
from claimlab.servers import ServerOptions
from claimlab.store import find_run, list_runs, read_jsonl, read_manifest, read_results
from conftest import OVERFLOW_JS, ROOT, copy_run, frozen, module_scratch, notebook_errors, settle

TOGGLES_STAND_IN = """
description: Two of Yangsh888's toggles on MariaDB, standing in for the 8.0.40 ablation in the smoke report.
targets: {mariadb: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}}
workloads: {insert_loop: {kind: proc_insert_loop, rows: 50}}
slow: {log_bin: true, sync_binlog: 1}
fast: {log_bin: false}
design: {repetitions: 2, warmup: 0, iterations: 2, seed: 20261122}
"""


# C2's MySQL collation names and C3's versions side by side: the build runs these on MySQL 9.7 too.
MYSQL_CLAIMS = ("collation_cost", "insert_57_vs_80")


@pytest.fixture(scope="module")
def built(request, tmp_path_factory, mariadbd):
    with module_scratch(request, tmp_path_factory, "report") as base:
        yield _build(base)


def _build(base):
    # Both servers, every claim; CPU evidence is exercised from stored runs
    # (test_stored_runs.py) and by tests/integration/test_*evidence*. The investigation
    # re-analyses its frozen shipped run, as `make report` does in a clone (its 32 MySQL starts at
    # the smoke size took two of this fixture's three minutes); it runs anew in
    # test_investigation_renders_an_ablation_run_made_in_the_command.
    copy_run(frozen("why_slower"), base / "raw")
    # A cache of its own, empty: the build's preloading is what its runs copy (checked below).
    # The smoke tables load faster than a copy is worth (datacache.MIN_LOAD_S); kept here all the same.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CLAIMLAB_DATADIRS", str(base / "datadirs"))
        mp.setattr(datacache, "MIN_LOAD_S", 0.0)
        # C3's own ablation, stored before the campaign as `claimlab ablate` stores it, for the
        # render phase to hand to C3's report: a stand-in of two toggles on MariaDB under its
        # name (the real one restarts MySQL 8.0.40 thirty times at the smoke size).
        stand_in = base / "ablation" / f"{report.CLAIM_ABLATIONS['insert_57_vs_80']}.yaml"
        stand_in.parent.mkdir()
        stand_in.write_text(TOGGLES_STAND_IN)
        ablation.run(ablation.load(stand_in, "smoke"), data_root=base / "raw")
        # The embedded servers only: the mirror's MySQL 5.7/8.0 targets would double this build,
        # and tests/integration/test_tarball_mirror.py starts them (C3's run on MySQL 9.7 still
        # holds its 5.7/8.0 levels where a mirror is given). Every claim on MariaDB; on MySQL 9.7
        # the claims whose pages name MySQL's own (MYSQL_CLAIMS), since MySQL's sysbench and
        # binlog runs (C1, C4) are tests/integration/test_mysql.py's.
        quiet = dict(profile="smoke", data_dir=base / "raw", cpu_evidence=False, progress=False, log=lambda msg: None)
        runs = campaign.measure(targets=("mariadb",), **quiet)
        for experiment, ids in campaign.measure(MYSQL_CLAIMS, targets=("mysql",), **quiet).claims.items():
            runs.claims[experiment] += ids
    shutil.rmtree(base / "datadirs")     # the runs' copies only: gigabytes the rest of the suite needs
    index = report.render(runs, out_dir=base / "reports", data_dir=base / "raw", figures_dir=base / "figures",
                          log=lambda msg: None)
    return base, index


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
    assert out.exists() and not notebook_errors(out)
    summary = json.loads((base / "reports" / f"{experiment}.summary.json").read_text())
    assert summary["profile"] == "smoke" and summary["rows"]
    assert {r["verdict"] for r in summary["rows"]} <= {"supported", "contradicted", "inconclusive", "not_tested"}
    manifests = [read_manifest(find_run(run_id, base / "raw")) for run_id in summary["run_ids"]]
    # One run per embedded server that can run here (MySQL whenever `make setup` could fetch it).
    expected = {"mariadb"} | ({"mysql"} if _mysql_available() and experiment in MYSQL_CLAIMS else set())
    assert {m["default_target"] for m in manifests} == expected
    # A comparison across targets (C3's 5.7.23 against 8.0.40, where a mirror is given) names them all.
    ran = {c["target"] for m in manifests for c in m["conditions"]} - set().union(*(m["skipped_targets"]
                                                                                   for m in manifests))
    tested = [r["target"] for r in summary["rows"] if r["verdict"] != "not_tested"]
    named = set().union(*(t.split("+") for t in tested))
    assert named <= ran and expected <= named
    assert {t for t in tested if "+" not in t} <= expected
    # The tables were loaded before the runs (campaign.preload_all): every cell's first start copies
    # its directory.
    for m in manifests:
        starts = read_jsonl(find_run(m["run_id"], base / "raw") / "servers.jsonl")
        first = {s["cell"]: s for s in sorted(starts, key=lambda s: -s["seq"])}
        assert all(s["datadir_from_cache"] for s in first.values()), (m["run_id"], first)
    # Both servers named in the scope where both ran (the reports from stored runs have one).
    servers = re.search(r"Servers:</strong> ([^<]*)", (base / "reports" / f"{report.NOTEBOOKS[experiment]}.html")
                        .read_text()).group(1)
    assert "MariaDB 10.11" in servers and ("MySQL 9.7" in servers) == ("mysql" in expected), servers
    # Inside a kernel too, the connector's C extension must load (see claimlab/__init__.py).
    assert all(m["provenance"]["connector_implementation"] == "c-extension" for m in manifests)
    claim_figures = base / "figures" / summary["claim"]
    for name in ["effects", "observations", "run_order"]:
        assert (claim_figures / f"{name}.png").stat().st_size > 1000
        assert (claim_figures / f"{name}.svg").exists()


def _shown(notebook: Path) -> str:
    """What an executed notebook shows a reader: its Markdown and HTML outputs."""
    return "".join(o.get("data", {}).get(kind, "") for c in nbformat.read(notebook, as_version=4).cells
                   if c.cell_type == "code" for o in c.get("outputs", []) for kind in ("text/markdown", "text/html"))


def test_c3_report_shows_where_the_gap_goes_and_each_toggle_alone(built):
    """The binlog's share of the 5.7 -> 8.0 gap wherever C3's run holds 5.7.23, 8.0.40 and 8.0.40
    without its binlog (a mirror served them), and Yangsh888's toggles from the ablation run the
    render phase handed over, the seed's figures beside; no other claim shows either."""
    base, _ = built
    shown = _shown(base / "reports" / f"{report.NOTEBOOKS['insert_57_vs_80']}.ipynb")
    summary = json.loads((base / "reports" / "insert_57_vs_80.summary.json").read_text())
    levels = set().union(*(set(read_results(find_run(run_id, base / "raw"))["server"].astype(str))
                           for run_id in summary["run_ids"]))
    versions = {"mysql57", "mysql80", "mysql80_skip_log_bin"} <= levels
    assert ("## Where the 5.7 → 8.0 gap goes" in shown) == versions
    if versions:
        assert "<td>MySQL 8.0.40 without the binary log (skip-log-bin)</td>" in shown
        assert re.search(r"<td>MySQL 8\.0\.40 / MySQL 5\.7\.23: [\d.,]+ \[[\d.,]+, [\d.,]+\]</td>", shown)
        assert "Most of the gap (C4): **" in shown
        assert (base / "figures" / "C3" / "gap_shares.png").stat().st_size > 1000
    shown, toggles = shown.split("## Yangsh888's toggles, one at a time")
    assert "Not run." not in toggles
    (made,) = [r for r in list_runs(base / "raw") if r["experiment"] == report.CLAIM_ABLATIONS["insert_57_vs_80"]]
    assert f"**Run** `{made['run_id']}` on MariaDB" in toggles
    assert "<td>skip-log-bin</td>" in toggles and "<td>20.06 → 7.03 s</td>" in toggles
    assert "<td>sync_binlog = the server default</td>" in toggles and "<td>100%: the gap itself</td>" in toggles
    assert len(re.findall(r"<td>-?\d+% \[-?\d+%, -?\d+%\]</td>", toggles)) == 2   # each toggle's share
    other = _shown(base / "reports" / f"{report.NOTEBOOKS['binlog_default']}.ipynb")
    assert "Yangsh888's toggles" not in other and "Where the 5.7" not in other


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


def test_notebooks_take_run_ids_and_never_start_servers():
    """Measuring is the run phase's (claimlab.campaign): no notebook declares a parameter that
    would make it start a server or profile one."""
    import papermill as pm
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        declared = set(pm.inspect_notebook(str(path)))
        assert not declared & {"start_servers", "cpu_evidence", "profile", "targets", "params_name"}, path.name
        assert declared & {"run_ids", "run_id"}, path.name
        code = "".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        for starts in ("runner.run", "ablation.run(", "evidence.collect", "start_servers", ".start()"):
            assert starts not in code, (path.name, starts)


def test_a_campaign_plans_the_investigation_only_where_no_run_of_it_is_stored(tmp_path):
    """No server: the plan of a quick campaign with no stored ablation run runs it at the smoke
    size; with one stored it is left to the render phase."""
    _, ablation_name = report.INVESTIGATIONS["why_slower"]
    steps = campaign.plan(None, "quick", ["mariadb"], data_dir=tmp_path / "empty", log=lambda msg: None)
    (step,) = [s for s in steps if s.investigation]
    assert (step.experiment, step.exp.profile) == (ablation_name, "smoke")
    assert {s.experiment for s in steps if not s.investigation} == set(report.NOTEBOOKS)
    assert all(s.target == "mariadb" for s in steps if not s.investigation)
    copy_run(frozen("why_slower"), tmp_path / "stored")
    stored = campaign.plan(None, "quick", ["mariadb"], data_dir=tmp_path / "stored", log=lambda msg: None)
    assert not [s for s in stored if s.investigation]


def test_investigation_renders_an_ablation_run_made_in_the_command(tmp_path, mariadbd):
    """The path of a campaign with no stored investigation run: the ablation runs in the calling
    process, then its notebook renders the stored run by id. Two of the toggles on MariaDB (the
    notebook takes an ablation file by path too): the whole binlog_hunt restarts MariaDB 22 times
    at the smoke size, and its attribution is tested in tests/integration/test_ablation.py."""
    notebook, _ = report.INVESTIGATIONS["why_slower"]
    spec = tmp_path / "binlog_hunt.yaml"
    spec.write_text(TOGGLES_STAND_IN)
    made = ablation.run(ablation.load(spec, "smoke"), data_root=tmp_path / "raw")
    out = report.execute(notebook, tmp_path / "reports", {
        "ablation_name": str(spec), "run_id": made.run_id, "data_dir": str(tmp_path / "raw"),
        "figures_dir": str(tmp_path / "figures")}, ROOT)
    assert not notebook_errors(out)
    (run,) = list_runs(tmp_path / "raw")
    assert run["experiment"] == "binlog_hunt" and run["status"] == "complete"
    assert read_manifest(Path(run["path"]))["default_target"] == "mariadb"
    assert (tmp_path / "figures" / "why_slower" / "waterfall.png").stat().st_size > 1000


@pytest.mark.parametrize("page, figures", [("index.html", 0), ("C4_binlog_default.html", 3),
                                           ("C2_collation_cost.html", 3), ("C3_insert_57_vs_80.html", 3),
                                           ("00_summary.html", 1), ("05_why_slower.html", 3)])
def test_report_opens_in_a_real_browser(built, browser, page, figures):
    base, _ = built
    browser.get_log("browser")                     # what earlier pages logged is theirs
    browser.get((base / "reports" / page).as_uri())
    settle(browser)
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.src.slice(0, 30)]);")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    overflowing = browser.execute_script(OVERFLOW_JS)
    shots = base / "screenshots"
    shots.mkdir(exist_ok=True)
    browser.save_screenshot(str(shots / f"{Path(page).stem}.png"))
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
        from claimlab import params, runner
        made = runner.run(params.load(params_file, "smoke"), data_root=tmp_path / "raw", progress=False)
        nb = report.execute(report.CLAIM_NOTEBOOK, out, {
            "experiment": "binlog_default", "run_ids": [made.run_id], "data_dir": str(tmp_path / "raw"),
            "figures_dir": str(tmp_path / "figures"), "summary_json": str(out / "s.json")}, ROOT)
        assert not notebook_errors(nb)
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
