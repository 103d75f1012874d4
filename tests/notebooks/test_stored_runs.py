"""The reports from stored runs only, no server: `claimlab report --from-data` over the published
runs of a checkout whose shipped runs are copies of the frozen ones (conftest.frozen_checkout):
no server started, tables repeated, nothing written to a run, every page within 1280 px and free
of the defects readers met; the summary and the exploration notebook; and the notebooks as
committed. The real published runs are not read: what they say is the reports' business."""

import html
import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from claimlab import report
from claimlab.store import read_manifest
from conftest import OVERFLOW_JS, RAW, ROOT, frozen, frozen_id, interrupt_when, notebook_errors, settle


def _claims(checkout: Path) -> list[str]:
    """The claims of a checkout's published runs, in the reports' order (C1 ... C4)."""
    published = report.published_runs(checkout)
    return [report.NOTEBOOKS[e].split("_")[0] for e in report.NOTEBOOKS if e in published]


def test_the_published_list_names_shipped_runs_of_every_experiment():
    """data/published_runs.json (the list only; the runs are not read here)."""
    listed = json.loads((ROOT / "data" / report.PUBLISHED_RUNS).read_text())
    assert set(listed) == set(report.NOTEBOOKS), "data/published_runs.json must list every experiment"
    missing = [f"{e}/{r}" for e, ids in listed.items() for r in ids if not (RAW / e / r / "manifest.json").is_file()]
    assert all(listed.values()) and missing == []


@pytest.fixture(scope="module")
def from_data(tmp_path_factory, frozen_checkout):
    """A reviewer's path, once for the module: `claimlab report --from-data` (the published runs)
    in the frozen checkout, with each run directory's listing taken before and every process
    below the command watched for a server while it renders."""
    import subprocess
    import sys
    import time

    import psutil
    base = tmp_path_factory.mktemp("from-data")
    run_dirs = sorted(m.parent for m in (frozen_checkout / "data" / "raw").glob("*/*/manifest.json"))
    listings = {d: sorted(p.name for p in d.iterdir()) for d in run_dirs}
    proc = subprocess.Popen([sys.executable, "-m", "claimlab.cli", "report", "--from-data", "--out", str(base / "r"),
                             "--figures", str(base / "figures")], cwd=frozen_checkout, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CLAIMLAB_ROOT": str(frozen_checkout)})
    servers: set[str] = set()
    try:
        while proc.poll() is None:
            try:
                below = psutil.Process(proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                break
            for p in below:
                try:
                    if p.name() in ("mariadbd", "mysqld", "sysbench"):
                        servers.add(f"{p.name()} {p.pid}")
                except psutil.NoSuchProcess:
                    continue
            time.sleep(0.05)
        _, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    return base / "r", listings, servers, err


def test_rendering_stored_runs_starts_no_server(from_data, frozen_checkout):
    out, _, servers, err = from_data
    assert servers == set(), servers
    for experiment, ids in report.published_runs(frozen_checkout).items():   # --from-data alone: published
        assert f"report: {experiment}: rendering {' '.join(ids)}" in err
    for step in (*report.published_runs(frozen_checkout), "summary"):         # where a report's minutes went
        assert re.search(rf"^report: {step}: done in \d+ s$", err, re.M), err


def test_rerender_from_shipped_data_starts_no_server_and_repeats_its_tables(from_data, frozen_checkout, tmp_path,
                                                                          monkeypatch):
    """Rendered again, one claim's runs give the same tables and nothing is written to a run."""
    out, listings, _, _ = from_data
    monkeypatch.setenv("CLAIMLAB_ROOT", str(frozen_checkout))
    again = tmp_path / "again"
    nb = report.execute(report.CLAIM_NOTEBOOK, again, {
        "experiment": "binlog_default", "run_ids": report.published_runs(frozen_checkout)["binlog_default"],
        "figures_dir": str(tmp_path / "figures"), "summary_json": str(again / "binlog_default.summary.json")},
        frozen_checkout, report.NOTEBOOKS["binlog_default"])
    assert report.render_html(nb).name == "C4_binlog_default.html"
    tables = [json.loads((d / "binlog_default.summary.json").read_text())["rows"] for d in (out, again)]
    assert tables[0] == tables[1]
    for run_dir, before in listings.items():
        assert sorted(p.name for p in run_dir.iterdir()) == before, run_dir.name   # nothing written to a run
        assert read_manifest(run_dir)["status"] == "complete"


def test_summary_notebook_runs_from_shipped_data(from_data, frozen_checkout):
    """No server: the summary of `--from-data` reads the published runs, beside the earlier sessions'."""
    out, *_ = from_data
    assert not notebook_errors(out / "00_summary.ipynb")
    figures = out.parent / "figures" / "summary"
    assert (figures / "forest.png").exists()
    # between sessions: a table per claim, every earlier run listed with its estimates and baseline
    # levels in a row of its own
    text = (out / "00_summary.ipynb").read_text()
    claims = _claims(frozen_checkout)
    captions = [html.escape(f"{claim}: each run's estimate beside its baseline level") for claim in claims]
    assert len(claims) > 1 and all(caption in text for caption in captions)   # the source spells no claim
    assert all(f"<td>{run}</td>" in text for run in report.shipped_run_ids(frozen_checkout, report.EARLIER_RUNS))
    # the version ladder: each claim on the server that ran it (MariaDB's, apart), drawn and tabled
    assert (figures / "ladder.png").exists()
    outputs = "".join(o.get("data", {}).get("text/html", "") for c in nbformat.read(out / "00_summary.ipynb", 4).cells
                      if c.cell_type == "code" and "ladder.table_html" in c.source for o in c.get("outputs", []))
    assert re.findall(r"<tr><td>(C\d)</td>", outputs) == claims
    assert outputs.count("<td>MariaDB 10.11.19 (apart)</td>") == len(claims)
    # the published runs come from one host: the per-host view says so in one line
    shipped = report.shipped_run_ids(frozen_checkout)
    assert re.search(rf"<p>All {len(shipped)} runs were made outside a Dask cluster, with no host name recorded "
                     r"\(processors: [^<]*\), so there is no per-host view", text)


def test_claim_reports_from_shipped_data_fit_the_page_and_name_cpu_samples(from_data, frozen_checkout, browser):
    """--from-data over every published run: cards at the top, CPU evidence from the run
    directory with >= 80% of samples named, why-slower re-analysed from its stored run, and on
    every page (index, summary, the claims, why-slower) nothing wider than 1280 px."""
    out, *_ = from_data
    page = (out / "C1_charset_mismatch.html").read_text()
    assert re.search(r"""class=["']card """, page) and "share in charset code and lexer" in page
    from claimlab import evidence
    ev = evidence.load(frozen("c1"))
    assert max(p.named_share for p in ev.profiles) >= 0.8
    pages = sorted(out.glob("*.html"))
    investigations = [f"{Path(n).stem}.html" for n, _ in report.INVESTIGATIONS.values()]   # from stored runs
    claims = sorted(f"{report.NOTEBOOKS[e]}.html" for e in report.published_runs(frozen_checkout))
    assert [p.name for p in pages] == ["00_summary.html", *investigations, *claims, "index.html"]
    assert 'href="05_why_slower.html"' in (out / "index.html").read_text()
    for path in pages:
        browser.get(path.as_uri())
        settle(browser)
        assert browser.execute_script(OVERFLOW_JS) == [], path.name


def test_the_rendered_summary_shows_the_version_ladder_and_the_host_view(from_data):
    """`claimlab report --from-data`: the summary page carries the ladder (its table and its
    figure, inline) and the per-host view's one line, after the forest plot."""
    out, *_ = from_data
    page = (out / "00_summary.html").read_text()
    headings = re.findall(r"<h2 id=\"([^\"]+)\"", page)
    assert headings.index("Forest-plot") < headings.index("Version-ladder") < headings.index("By-host")
    ladder_part = page.split('id="Version-ladder"', 1)[1].split('id="By-host"', 1)[0]
    assert "<td>MariaDB 10.11.19 (apart)</td>" in ladder_part and "data:image/png;base64," in ladder_part
    assert "runs were made outside a Dask cluster" in page.split('id="By-host"', 1)[1]


def test_exploration_notebook_reads_several_sessions_without_a_server(tmp_path, frozen_checkout, monkeypatch):
    # C4's published run beside an earlier session's
    monkeypatch.setenv("CLAIMLAB_ROOT", str(frozen_checkout))
    runs = [*report.published_runs()["binlog_default"],
            *report.published_runs(file=report.EARLIER_RUNS)["binlog_default"]]
    out = report.execute("explore.ipynb", tmp_path, {"run_ids": runs}, frozen_checkout)
    assert not notebook_errors(out)
    html = "".join(o.get("data", {}).get("text/html", "") for c in nbformat.read(out, as_version=4).cells
                   if c.cell_type == "code" for o in c.get("outputs", []))
    assert len(runs) > 1 and all(run in html for run in runs) and "p value" in html   # every session, compared


def test_notebooks_are_committed_without_outputs_on_the_python3_kernel():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata["kernelspec"]["name"] == "python3", path.name
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert not any(c.get("outputs") or c.get("execution_count") for c in code), path.name


# What a reader saw before, as the browser renders it: internal keys for levels and comparisons,
# interval levels that disagree, the method misnamed, notes of 190 row ids, a header naming one
# server when two ran, negative counts, an unstyled "near an edge" badge, Chinese drawn as boxes.
DEFECTS = r"""
const out = [];
const text = e => (e.innerText || '').trim();
const shown = Array.from(document.querySelectorAll('.card, table.people, .notes, h1, h2, h3, h4, caption'));
for (const key of ['uca_ai', 'v80_skiplogbin', 'defaults80', 'defaults57', 'v57_values', 'v80_binlog',
                   '_vs_', 'elapsed_s (s)', 'collation=', 'charset=', 'server=', 'binlog='])
  for (const e of shown) if (e.textContent.includes(key)) {   // collapsed notes too
    out.push('key ' + key + ' in ' + e.textContent.trim().slice(0, 80)); break; }
const body = text(document.body);
if (/hierarchical bootstrap/.test(body) && !/Why is it slower/.test(body)) out.push('method: hierarchical bootstrap');
for (const m of body.matchAll(/\b(?:claimlab|stats)\.[a-z_]+/g)) out.push('code named: ' + m[0]);
const levels = new Set(Array.from(body.matchAll(/(\d+(?:\.\d+)?)% interval\)/g), m => m[1]));
const stated = new Set(Array.from(body.matchAll(/Intervals at (\d+(?:\.\d+)?)%/g), m => m[1]));
for (const l of levels) if (stated.size && !stated.has(l)) out.push('card level ' + l + '% not a table level');
for (const th of document.querySelectorAll('table.people th'))
  if (/^\d+(\.\d+)?% (low|high)$/.test(text(th)) && document.querySelector('.card')) out.push('level in a header');
for (const note of document.querySelectorAll('.notes .note-item')) {
  const p = note.querySelector('p');
  if (p.querySelectorAll('br').length !== 1 || text(p).length > 600) out.push('note over two lines');
  const d = note.querySelector('details');
  if (d && d.open) out.push('note details open');
}
for (const table of document.querySelectorAll('table.people')) {
  const head = Array.from(table.querySelectorAll('th')).map(text);
  if (head[0] !== 'cost') continue;
  for (const td of table.querySelectorAll('td'))
    if (/^-\d|\[-|, -/.test(text(td))) out.push('negative cost ' + text(td));
}
for (const b of document.querySelectorAll('.edge-mark')) {
  const s = getComputedStyle(b);
  if (s.borderTopWidth === '0px' || s.backgroundColor === 'rgba(0, 0, 0, 0)' || parseFloat(s.marginRight) <= 0)
    out.push('unstyled edge badge');
}
// a measured card's head: claim · comparison · server (a card no server measured has no third part)
const servers = new Set(Array.from(document.querySelectorAll('.card .what'), w => text(w).split(' · '))
                        .filter(parts => parts.length === 3).map(parts => parts[2]));
const scope = Array.from(document.querySelectorAll('li')).map(text).find(t => t.startsWith('Servers:'));
for (const s of servers) if (scope !== undefined && !scope.includes(s)) out.push('scope lacks ' + s);
if (servers.size && scope === undefined && /^C\d_/.test(document.title)) out.push('no Servers: line');
// Chinese drawn as boxes: two different ideographs draw identical pixels only as missing glyphs
const han = Array.from(body).filter(c => /\p{Script=Han}/u.test(c));
if (han.length) {
  const canvas = document.createElement('canvas'); canvas.width = 40; canvas.height = 40;
  const ctx = canvas.getContext('2d');
  const draw = c => { ctx.clearRect(0, 0, 40, 40); ctx.font = '32px ' + getComputedStyle(document.body).fontFamily;
                      ctx.fillText(c, 2, 32); return Array.from(ctx.getImageData(0, 0, 40, 40).data).join(); };
  const distinct = Array.from(new Set(han)).slice(0, 2);
  if (distinct.length === 2 && draw(distinct[0]) === draw(distinct[1])) out.push('Chinese drawn as boxes');
}
return out;
"""


def test_reports_show_a_reader_none_of_the_known_defects(from_data, frozen_checkout, browser, tmp_path):
    """Every page of `claimlab report --from-data` at 1280 px, checked in the browser for the
    defects readers met (DEFECTS), and each claim page's screenshot kept beside the reports."""
    out, *_ = from_data
    pages = sorted(out.glob("*.html"))
    found = {}
    for path in pages:
        browser.get(path.as_uri())
        assert browser.execute_script("return window.innerWidth;") == 1280
        found[path.name] = browser.execute_script(DEFECTS)
        browser.save_screenshot(str(tmp_path / f"{path.stem}.png"))
    assert {page: defects for page, defects in found.items() if defects} == {}
    # the pages that carry the defects above were checked, not skipped
    claim_pages = [f"{report.NOTEBOOKS[e]}.html" for e in report.published_runs(frozen_checkout)]
    assert set(claim_pages) <= set(found)
    c1 = (out / "C1_charset_mismatch.html").read_text()
    assert "Servers:</strong> MariaDB 10.11.19" in c1
    assert "<details>" in c1 and "Intervals at 97.5%" in c1 and "Intervals at 95%" in c1


def test_setup_installs_a_font_that_draws_chinese():
    """The sources cite Chinese titles: `make setup` installs fonts-noto-cjk for the browser and
    matplotlib (a font that covers 愛 and 設)."""
    import subprocess
    makefile = (ROOT / "Makefile").read_text()
    assert "fonts-noto-cjk" in makefile.split("OS_PACKAGES :=", 1)[1].split("\n\n", 1)[0]
    covering = subprocess.run(["fc-list", ":charset=611b 8a2d", "family"], capture_output=True, text=True).stdout
    assert "CJK" in covering, covering


def test_a_notebook_that_fails_is_one_line_naming_it(tmp_path):
    """Before: papermill's whole traceback (68 lines for a run edited after it ended). Cell 3 of the
    executed notebook: papermill adds the injected parameters."""
    from claimlab.errors import ClaimlabError
    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("run_ids = []", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("raise ValueError(f'{len(run_ids)} runs: no table\\nsee the runs')")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, tmp_path / "notebooks" / "bad.ipynb")
    with pytest.raises(ClaimlabError) as err:
        report.execute("bad.ipynb", tmp_path / "out", {"run_ids": ["a", "b"]}, tmp_path)
    assert str(err.value) == (f"{tmp_path / 'out' / 'bad.ipynb'}: the notebook stopped at cell 3: ValueError: "
                              "2 runs: no table | see the runs (its traceback is in that notebook)")


def test_an_interrupted_render_exits_with_its_kernel_and_says_how_to_render_again(tmp_path):
    """Before: SIGINT or SIGTERM while a notebook ran printed the error, shut the kernel down,
    then hung for good: Python's exit joined the thread still waiting on that kernel. And it
    said "what was measured is kept", where nothing is measured."""
    import signal

    import psutil
    run_id, out = frozen_id("c1"), tmp_path / "reports"
    code, err, kernels = interrupt_when(
        ["report", "--from-data", run_id, "--out", str(out), "--figures", str(tmp_path / "figures")],
        lambda p: "ipykernel" in " ".join(p.cmdline()), signal.SIGINT)
    assert code == 130, err[-2000:]
    assert err.splitlines()[-2:] == [
        "claimlab: error: interrupted by SIGINT",
        f"claimlab: every run is stored; the reports were cut short: render them with: claimlab report "
        f"--from-data {run_id} --out {out} --figures {tmp_path / 'figures'}"], err[-2000:]
    psutil.wait_procs(kernels, timeout=10)
    assert not any(k.is_running() and k.status() != psutil.STATUS_ZOMBIE for k in kernels)
    assert not (out / "index.html").exists()
