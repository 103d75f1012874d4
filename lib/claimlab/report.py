"""Reports: the render phase of `claimlab report`. Execute the notebooks with papermill over
stored runs, render them with nbconvert, write an index.

The run phase (claimlab.campaign) measures first, in the command's process; here every notebook
reads run ids only and starts no server. The claim notebooks call the helpers below for their
tables; `render` turns executed notebooks into single-file HTML (figures embedded as
base64, no script loaded from the network) and `reports/index.html`, the verdict table.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import tempfile
import threading
import time
from concurrent.futures import Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd

from . import cards, method_text, page_style, wording
from . import params as params_mod
from .claims import Claim
from .errors import ClaimlabError, DataError, signals_raise
from .provenance import cpu_label
from .store import project_root, read_manifest

CLAIM_NOTEBOOK = "claim.ipynb"   # one notebook, parameterized by experiment; outputs named per claim
NOTEBOOKS = {  # experiment -> report name (the HTML file is NAME.html)
    "charset_mismatch": "C1_charset_mismatch",
    "collation_cost": "C2_collation_cost",
    "insert_57_vs_80": "C3_insert_57_vs_80",
    "binlog_default": "C4_binlog_default",
}
SUMMARY = "00_summary.ipynb"
# Not claims, linked from the index: notebook and the ablation it reads by default.
INVESTIGATIONS = {"why_slower": ("05_why_slower.ipynb", "seed004_hunt_mysql")}
INVESTIGATION_TITLES = {"05_why_slower": "why is MySQL 9.7's insert loop slower than with 5.7's values?"}
# A claim report's own ablation, shown from its newest stored run (or said not run): C3's, Yangsh888's toggles.
CLAIM_ABLATIONS = {"insert_57_vs_80": "seed004_toggles_mysql80"}
NOTEBOOK_ONLY = "notebook-only"   # cell tag: shown in JupyterLab, left out of the HTML report
PUBLISHED_RUNS = "published_runs.json"   # data/: the shipped runs the summary reads by default
EARLIER_RUNS = "earlier_runs.json"         # data/: earlier sessions' full runs, for the between-run spread


def write_summary(path: str | os.PathLike | None, run_dirs: list[Path], table: pd.DataFrame, claim: Claim) -> None:
    """The side file the index is built from (scrapbook is unmaintained: plain JSON instead);
    `table` has the verdict-table columns of cards.CARD_COLUMNS."""
    if not path:
        return
    manifests = [read_manifest(run_dir) for run_dir in run_dirs]
    m = manifests[0]
    payload = {"claim": claim.id, "title": claim.title, "run_ids": [x["run_id"] for x in manifests],
               "profile": m["profile"], "experiment": m["experiment"],
               "runs": [{"run_id": x["run_id"], "target": x.get("default_target"), "profile": x["profile"],
                         "status": x["status"], "server": method_text.run_server(run_dir),
                         "created_at": x["created_at"], "host": x["provenance"]["host"],
                         "git": x["provenance"]["git"], "checksums": x.get("checksums", {})}
                        for x, run_dir in zip(manifests, run_dirs)],
               "rows": json.loads(table.to_json(orient="records"))}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload, indent=1, default=str))


def verdict_rows(out_dir: Path, since: float = 0.0) -> list[dict]:
    """The verdict rows of the claim reports written to `out_dir` since `since` (a time.time()),
    in the index's order: what `claimlab report` prints when it is done."""
    rows = []
    for experiment in NOTEBOOKS:
        path = Path(out_dir) / f"{experiment}.summary.json"
        if path.exists() and path.stat().st_mtime >= since:
            rows += json.loads(path.read_text())["rows"]
    return rows


def published_runs(root: Path | None = None, file: str = PUBLISHED_RUNS) -> dict[str, list[str]]:
    """The shipped runs by experiment: one per server listed in data/published_runs.json (the
    newest session; `file=EARLIER_RUNS`: full runs of earlier sessions, kept for their spread)."""
    path = (root or project_root()) / "data" / file
    try:
        listed = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: unreadable ({exc}); it maps each experiment to its run ids") from None
    if not isinstance(listed, dict) or not all(
            isinstance(ids, str) or isinstance(ids, list) and all(isinstance(i, str) for i in ids)
            for ids in listed.values()):
        raise DataError(f"{path}: expected {{experiment: [run id, ...]}}, e.g. "
                        '{"binlog_default": ["20261127T210434Z-38a4da"]}')
    return {name: [ids] if isinstance(ids, str) else list(ids) for name, ids in listed.items()}


def shipped_run_ids(root: Path | None = None, file: str = PUBLISHED_RUNS) -> list[str]:
    return [run_id for ids in published_runs(root, file).values() for run_id in ids]


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


def execute(notebook: str, out_dir: Path, parameters: dict, root: Path, name: str | None = None) -> Path:
    """Run one notebook with papermill over stored runs (no notebook starts a server): an
    interrupt shuts its kernel down and unwinds."""
    import papermill as pm
    from jupyter_client.manager import KernelManager

    out_dir.mkdir(parents=True, exist_ok=True)
    output = out_dir / f"{name or Path(notebook).stem}.ipynb"
    source = root / "notebooks" / notebook
    declared = pm.inspect_notebook(str(source))
    parameters = {k: v for k, v in parameters.items() if k in declared}   # e.g. summary_json: claims only
    # The kernel talks over Unix sockets in a private directory, not loopback TCP: nothing else
    # on the machine can reach it, and ipykernel has no "unencrypted TCP" warning to print.
    with tempfile.TemporaryDirectory(prefix="claimlab-kernel-") as sockets:
        km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
        # papermill waits on the kernel in C (zmq), where a signal's Python handler never runs
        # until the notebook ends: it runs in a thread, and this one waits where signals land.
        # A daemon thread: after an interrupt it waits on the shut-down kernel for good, and
        # Python's exit would join a pool's thread (the command printed its error, then hung).
        executing: Future = Future()

        def notebook() -> None:
            try:
                executing.set_result(pm.execute_notebook(
                    str(source), str(output), parameters=parameters, km=km, cwd=str(root / "notebooks"),
                    kernel_name="python3", progress_bar=False, log_output=False,
                    request_save_on_cell_execute=False))
            except BaseException as exc:   # handed to the waiting thread, which raises it
                executing.set_exception(exc)
        threading.Thread(target=notebook, name="claimlab-notebook", daemon=True).start()
        try:
            with signals_raise():
                while not wait([executing], timeout=0.5).done:
                    pass
            executing.result()
        except pm.PapermillExecutionError as exc:   # the executed notebook keeps the traceback
            evalue = re.sub(r"\x1b\[[0-9;]*m", "", str(exc.evalue))
            said = " | ".join(line.strip() for line in evalue.splitlines() if line.strip())
            raise ClaimlabError(f"{output}: the notebook stopped at cell {exc.exec_count}: {exc.ename}: "
                                f"{said} (its traceback is in that notebook)") from None
        finally:
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    return output


def render_html(notebook: Path, show_code: bool = False) -> Path:
    """One self-contained HTML file: figures inline, no script fetched from a CDN."""
    import nbformat
    from nbconvert import HTMLExporter
    from traitlets.config import Config
    config = Config()   # a cell tagged notebook-only speaks to whoever runs the notebook, not to a reader
    config.TagRemovePreprocessor.enabled = True
    config.TagRemovePreprocessor.remove_cell_tags = {NOTEBOOK_ONLY}
    exporter = HTMLExporter(config=config, template_name="claimlab",
                            extra_template_basedirs=[str(Path(__file__).parent / "templates")],
                            exclude_input=not show_code, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    nb = nbformat.read(notebook, as_version=4)
    # The injected-parameters cell is shown as code only when code is shown.
    body, _ = exporter.from_notebook_node(nb)
    out = notebook.with_suffix(".html")
    out.write_text(body)
    return out


def render(runs, *, out_dir: Path | None = None, show_code: bool = False, data_dir: Path | None = None,
           figures_dir: Path | None = None, log=print) -> Path:
    """The render phase of `claimlab report`: every claim notebook over its stored runs and its
    ablation's (`runs`: a campaign.Runs), then the summary, the investigations and the index.
    Reads run ids only; no notebook starts a server."""
    root = project_root()
    out_dir = (out_dir or root / "reports").resolve()
    data_dir = data_dir.resolve() if data_dir else None
    figures_dir = (figures_dir or root / "figures").resolve()
    built = []
    for experiment, ids in runs.claims.items():
        if experiment not in NOTEBOOKS:
            raise ClaimlabError(f"no notebook for experiment {experiment!r}")
        log(f"{experiment}: rendering {' '.join(ids)}")
        began = time.monotonic()
        summary_path = out_dir / f"{experiment}.summary.json"
        nb = execute(CLAIM_NOTEBOOK, out_dir, {
            "experiment": experiment, "run_ids": list(ids), "data_dir": _text(data_dir),
            "figures_dir": str(figures_dir), "summary_json": str(summary_path),
            "ablation_run_id": runs.ablations.get(experiment)}, root, NOTEBOOKS[experiment])
        built.append(Built(experiment, nb, render_html(nb, show_code), json.loads(summary_path.read_text())))
        log(f"{experiment}: done in {time.monotonic() - began:.0f} s")
    log("summary")
    began = time.monotonic()
    summary_nb = execute(SUMMARY, out_dir, {
        "run_ids": [r for b in built for r in b.summary["run_ids"]], "data_dir": _text(data_dir),
        "figures_dir": str(figures_dir)}, root)
    summary_html = render_html(summary_nb, show_code)
    log(f"summary: done in {time.monotonic() - began:.0f} s")
    investigations = []
    for name, run_id in runs.investigations.items():
        if run_id is None:
            continue
        notebook, ablation_name = INVESTIGATIONS[name]
        log(f"{name}: rendering {run_id}")
        began = time.monotonic()
        nb = execute(notebook, out_dir, {"ablation_name": ablation_name, "run_id": run_id,
                                         "data_dir": _text(data_dir), "figures_dir": str(figures_dir)}, root)
        investigations.append(render_html(nb, show_code))
        log(f"{name}: done in {time.monotonic() - began:.0f} s")
    index = write_index(out_dir / "index.html", built, summary_html, investigations)
    leaked = scrub(out_dir.rglob("*"), secret_values(root))
    if leaked:
        log(f"warning: removed a secret from {len(leaked)} output file(s)")
    return index


def _text(path: Path | None) -> str | None:
    return str(path) if path else None


def write_index(path: Path, built: list[Built], summary_html: Path, investigations: list[Path] = ()) -> Path:
    """The page a reader opens first: a verdict card per comparison and server, then the runs
    (templates/pages/index.html.j2, autoescaped; the cards and tables come escaped from cards and wording)."""
    import jinja2

    from .claims import load_claims
    claims = load_claims(project_root() / "data" / "claims.yaml")
    sections, runs, rows = [], [], []
    for b in built:
        s = b.summary
        family = wording.claim_family(claims[s["claim"]]) if s["claim"] in claims else "mysql"
        sections.append({"href": b.html.name, "claim": s["claim"], "title": s["title"],
                         "cards": cards.cards_html(pd.DataFrame(s["rows"]), family)})
        rows += s["rows"]
        for r in s["runs"]:
            host = r.get("host", {})
            runs.append({"claim": s["claim"], "run": r["run_id"], "server": r.get("server") or r.get("target") or "",
                         "profile": r["profile"], "measured": r["created_at"][:16].replace("T", " "),
                         "host": f"{host.get('cpu_model')}, {host.get('cpu_count')} CPUs",
                         "commit": str((r.get("git") or {}).get("commit"))[:10]})
    env = jinja2.Environment(loader=jinja2.PackageLoader("claimlab", "templates/pages"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    page = env.get_template("index.html.j2").render(
        css=page_style.CSS, summary=summary_html.name, sections=sections,
        investigations=[{"href": p.name, "title": INVESTIGATION_TITLES.get(p.stem, p.stem)} for p in investigations],
        short_profiles=sorted({r["profile"] for r in runs} - {"full"}), slow_hours=cards.slow_hour_lines(rows),
        unfinished=[f"{b.summary['claim']}'s run {r['run_id']} ({r['status']})" for b in built
                    for r in b.summary["runs"] if r.get("status", "complete") != "complete"],
        runs=wording.table_html(pd.DataFrame(runs)),
        generated=dt.datetime.now(dt.timezone.utc).isoformat(timespec="minutes"))
    path.write_text(page)
    return path


# -- what the notebooks call ---------------------------------------------------------------------

@dataclass(frozen=True)
class Analysis:
    """Stored runs of one claim analysed together (runs as the top level): their measurements,
    the claim and the verdict table. `run_id` names them all, space-separated."""

    run_id: str
    path: Path               # the first run's directory (its manifest describes the design)
    results: pd.DataFrame
    claim: Claim
    table: pd.DataFrame
    notes: tuple[str, ...] = ()   # runs unfinished or unverified
    paths: tuple[Path, ...] = ()  # every run's directory, in run_id's order


def analyze_runs(run_ids: Iterable[str], data_root: Path | None = None, *, accept_modified: bool = False,
                 separately: bool = False, **options) -> list[Analysis]:
    """Verdict tables by claim: the runs of one claim are analysed together, runs as the top level
    (`separately`: one table per run), each with the claim's stopping rule. What `claimlab analyze`
    prints and the summary notebook draws (`options` go to stats.analyze)."""
    from . import stats
    from .claims import load_claims
    from .stopping import StopRule
    from .store import find_run, read_results
    claims = load_claims(project_root() / "data" / "claims.yaml")
    groups: dict[str, list] = {}
    seen: set[Path] = set()
    for run_id in run_ids:
        path = find_run(run_id, data_root)
        if path.resolve() in seen:   # named twice (by id and by path, say): one run, not two
            continue
        seen.add(path.resolve())
        results = read_results(path, accept_modified=accept_modified)
        if not len(results):
            raise ClaimlabError(f"{path}: the run holds no measurement ({read_manifest(path).get('status')}); "
                                "nothing to analyse")
        claim_id = str(results["claim"].iloc[0])
        if claim_id not in claims:
            raise ClaimlabError(f"{path}: data/claims.yaml has no claim {claim_id!r}")
        state = results.attrs.get("run_state", {})
        note = "" if state.get("verified", True) and state.get("status", "complete") == "complete" else \
            f"run {path.name} is {state.get('note')}"
        key = path.name if separately else claim_id
        manifest = read_manifest(path)
        groups.setdefault(key, []).append((path, results, StopRule.of_manifest(manifest), note,
                                           manifest.get("default_target")))
    out = []
    for runs in groups.values():
        claim = claims[str(runs[0][1]["claim"].iloc[0])]
        results = pd.concat([r for _, r, *_ in runs], ignore_index=True)
        names = " ".join(path.name for path, *_ in runs)
        table = stats.analyze(results, claim, stop_rule={path.name: rule for path, _, rule, *_ in runs}, **options)
        notes = (tuple(note for *_, note, _ in runs if note) + _hardware_note([path for path, *_ in runs])
                 + _untested_experiments(results, claim))
        # The target each row's runs were made with: a comparison whose levels start their own
        # servers has a target like "mysql57+mysql80", which `claimlab run --target` does not take.
        made_with = {path.name: str(t) for path, *_, t in runs if t}
        in_run = results.groupby("run_id")["target"].agg(lambda ts: set(ts.astype(str)))
        out.append(Analysis(names, runs[0][0], results, claim,
                            table.assign(run_id=names, run_target=[_run_target(t, in_run, made_with)
                                                                   for t in table["target"]]),
                            notes, tuple(path for path, *_ in runs)))
    return out


def _run_target(target, in_run: pd.Series, made_with: dict[str, str]) -> str:
    """The --target of the runs that hold most of a row's servers (its target's parts): the runs
    that measured it, when runs of several targets are analysed together."""
    parts = set(str(target).split("+"))
    held = {run: len(targets & parts) for run, targets in in_run.items() if run in made_with}
    most = max(held.values(), default=0)
    return " ".join(sorted({made_with[run] for run, n in held.items() if n == most and n}))


def _untested_experiments(results: pd.DataFrame, claim: Claim) -> tuple[str, ...]:
    """Comparisons pick their rows by experiment name: a run of a renamed params file (a copy,
    `mine_collation_cost`) matches none, and every comparison read "not tested" without a word."""
    named = sorted({c.experiment for c in claim.comparisons})
    return tuple(f"the runs of experiment {e!r} are tested by none of {claim.id}'s comparisons, which name "
                 f"{', '.join(map(repr, named))} (data/claims.yaml); name the params file as they do"
                 for e in sorted(set(results["experiment"].astype(str))) if e not in named)


def _hardware_note(paths: list[Path]) -> tuple[str, ...]:
    """A note when one claim's runs ran on different processors: their spread then includes the
    hardware's (a time ratio can differ by processor: C2 on MySQL read 1.82 on one AMD EPYC and
    1.45 on another), and runs analysed together widen the interval by it."""
    cpus: dict[str, list[str]] = {}
    for path in paths:
        cpus.setdefault(cpu_label(read_manifest(path)["provenance"]["host"]), []).append(path.name)
    if len(cpus) < 2:
        return ()
    return ("runs on processors that differ or were not recorded: "
            + "; ".join(f"{cpu}: {len(ids)} run{'s' if len(ids) > 1 else ''}" for cpu, ids in cpus.items())
            + " (the spread between runs may include the hardware's)",)


def runs_markdown(analyses: list[Analysis]) -> str:
    """Which runs a summary shows, said from the runs themselves (shipped or not, profile, when)."""
    shipped = set(shipped_run_ids())
    lines, shown = [], set()
    for a in analyses:
        for path in a.paths:
            run_id = path.name
            shown.add(run_id)
            m = read_manifest(path)
            origin = "shipped" if run_id in shipped else "a run of this build, not a shipped one"
            when = str(m.get("created_at", ""))[:16].replace("T", " ")
            lines.append(f"- **{a.claim.id}** `{run_id}` on {method_text.run_server(path)}: {origin}, "
                         f"{m.get('profile')} profile, measured {when} UTC on {cpu_label(m['provenance']['host'])}")
    every = "the published runs, one per claim and server, that ship with the repository" if shown <= shipped else \
        "runs that are not all shipped ones: verdicts can differ from the shipped full runs"
    slow = cards.slow_hour_lines([row for a in analyses for row in a.table.to_dict("records")])
    slow_text = "\n\n**Measured in a slow hour:**\n\n" + "\n".join(f"- {line}" for line in slow) if slow else ""
    return f"This summary reads {every}:\n\n" + "\n".join(lines) + slow_text


# -- what the claim notebook calls ---------------------------------------------------------------

def resolve_runs(experiment: str, run_ids: list[str] | None, *, data_root: Path | None) -> list[Path]:
    """The stored runs a claim report reads: `run_ids` if given, else the shipped runs of
    data/published_runs.json; each must be a run of the experiment's claim."""
    from .store import find_run
    root = project_root()
    if not run_ids:
        shipped = published_runs(root)
        if experiment not in shipped:
            raise ClaimlabError(f"data/{PUBLISHED_RUNS}: no shipped run for {experiment!r}; pass run_ids")
        run_ids = shipped[experiment]
    paths = []
    for run_id in run_ids:
        try:
            paths.append(find_run(run_id, data_root))
        except ClaimlabError:
            if data_root is None:
                raise
            paths.append(find_run(run_id))   # a shipped run, read beside new runs in data_root
    claim = params_mod.load(params_mod.find(experiment, root / "params"), "quick").claim
    for path in paths:
        theirs = read_manifest(path)
        if theirs["claim"] != claim:
            raise ClaimlabError(f"run_ids: {path.name} is a run of {theirs['experiment']} ({theirs['claim']}), "
                                f"not of {experiment} ({claim}): name runs of this claim, or set experiment")
    return paths


def scope_markdown(experiment: str, servers: Iterable[str] = ()) -> str:
    """The claim report's question and what it does and does not test (templates/scope/), with
    `{servers}` replaced by the servers that ran ("MariaDB 10.11.19 and MySQL 9.7.4")."""
    path = Path(__file__).parent / "templates" / "scope" / f"{experiment}.md"
    names = [s for s in dict.fromkeys(servers) if s]
    said = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names) or "the servers below"
    return path.read_text().replace("{servers}", said) if path.exists() else ""


def costs_by_server(results: pd.DataFrame) -> pd.DataFrame:
    """stats.cost_table per server (target), with the server's name: one server's costs are not
    averaged with another's."""
    from . import stats
    names = wording.server_names(results)
    parts = [stats.cost_table(part).assign(server=names[target])
             for target, part in results.groupby("target", sort=True)]
    return pd.concat(parts, ignore_index=True) if parts else stats.cost_table(results)


def diagnostics_markdown(diag) -> str:
    """Only what a reader should act on: flagged drift or warm-up rows, outlier counts, contention."""
    lines = [f"- Contention: {diag.contention}."]
    for name, frame in (("drift", diag.drift), ("warm-up", diag.warmup)):
        if len(frame) and "flagged" in frame.columns:
            flagged = frame[frame["flagged"].astype(bool)]
            named = sorted({wording.level_words(c) for c in flagged["condition"]})
            lines.append(f"- {name.capitalize()}: {len(flagged)} of {len(frame)} condition(s) flagged"
                         + (": " + ", ".join(named) if named else "") + ".")
    where = sorted({wording.level_words(c) for c in diag.outliers["condition"]}) if len(diag.outliers) else []
    lines.append(f"- Outliers (listed, not dropped): {len(diag.outliers)} measurement(s)"
                 + (": " + ", ".join(where) if where else "") + ".")
    return "\n".join(lines)
