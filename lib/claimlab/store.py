"""Raw results: append-only, one directory per run, never overwritten. New runs go to runs/
(git-ignored); the shipped runs live in data/raw; readers look in both.

    runs/<experiment>/<run-id>/  (or data/raw/<experiment>/<run-id>/)
        manifest.json     params as resolved, provenance, plan, status, checksums (format_version)
                          (RunManifest; results rows are MeasurementRecords, one row per Metric)
        results.csv       one row per metric of each completed measurement (tidy, long);
                          results.parquet instead in a packed run (pack.py), read the same
        intervals.csv     sysbench's per-interval series
        servers.jsonl     one record per server start: version, effective settings, load average
        variables/*.json  SHOW GLOBAL VARIABLES per configuration, stored once by content hash
        events.jsonl      failures, retries, interruptions, sequential-stopping decisions

Every line is written with a single `write` on a file opened with O_APPEND and then fsynced
(writer.py, the one module that writes a run), so a crash can at worst leave a torn last line;
readers here detect it and `RunStore.open_run` repairs it (the torn measurement is not complete,
so it is measured again on resume). Derived tables are regenerated.

Format 2 (format 1 runs stay readable): in a paired design the within-server conditions measured in
one server start share `seq`, `repetition` (the block, one server start per between-server
condition) and `attempt` (numbered on across resumes, so two server processes never share it);
`iteration` is the round, in which each of them is measured once in a recorded random order.
Every measurement carries the speed witness's `probe_before_s` and `probe_after_s`; checksums
cover `variables/*.json` too.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import DataError
from .records import RunManifest

if TYPE_CHECKING:   # pandas loads on the first read: the command line's refusals need not wait for it
    import pandas as pd

CHECKSUMMED = ("results.csv", "intervals.csv", "servers.jsonl", "events.jsonl")
RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")
# What identifies one measured value: a second row with the same key is a second writer's
MEASUREMENT_KEY = ["condition", "workload", "repetition", "iteration", "metric"]


def project_root(start: Path | None = None) -> Path:
    """The checkout holding params/ and data/ (so notebooks find it from notebooks/): the one around
    the current directory, else the one claimlab runs from (outside a checkout, `claimlab runs`
    said "no stored runs" and `run` wrote to ./runs)."""
    if os.environ.get("CLAIMLAB_ROOT"):
        return Path(os.environ["CLAIMLAB_ROOT"])
    here = (start or Path.cwd()).resolve()
    installed = Path(__file__).resolve().parents[2]   # the checkout this package was installed from
    for candidate in (here, *here.parents, installed):
        if (candidate / "params").is_dir() and (candidate / "lib" / "claimlab").is_dir():
            return candidate
    return here


def raw_root(root: Path | None = None) -> Path:
    """The shipped runs (tracked by git; the reports' published runs)."""
    return (root or project_root()) / "data" / "raw"


def runs_root(root: Path | None = None) -> Path:
    """Where new runs go: runs/ of the checkout, ignored by git, so measuring leaves `git status`
    clean. Readers look here first, then in the shipped data/raw (`run_roots`)."""
    return (root or project_root()) / "runs"


def run_roots(root: Path | None = None) -> tuple[Path, Path]:
    return runs_root(root), raw_root(root)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checksums(path: Path) -> dict[str, str]:
    """Every data file of a run, server variables included (they are evidence too)."""
    names = [n for n in CHECKSUMMED if (path / n).exists()] + variables_files(path)
    return {name: sha256_file(path / name) for name in names}


def variables_files(path: Path) -> list[str]:
    """Server variables are checksummed like the data files, one file per server start."""
    return sorted(f"variables/{p.name}" for p in (path / "variables").glob("*.json"))


def load_manifest(path: str | os.PathLike) -> RunManifest:
    path = Path(path)   # a notebook may pass the text of a path
    try:
        data = json.loads((path / "manifest.json").read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: no manifest.json; is this a claimlab run directory?") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}/manifest.json: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}/manifest.json: not a JSON object")
    try:
        return RunManifest.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{path}/manifest.json: {exc}") from None


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest as a plain mapping (notebooks and reports read it by key)."""
    return load_manifest(path).as_dict()


@dataclass(frozen=True)
class RunState:
    """Whether a run's data can be trusted as recorded: finished, and its files as checksummed."""

    status: str
    verified: bool
    changed: tuple[str, ...]

    @property
    def refused(self) -> bool:
        """Edited after the run, or ended without checksums (every run that ends writes them):
        refused unless a reader accepts modified data."""
        return bool(self.changed) or (not self.verified and self.status != "running")

    @property
    def note(self) -> str:
        if self.changed:
            return f"modified after the run: {', '.join(self.changed)}"
        if self.status == "running":
            return "unfinished (still running or crashed): no checksums, unverified"
        if self.status != "complete":
            return f"{self.status}: incomplete data" + ("" if self.verified else ", unverified")
        return "complete, verified" if self.verified else "complete, unverified (no checksums)"


def run_state(path: str | os.PathLike) -> RunState:
    path = Path(path)
    manifest = load_manifest(path)
    if not manifest.checksums:
        return RunState(manifest.status, False, ())
    expected, now_ = manifest.checksums, checksums(path)
    if "packed" in manifest.extra:   # Parquet files stand in for the CSVs they replaced
        from .pack import packed_checksums
        expected, now_ = packed_checksums(path, manifest, expected, now_)
    names = set(expected)
    if manifest.format_version >= 2:   # format 1 did not checksum variables/: files added since count
        names |= now_.keys()
    changed = tuple(sorted(n for n in names if expected.get(n) != now_.get(n)))
    return RunState(manifest.status, not changed, changed)


def read_csv(path: Path) -> pd.DataFrame:
    """A run's CSV, refusing a torn last line: pandas would read it as a short, valid row."""
    import pandas as pd
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: missing; is this a whole claimlab run directory?") from None
    if data and not data.endswith(b"\n"):
        run = path.parent
        raise DataError(f"{path}: the last line is torn; if the run crashed mid-write, `claimlab run "
                        f"{run.parent.name} --resume {run.name}` repairs it (a run that ended has no torn "
                        "line: this one was damaged after)")
    try:
        return pd.read_csv(io.BytesIO(data), dtype={"condition": str, "server_version": str})
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataError(f"{path}: unreadable CSV: {exc}") from None


def find_run(run_id: str, root: str | os.PathLike | None = None) -> Path:
    """A run directory from its id (or a path to it), under `root` or else under runs/ and data/raw."""
    if Path(run_id).is_dir() and (Path(run_id) / "manifest.json").exists():
        return Path(run_id)
    if not RUN_ID_RE.fullmatch(run_id):   # a glob ('*', '2026*') would silently pick one run
        raise DataError(f"{run_id[:80]!r} is not a run id (letters, digits, '-', '_', '.'; no "
                        "wildcards); `claimlab runs` lists the stored runs")
    bases = [Path(root)] if root else run_roots()
    matches = [m for base in bases for m in sorted(base.glob(f"*/{run_id}"))]
    if not matches:
        raise DataError(f"no run {run_id!r} under {' or '.join(map(str, bases))}; "
                        f"{experiment_folder_hint(bases[0]) or '`claimlab runs` lists the stored runs'}")
    return matches[0]


def experiment_folder_hint(root: Path) -> str:
    """Runs sit at ROOT/<experiment>/<run id>/: a --data naming one experiment's folder finds
    none, and says so."""
    return f"{root} holds runs itself: name the folder above it, --data {root.parent}" if (
        Path(root).is_dir() and any(Path(root).glob("*/manifest.json"))) else ""


def list_runs(root: str | os.PathLike | None = None, unreadable: list[str] | None = None) -> list[dict]:
    """Every readable run under `root`, or else under runs/ and data/raw; what could not be read
    goes to `unreadable`, one message each, for the caller to say."""
    out = []
    bases = [Path(root)] if root else run_roots()
    for manifest_path in [m for base in bases for m in sorted(base.glob("*/*/manifest.json"))]:
        try:
            m = read_manifest(manifest_path.parent)
        except DataError as exc:
            if unreadable is not None:
                unreadable.append(str(exc))
            continue
        out.append({"run_id": m["run_id"], "experiment": m.get("experiment"), "claim": m.get("claim"),
                    "profile": m.get("profile"), "status": m.get("status"),
                    "created_at": m.get("created_at"), "host": host_label(m.get("provenance") or {}),
                    "path": str(manifest_path.parent)})
    return out


def host_label(provenance: dict) -> str:
    """Where a run was measured, in one cell: the worker's name for a run made on a cluster
    ("local" otherwise), processor model, cores, kernel and the server builds it started."""
    host = provenance.get("host") or {}
    parts = [host.get("worker_name") or "local", host.get("cpu_model") or "unknown CPU",
             f"{host.get('cpu_count')} cores", f"kernel {host.get('kernel')}", *host.get("server_builds", [])]
    return ", ".join(str(p) for p in parts)


def verify(path: str | os.PathLike, accept_modified: bool = False) -> list[str]:
    """Files whose checksum no longer matches the manifest (edited after the run)."""
    return list(_verified(path, accept_modified).changed)


def _verified(path: str | os.PathLike, accept_modified: bool) -> RunState:
    state = run_state(path)
    if state.changed and not accept_modified:
        raise DataError(f"{path}: {', '.join(state.changed)} changed after the run (checksum mismatch); "
                        "pass --accept-modified to analyse it anyway")
    if state.refused and not accept_modified:
        raise DataError(f"{path}: the run ended ({state.status}) but its manifest holds no checksums, so "
                        "its files cannot be verified; pass --accept-modified to analyse it anyway")
    return state


def read_results(path: str | os.PathLike, accept_modified: bool = False) -> pd.DataFrame:
    """One run's results. `df.attrs["run_state"]` says whether they are finished and verified:
    a run still `running` (or crashed) has no checksums yet, and its analysis must say so."""
    path = Path(path)
    state = _verified(path, accept_modified)   # once: checksumming a run reads all of it
    manifest = load_manifest(path)
    df = _read_table(path, "results.csv")
    if list(df.columns) != list(manifest.columns):
        raise DataError(f"{path}/results.csv: header does not match the manifest's columns")
    for col in ["condition", "target", "workload", "metric", "unit", *manifest.factors]:
        df[col] = df[col].astype(str)
    df["contention"] = df["contention"].astype(str).str.lower().isin(["true", "1"])
    _refuse_duplicates(path, df)
    df.attrs["run_state"] = {"status": state.status, "verified": state.verified, "note": state.note}
    return df


def _refuse_duplicates(path: Path, df: pd.DataFrame) -> None:
    """Two writers of one run (a resume started while the run was still alive, before the run
    kept a writer's lock) stored measurements twice: analysed, each would count twice."""
    twice = df[df.duplicated(MEASUREMENT_KEY, keep="first")]
    if len(twice):
        keys = twice.drop_duplicates(MEASUREMENT_KEY[:-1])
        first = keys.iloc[0]
        raise DataError(f"{path}/results.csv: {len(keys)} measurement{'s' if len(keys) > 1 else ''} stored "
                        f"twice (e.g. {first['condition']} {first['workload']} repetition {first['repetition']} "
                        f"iteration {first['iteration']}): two processes wrote this run; it cannot be analysed "
                        "as it is")


def read_intervals(path: str | os.PathLike) -> pd.DataFrame:
    return _read_table(Path(path), "intervals.csv")


def _read_table(path: Path, name: str) -> pd.DataFrame:
    """A finished run's table, from Parquet when the run was packed (pack.py), else from its CSV."""
    from .pack import read_table
    return read_table(path, name)


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}: line {number} is not JSON ({exc.msg})") from None
    return records


def read_variables(path: str | os.PathLike, sha: str) -> dict[str, str]:
    return json.loads((Path(path) / "variables" / f"{sha}.json").read_text())
