"""Raw results: append-only, one directory per run, never overwritten. New runs go to runs/
(git-ignored); the shipped runs live in data/raw; readers look in both.

    runs/<experiment>/<run-id>/  (or data/raw/<experiment>/<run-id>/)
        manifest.json     params as resolved, provenance, plan, status, checksums (format_version)
        results.csv       one row per metric of each completed measurement (tidy, long)
        intervals.csv     sysbench's per-interval series
        servers.jsonl     one record per server start: version, effective settings, load average
        variables/*.json  SHOW GLOBAL VARIABLES per configuration, stored once by content hash
        events.jsonl      failures, retries, interruptions, sequential-stopping decisions

Every line is written with a single `write` on a file opened with O_APPEND and then fsynced, so a
crash can at worst leave a torn last line; readers detect it and `open_run` repairs it (the torn
measurement is not complete, so it is measured again on resume). Derived tables are regenerated.
"""

from __future__ import annotations

import csv
import datetime as dt
import errno
import hashlib
import io
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from .errors import DataError

FORMAT_VERSION = 1
BASE_COLUMNS = ("run_id", "claim", "experiment", "condition")
TAIL_COLUMNS = ("target", "server_version", "workload", "repetition", "iteration", "seq", "attempt",
                "metric", "value", "unit", "started_at", "ended_at", "contention")
INTERVAL_COLUMNS = ("run_id", "condition", "workload", "repetition", "iteration", "seq", "t_s",
                    "threads", "tps", "qps", "latency_p95_ms", "errors_per_s", "reconnects_per_s")
CHECKSUMMED = ("results.csv", "intervals.csv", "servers.jsonl", "events.jsonl")


def project_root(start: Path | None = None) -> Path:
    """The checkout holding params/ and data/ (so notebooks find it from notebooks/)."""
    if os.environ.get("CLAIMLAB_ROOT"):
        return Path(os.environ["CLAIMLAB_ROOT"])
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
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


def new_run_id() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def _append(path: Path, text: str) -> None:
    """Append whole lines or nothing: on a short or failed write (disk full, read-only, quota) the
    file is cut back to where it was, so it stays valid and the measurement counts as not done."""
    data = text.encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DataError(f"{path}: cannot open for writing: {exc.strerror}") from None
    try:
        start = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes)")
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass   # the reader still detects a torn tail, and --resume repairs it
            raise DataError(f"{path}: cannot write: {exc.strerror}; what was measured before is "
                            "intact: free space or fix permissions, then `claimlab run ... --resume`") from None
    finally:
        os.close(fd)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _csv_line(values: Iterable[Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class RunStore:
    """Writes one run's files. Created once; reopened (never recreated) to resume."""

    path: Path
    columns: tuple[str, ...]

    @classmethod
    def create(cls, root: Path, experiment: str, factors: Iterable[str], manifest: dict,
               run_id: str | None = None) -> "RunStore":
        run_id = run_id or new_run_id()
        path = root / experiment / run_id
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir()   # fails if it exists: a run directory is never reused
        columns = BASE_COLUMNS + tuple(factors) + TAIL_COLUMNS
        store = cls(path, columns)
        manifest = dict(manifest, format_version=FORMAT_VERSION, run_id=run_id, columns=list(columns),
                        status="running", created_at=now())
        store.write_manifest(manifest)
        _append(path / "results.csv", _csv_line(columns))
        _append(path / "intervals.csv", _csv_line(INTERVAL_COLUMNS))
        return store

    @classmethod
    def open_run(cls, path: Path) -> "RunStore":
        manifest = read_manifest(path)
        store = cls(path, tuple(manifest["columns"]))
        for name in ("results.csv", "intervals.csv", "servers.jsonl", "events.jsonl"):
            torn = _repair_torn_tail(path / name)
            if torn:
                store.event("repaired", file=name, dropped_bytes=torn)
        return store

    @property
    def run_id(self) -> str:
        return self.path.name

    def manifest(self) -> dict:
        return read_manifest(self.path)

    def write_manifest(self, manifest: dict) -> None:
        _write_atomic(self.path / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True,
                                                              default=str) + "\n")

    def update_manifest(self, **changes) -> None:
        self.write_manifest(self.manifest() | changes)

    def append_measurement(self, rows: list[dict], intervals: list[dict] = ()) -> None:
        """All metrics of one measurement in one write: a measurement is stored whole or not at all."""
        missing = [c for c in self.columns if c not in rows[0]] if rows else []
        if missing:
            raise DataError(f"{self.path}: measurement lacks columns {missing}")
        if intervals:
            _append(self.path / "intervals.csv",
                    "".join(_csv_line(r[c] for c in INTERVAL_COLUMNS) for r in intervals))
        _append(self.path / "results.csv", "".join(_csv_line(r[c] for c in self.columns) for r in rows))

    def record_server(self, record: dict, variables: dict[str, str]) -> str:
        text = json.dumps(variables, indent=0, sort_keys=True)
        sha = hashlib.sha256(text.encode()).hexdigest()[:16]
        vdir = self.path / "variables"
        vdir.mkdir(exist_ok=True)
        if not (vdir / f"{sha}.json").exists():
            _write_atomic(vdir / f"{sha}.json", text + "\n")
        _append(self.path / "servers.jsonl", json.dumps(record | {"variables": sha}, sort_keys=True,
                                                        default=str) + "\n")
        return sha

    def event(self, kind: str, **fields) -> None:
        _append(self.path / "events.jsonl", json.dumps({"at": now(), "event": kind, **fields},
                                                       sort_keys=True, default=str) + "\n")

    def completed(self) -> set[tuple[str, str, int, int]]:
        """(condition, workload, repetition, iteration) of every stored measurement."""
        df = _read_csv(self.path / "results.csv")
        return set(zip(df["condition"], df["workload"], df["repetition"].astype(int),
                       df["iteration"].astype(int)))

    def finish(self, status: str, **extra) -> None:
        checksums = {name: sha256_file(self.path / name) for name in CHECKSUMMED
                     if (self.path / name).exists()}
        self.update_manifest(status=status, finished_at=now(), checksums=checksums, **extra)


def read_manifest(path: Path) -> dict:
    try:
        manifest = json.loads((path / "manifest.json").read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: no manifest.json; is this a claimlab run directory?") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}/manifest.json: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if manifest.get("format_version") != FORMAT_VERSION:
        raise DataError(f"{path}/manifest.json: format_version {manifest.get('format_version')!r} "
                        f"is not {FORMAT_VERSION}; use the claimlab version that wrote it")
    return manifest


def _repair_torn_tail(path: Path) -> int:
    """Cut an incomplete last line (a crash mid-write). Returns the bytes removed."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with open(path, "r+b") as fh:
        fh.truncate(keep)
    return len(data) - keep


def _read_csv(path: Path) -> pd.DataFrame:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        raise DataError(f"{path}: the last line is torn (a crash mid-write?); "
                        "`claimlab run --resume` repairs it")
    try:
        return pd.read_csv(io.BytesIO(data), dtype={"condition": str, "server_version": str})
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataError(f"{path}: unreadable CSV: {exc}") from None


def find_run(run_id: str, root: Path | None = None) -> Path:
    """A run directory from its id (or a path to it), under `root` or else under runs/ and data/raw."""
    if Path(run_id).is_dir() and (Path(run_id) / "manifest.json").exists():
        return Path(run_id)
    bases = [root] if root else run_roots()
    matches = [m for base in bases for m in sorted(base.glob(f"*/{run_id}"))]
    if not matches:
        raise DataError(f"no run {run_id!r} under {' or '.join(map(str, bases))}; "
                        "`claimlab runs` lists the stored runs")
    return matches[0]


def list_runs(root: Path | None = None) -> list[dict]:
    """Every readable run under `root`, or else under runs/ and data/raw."""
    out = []
    bases = [root] if root else run_roots()
    for manifest_path in [m for base in bases for m in sorted(base.glob("*/*/manifest.json"))]:
        try:
            m = read_manifest(manifest_path.parent)
        except DataError:
            continue
        out.append({"run_id": m["run_id"], "experiment": m.get("experiment"), "claim": m.get("claim"),
                    "profile": m.get("profile"), "status": m.get("status"),
                    "created_at": m.get("created_at"), "path": str(manifest_path.parent)})
    return out


def verify(path: Path, accept_modified: bool = False) -> list[str]:
    """Files whose checksum no longer matches the manifest (edited after the run)."""
    manifest = read_manifest(path)
    changed = [name for name, digest in manifest.get("checksums", {}).items()
               if not (path / name).exists() or sha256_file(path / name) != digest]
    if changed and not accept_modified:
        raise DataError(f"{path}: {', '.join(changed)} changed after the run (checksum mismatch); "
                        "pass --accept-modified to analyse it anyway")
    return changed


def read_results(path: Path, accept_modified: bool = False) -> pd.DataFrame:
    verify(path, accept_modified)
    manifest = read_manifest(path)
    df = _read_csv(path / "results.csv")
    if list(df.columns) != manifest["columns"]:
        raise DataError(f"{path}/results.csv: header does not match the manifest's columns")
    factors = manifest.get("factors", [])
    for col in ["condition", "target", "workload", "metric", "unit", *factors]:
        df[col] = df[col].astype(str)
    df["contention"] = df["contention"].astype(str).str.lower().isin(["true", "1"])
    return df


def read_intervals(path: Path) -> pd.DataFrame:
    return _read_csv(path / "intervals.csv")


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def read_variables(path: Path, sha: str) -> dict[str, str]:
    return json.loads((path / "variables" / f"{sha}.json").read_text())
