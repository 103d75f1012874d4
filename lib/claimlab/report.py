"""Reports: execute the notebooks with papermill, render them with nbconvert, write an index.

The claim notebooks call the helpers at the top of this module for their narrative tables; the
build functions below turn executed notebooks into single-file HTML (figures embedded as base64,
no script loaded from the network) and `reports/index.html`, the verdict table.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd

from . import params as params_mod
from .claims import Claim
from .errors import ClaimlabError
from .store import project_root, raw_root, read_jsonl, read_manifest, read_variables

NOTEBOOKS = {  # experiment -> claim notebook
    "charset_mismatch": "01_charset_mismatch.ipynb",
    "collation_cost": "02_collation_cost.ipynb",
    "insert_57_vs_80": "03_insert_57_vs_80.ipynb",
    "binlog_default": "04_binlog_default.ipynb",
}
SUMMARY = "00_summary.ipynb"
INVESTIGATIONS = {"why_slower": "05_why_slower.ipynb"}   # not claims: linked from the index
PUBLISHED_RUNS = "published_runs.json"   # data/: the shipped runs the summary reads by default
SETTINGS_SHOWN = ("version", "log_bin", "sync_binlog", "innodb_flush_log_at_trx_commit",
                  "binlog_format", "character_set_server", "collation_server",
                  "innodb_buffer_pool_size", "innodb_doublewrite", "performance_schema")


# -- narrative helpers used by the notebooks -------------------------------------------------

def claim_markdown(claim: Claim) -> str:
    figures = "\n".join(f"- {f.what}: **{_value(f.value)}** {f.unit}" + (f" ({f.note})" if f.note else "")
                        for f in claim.published)
    return (f"## {claim.id}: {claim.title}\n\n**Source:** {', '.join(claim.sources)} "
            f"(measured on {claim.source_target}).\n\n**Setup in the source:** {claim.setup}\n\n"
            f"**Published figures:**\n\n{figures}\n\n{claim.notes}")


def _value(value) -> str:
    return f"{value[0]:g}–{value[1]:g}" if isinstance(value, tuple) else f"{value:g}"


def method_markdown(run_dir: Path) -> str:
    m = read_manifest(run_dir)
    d = m["design"]
    host = m["provenance"]["host"]
    factors = ", ".join(f"`{c['id']}`" for c in m["conditions"])
    skipped = "".join(f"\n- **Not run:** {reason}" for reason in m.get("skipped_targets", {}).values())
    blocks = max(p["block"] for p in m["plan"]) + 1 if m["plan"] else 0
    packages = ", ".join(f"{k} {v}" for k, v in sorted(m["provenance"]["packages"].items()) if v)
    return (
        f"**Run** `{m['run_id']}` ({m['profile']} profile, {m['status']}), started {m['created_at']}.\n\n"
        f"- Conditions: {factors}\n"
        f"- Design: {d['repetitions']} repetitions per condition, each a freshly started server "
        f"process; {d['warmup']} unrecorded warm-up and {d['iterations']} measured iterations per "
        f"repetition; conditions in randomized complete blocks (up to {blocks} blocks, seed "
        f"{m['seed']}), never all-A-then-all-B.\n"
        f"- Host: {host['cpu_model']}, {host['cpu_count']} CPUs, {host['memory_gib']} GiB, kernel "
        f"{host['kernel']}, load average at start {host['loadavg']}.\n"
        f"- Code: commit `{(m['provenance']['git'] or {}).get('commit')}`"
        f"{' (uncommitted changes)' if (m['provenance']['git'] or {}).get('dirty') else ''}; "
        f"mysql-connector-python {m['provenance']['packages'].get('mysql-connector-python')} "
        f"({m['provenance']['connector_implementation']}); {m['provenance'].get('sysbench')}.\n"
        f"- Packages: {packages}; Python {host.get('python')}; {host.get('os')}.\n"
        f"- Built from run `{m['run_id']}`, results.csv sha256 "
        f"`{m.get('checksums', {}).get('results.csv', 'not yet: run incomplete')}`."
        f"{skipped}")


def settings_table(run_dir: Path) -> pd.DataFrame:
    """The settings each condition's servers reported after start (not what was asked for)."""
    rows = {}
    for record in read_jsonl(run_dir / "servers.jsonl"):
        if record["condition"] in rows:
            continue
        variables = read_variables(run_dir, record["variables"])
        rows[record["condition"]] = {"target": record["target"], "version": record["version"],
                                     **{k: variables.get(k) for k in SETTINGS_SHOWN[1:]},
                                     "log_bin": "ON" if record["log_bin"] else "OFF"}
    return pd.DataFrame.from_dict(rows, orient="index").sort_index()


def effects_view(table: pd.DataFrame) -> pd.DataFrame:
    cols = ["comparison", "target", "n_runs", "n_blocks", "pairing", "estimate", "ci_low", "ci_high",
            "confidence", "published_ratio", "p_family", "flagged_share", "verdict_label"]
    return table[[c for c in cols if c in table.columns]]


def verdict_markdown(table: pd.DataFrame, claim: Claim, run_dir: Path) -> str:
    m = read_manifest(run_dir)
    lines = [f"### Verdict for {claim.id} (profile `{m['profile']}`)\n"]
    for r in table.itertuples(index=False):
        if r.verdict == "not_tested":
            lines.append(f"- **{r.comparison}**: not tested. {r.verdict_note}")
            continue
        published = "" if pd.isna(r.published_ratio) else f"; published {r.published_ratio:g}"
        inside = ""
        if pd.notna(r.published_ratio) and pd.notna(r.published_in_ci):
            inside = " (inside the interval)" if bool(r.published_in_ci) else " (outside the interval)"
        lines.append(f"- **{r.comparison}** ({r.workload} {r.metric}): ratio {r.estimate:.3f} "
                     f"[{r.ci_low:.3f}, {r.ci_high:.3f}]{published}{inside}: "
                     f"**{r.verdict_label}**. {r.verdict_note}")
    if m["profile"] != "full":
        lines.append(f"\n*This is the `{m['profile']}` profile: fewer and shorter runs than the "
                     "`full` profile, and far fewer than a publication would need.*")
    return "\n".join(lines)


def write_summary(path: str | os.PathLike | None, run_dir: Path, table: pd.DataFrame, claim: Claim) -> None:
    """The side file the index is built from (scrapbook is unmaintained: plain JSON instead)."""
    if not path:
        return
    m = read_manifest(run_dir)
    payload = {"claim": claim.id, "title": claim.title, "run_id": m["run_id"], "profile": m["profile"],
               "experiment": m["experiment"], "created_at": m["created_at"],
               "host": m["provenance"]["host"], "git": m["provenance"]["git"],
               "checksums": m.get("checksums", {}),
               "rows": json.loads(table.to_json(orient="records"))}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload, indent=1, default=str))


def published_runs(root: Path | None = None) -> dict[str, str]:
    path = (root or project_root()) / "data" / PUBLISHED_RUNS
    return json.loads(path.read_text()) if path.exists() else {}


# -- building the reports --------------------------------------------------------------------

@dataclass(frozen=True)
class Built:
    experiment: str
    notebook: Path
    html: Path
    summary: dict


def secret_values(root: Path) -> list[str]:
    """Values of every password environment variable named by a params file, to keep out of output."""
    names = set()
    for path in sorted((root / "params").glob("*.yaml")):
        try:
            exp = params_mod.load(path, "quick")
        except ClaimlabError:
            continue
        names |= {t.password_env for t in exp.targets.values() if t.password_env}
    names |= {n for n in os.environ if n.startswith("CLAIMLAB_SECRET")}
    return [os.environ[n] for n in sorted(names) if os.environ.get(n)]


def scrub(paths: Iterable[Path], secrets: list[str]) -> list[Path]:
    """Replace any secret that reached an output file; returns the files that needed it."""
    touched = []
    for path in paths:
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        cleaned = text
        for secret in secrets:
            cleaned = cleaned.replace(secret, "[redacted]")
        if cleaned != text:
            path.write_text(cleaned)
            touched.append(path)
    return touched


def execute(notebook: str, out_dir: Path, parameters: dict, root: Path) -> Path:
    import papermill as pm
    from jupyter_client.manager import KernelManager
    out_dir.mkdir(parents=True, exist_ok=True)
    output = out_dir / notebook
    source = root / "notebooks" / notebook
    declared = pm.inspect_notebook(str(source))
    parameters = {k: v for k, v in parameters.items() if k in declared}   # e.g. cpu_evidence: C2, C4 only
    # The kernel talks over Unix sockets in a private directory, not loopback TCP: nothing else
    # on the machine can reach it, and ipykernel has no "unencrypted TCP" warning to print.
    with tempfile.TemporaryDirectory(prefix="claimlab-kernel-") as sockets:
        km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
        try:
            pm.execute_notebook(str(source), str(output), parameters=parameters, km=km,
                                cwd=str(root / "notebooks"), kernel_name="python3", progress_bar=False,
                                log_output=False, request_save_on_cell_execute=False)
        finally:
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    return output


def render_html(notebook: Path, show_code: bool = False) -> Path:
    """One self-contained HTML file: figures inline, no script fetched from a CDN."""
    import nbformat
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(template_name="claimlab",
                            extra_template_basedirs=[str(Path(__file__).parent / "templates")],
                            exclude_input=not show_code, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    nb = nbformat.read(notebook, as_version=4)
    # The injected-parameters cell is shown as code only when code is shown.
    body, _ = exporter.from_notebook_node(nb)
    out = notebook.with_suffix(".html")
    out.write_text(body)
    return out


def build(*, profile: str = "quick", run_ids: list[str] | None = None, out_dir: Path | None = None,
          show_code: bool = False, data_dir: Path | None = None, experiments: list[str] | None = None,
          figures_dir: Path | None = None, log=print) -> Path:
    """Run (or re-analyse) every claim notebook, then the summary, then the index."""
    root = project_root()
    out_dir = (out_dir or root / "reports").resolve()
    data_dir = (data_dir or raw_root(root)).resolve()
    figures_dir = (figures_dir or root / "figures").resolve()
    plan: dict[str, str | None] = {}
    if run_ids:
        from .store import find_run
        for run_id in run_ids:
            plan[read_manifest(find_run(run_id, data_dir))["experiment"]] = run_id
    else:
        plan = {name: None for name in (experiments or NOTEBOOKS)}
    built = []
    for experiment, run_id in plan.items():
        if experiment not in NOTEBOOKS:
            raise ClaimlabError(f"no notebook for experiment {experiment!r}")
        log(f"{experiment}: {'re-analysing ' + run_id if run_id else 'running the ' + profile + ' profile'}")
        summary_path = out_dir / f"{experiment}.summary.json"
        nb = execute(NOTEBOOKS[experiment], out_dir, {
            "profile": profile, "run_id": run_id, "data_dir": str(data_dir),
            "figures_dir": str(figures_dir), "summary_json": str(summary_path),
            "cpu_evidence": run_id is None}, root)   # re-rendering from data starts no server
        built.append(Built(experiment, nb, render_html(nb, show_code), json.loads(summary_path.read_text())))
    log("summary")
    summary_nb = execute(SUMMARY, out_dir, {
        "run_ids": [b.summary["run_id"] for b in built], "data_dir": str(data_dir),
        "figures_dir": str(figures_dir)}, root)
    summary_html = render_html(summary_nb, show_code)
    investigations = []
    if not run_ids and not experiments:
        for name, notebook in INVESTIGATIONS.items():
            log(f"{name}: running the {profile} profile")
            nb = execute(notebook, out_dir, {"profile": profile, "data_dir": str(data_dir),
                                             "figures_dir": str(figures_dir),
                                             "profile_dir": str(figures_dir / name / "profiles")}, root)
            investigations.append(render_html(nb, show_code))
    index = write_index(out_dir / "index.html", built, summary_html, investigations)
    leaked = scrub(out_dir.rglob("*"), secret_values(root))
    if leaked:
        log(f"warning: removed a secret from {len(leaked)} output file(s)")
    return index


def write_index(path: Path, built: list[Built], summary_html: Path, investigations: list[Path] = ()) -> Path:
    rows = []
    for b in built:
        s = b.summary
        for r in s["rows"]:
            ratio = ("—" if r.get("ci_low") is None else
                     f"{r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]")
            published = "—" if r.get("published_ratio") is None else f"{r['published_ratio']:g}"
            rows.append(
                f"<tr class='{html.escape(r['verdict'])}'><td><a href='{html.escape(b.html.name)}'>"
                f"{html.escape(s['claim'])}</a></td><td>{html.escape(r['comparison'])}</td>"
                f"<td>{html.escape(str(r.get('workload')))} {html.escape(str(r.get('metric')))}</td>"
                f"<td>{ratio}</td><td>{published}</td><td><b>{html.escape(r['verdict_label'])}</b></td>"
                f"<td>{html.escape(s['run_id'])} ({html.escape(s['profile'])})</td></tr>")
    first = built[0].summary if built else {}
    host = first.get("host", {})
    commit = (first.get("git") or {}).get("commit")
    generated = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    extra = "".join(f' Investigation: <a href="{html.escape(p.name)}">{html.escape(p.stem)}</a>.'
                    for p in investigations)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>claimlab: verdicts</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }}
td, th {{ border-bottom: 1px solid #ddd; padding: .4em .6em; text-align: left; }}
tr.supported b {{ color: #1b7837; }} tr.contradicted b {{ color: #b2182b; }} tr.inconclusive b {{ color: #666; }}
tr.not_tested {{ color: #999; }}
</style></head><body>
<h1>claimlab: published MySQL performance claims, re-tested</h1>
<p>Each row compares a treatment with a baseline; the ratio is treatment / baseline of the metric
with its 95% interval. <a href="{html.escape(summary_html.name)}">Summary with the forest plot</a>.
{extra}</p>
<table><thead><tr><th>claim</th><th>comparison</th><th>metric</th><th>measured ratio [95% CI]</th>
<th>published</th><th>verdict</th><th>run (profile)</th></tr></thead><tbody>
{''.join(rows)}
</tbody></table>
<p>Generated {generated}. Where: {html.escape(str(host.get('cpu_model')))}, {host.get('cpu_count')} CPUs,
{host.get('memory_gib')} GiB, kernel {html.escape(str(host.get('kernel')))}. Code commit
<code>{html.escape(str(commit))}</code>. Each claim's report lists its server versions and settings.</p>
</body></html>
"""
    path.write_text(page)
    return path
