"""Packing a finished run: its large tables stored as zstd-compressed Parquet instead of CSV.

Shipped runs are kept in the repository for good, and their results.csv is most of their weight:
a columnar, compressed copy is several times smaller and reads faster. The store reads a packed
run as it reads a new one (`read_table`), so nothing downstream knows the difference.

What a pack adds to manifest.json, beside the untouched `checksums` written when the run ended
(the CSV's sha256 stays the record of what was measured):

    "packed": {"format_version": 1, "packed_at": "...",
               "tables": {"results.csv": {"file": "results.parquet", "sha256": "<the Parquet's>",
                                          "csv_sha256": "<the CSV's>", "rows": 1234,
                                          "csv_bytes": 567890}}}

Packing never changes a measured value: the Parquet file is read back and compared with the
CSV's frame (columns, dtypes, every value bit for bit) before the CSV goes. Every step is atomic
(temporary file, fsync, rename), in an order that leaves the run readable and verified whatever
the point at which it stops: Parquet files in place (not yet referenced), then the manifest that
references them, then the CSVs removed.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import DataError
from .records import RunManifest, now
from .store import find_run, load_manifest, project_root, raw_root, read_csv, run_state, sha256_file
from .writer import RunStore, write_atomic

if TYPE_CHECKING:
    import pandas as pd

PACK_FORMAT_VERSION = 1
READABLE_PACK_VERSIONS = (1,)
# The tables a pack may store as Parquet: results.csv always (it is the bulk of a run), the
# others only when large; a header-only intervals.csv would grow. JSONL files (servers, events)
# stay: they are nested records of a few kilobytes, read as such.
ALWAYS_PACKED = ("results.csv",)
PACKABLE = ("results.csv", "intervals.csv")
MIN_PACK_BYTES = 64 * 1024
COMPRESSION = "zstd"


class PackError(DataError):
    """A run cannot be packed, or its pack is not what its manifest says."""


class NotPackable(PackError):
    """The run is not complete and verified: packing it would freeze data still open to change."""


class AlreadyPacked(PackError):
    """The run is packed already: packing twice would replace the record of the first pack."""


class PackMismatch(PackError):
    """The Parquet read back differs from the CSV: the CSV is kept and the pack abandoned."""


def packed_tables(manifest: RunManifest) -> dict[str, dict]:
    """{CSV name: its pack entry} of a packed run; {} for a run never packed."""
    packed = manifest.extra.get("packed")
    if packed is None:
        return {}
    if not isinstance(packed, dict) or packed.get("format_version") not in READABLE_PACK_VERSIONS:
        version = packed.get("format_version") if isinstance(packed, dict) else packed
        raise DataError(f"{manifest.run_id}/manifest.json: packed.format_version {version!r} is not one of "
                        f"{READABLE_PACK_VERSIONS}; use the claimlab version that packed it")
    return packed["tables"]


def read_table(run_dir: str | os.PathLike, name: str) -> pd.DataFrame:
    """A run's table by its CSV name: from the Parquet file when the run is packed, else the CSV."""
    run_dir = Path(run_dir)
    entry = packed_tables(load_manifest(run_dir)).get(name)
    if entry is None:
        return read_csv(run_dir / name)
    return _read_parquet(run_dir / entry["file"])


def packed_checksums(run_dir: Path, manifest: RunManifest, expected: dict[str, str],
                     found: dict[str, str]) -> tuple[dict[str, str], dict[str, str | None]]:
    """What `run_state` compares for a packed run: each packed CSV's checksum stands for itself
    only through the Parquet file that replaced it. A CSV left beside its Parquet by a pack cut
    short after the manifest was written is the same data (its sha256 says so) and no change."""
    expected, found = dict(expected), dict(found)
    for name, entry in packed_tables(manifest).items():
        if expected.get(name) == entry["csv_sha256"]:
            del expected[name]   # else it stays, and the manifest's two records disagree: changed
        if found.get(name) == entry["csv_sha256"]:
            del found[name]
        expected[entry["file"]] = entry["sha256"]
        parquet = run_dir / entry["file"]
        found[entry["file"]] = sha256_file(parquet) if parquet.exists() else None
    return expected, found


def pack(run_dir: str | os.PathLike) -> dict:
    """Pack a complete, verified run in place; returns the manifest's new `packed` entry."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    if "packed" in manifest.extra:
        raise AlreadyPacked(f"{run_dir}: already packed (manifest.json has `packed`)")
    _check_packable(run_dir, manifest)
    names = [n for n in PACKABLE if n in manifest.checksums and (run_dir / n).exists()
             and (n in ALWAYS_PACKED or (run_dir / n).stat().st_size >= MIN_PACK_BYTES)]
    for stale in run_dir.glob(".*.parquet.*.tmp"):   # a pack killed before its renames
        stale.unlink()

    tables, placed, temps = {}, [], []
    try:
        for name in names:
            frame = read_csv(run_dir / name)
            parquet = Path(name).with_suffix(".parquet").name
            tmp = run_dir / f".{parquet}.{os.getpid()}.tmp"
            temps.append(tmp)
            _write_parquet(frame, tmp)
            difference = frame_difference(frame, _read_parquet(tmp))
            if difference:
                raise PackMismatch(f"{run_dir / name}: the Parquet read back differs ({difference}); "
                                   "the CSV is kept")
            tables[name] = {"file": parquet, "sha256": sha256_file(tmp), "csv_sha256": manifest.checksums[name],
                            "rows": len(frame), "csv_bytes": (run_dir / name).stat().st_size}
        for name in names:
            final = run_dir / tables[name]["file"]
            os.replace(temps[0], final)
            placed.append(final)
            temps.pop(0)
        _fsync_dir(run_dir)
        entry = {"format_version": PACK_FORMAT_VERSION, "packed_at": now(), "tables": tables}
        RunStore(run_dir, manifest.columns).write_manifest(manifest.with_(extra=manifest.extra | {"packed": entry}))
        placed = []   # referenced by the manifest now: they are the run's data
    except PackError:
        raise
    except (OSError, DataError) as exc:   # the store's atomic write says DataError for a full disk
        cause = exc if isinstance(exc, OSError) else exc.__context__
        reason = getattr(cause, "strerror", None) or exc
        raise PackError(f"{run_dir}: cannot pack ({reason}); the run is unchanged") from None
    finally:
        for leftover in temps + placed:
            leftover.unlink(missing_ok=True)

    _fsync_dir(run_dir)
    state = run_state(run_dir)
    if not state.verified:   # the CSVs are still there: nothing is lost
        raise PackError(f"{run_dir}: packed but not verified ({state.note})")
    for name in names:
        (run_dir / name).unlink()
    _fsync_dir(run_dir)
    return entry


def _check_packable(run_dir: Path, manifest: RunManifest) -> None:
    if manifest.status != "complete":
        raise NotPackable(f"{run_dir}: status is {manifest.status!r}; only a complete run is packed")
    state = run_state(run_dir)
    if not state.verified:
        raise NotPackable(f"{run_dir}: {state.note}; only a run whose files match its checksums is packed")


def publish(run_id: str, data: str | os.PathLike | None = None, root: Path | None = None) -> tuple[Path, bool]:
    """Ship a run: a run of runs/ is copied into data/raw packed (the copy is packed under a
    hidden name and renamed into place, so data/raw never holds a half-published run; runs/
    keeps its original); a run already in data/raw is packed in place, or left as it is when
    packed already. Returns the shipped run's directory, and whether this call changed it (so
    that a second publish says it had nothing to do)."""
    source = find_run(run_id, data)
    manifest = load_manifest(source)
    dest = raw_root(root) / manifest.experiment / manifest.run_id
    if dest.exists():
        shipped = load_manifest(dest)
        if shipped.checksums != manifest.checksums:
            raise DataError(f"{dest}: another run {manifest.run_id} is shipped already (other checksums); "
                            "remove one of the two")
        if "packed" in shipped.extra:
            return dest, False
        pack(dest)
        return dest, True
    if "packed" not in manifest.extra:   # before copying megabytes, and naming the source
        _check_packable(source, manifest)
    staging = dest.with_name(f".{dest.name}.publishing")
    shutil.rmtree(staging, ignore_errors=True)   # a publish killed before its rename
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, staging)
        if "packed" not in manifest.extra:
            pack(staging)
        os.replace(staging, dest)
        _fsync_dir(dest.parent)
    except OSError as exc:
        raise DataError(f"{dest}: cannot publish ({exc.strerror or exc}); {source} is unchanged") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest, True


def mark_published(experiment: str, run_id: str, root: Path | None = None) -> bool:
    """Add a run to data/published_runs.json (the runs the reports read by default), keeping the
    file's one-line-per-experiment layout. False when it is listed already."""
    from .report import PUBLISHED_RUNS, published_runs
    path = (root or project_root()) / "data" / PUBLISHED_RUNS
    try:
        listed = published_runs(root)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if run_id in listed.get(experiment, []):
        return False
    listed.setdefault(experiment, []).append(run_id)
    lines = [f" {json.dumps(name)}: {json.dumps(ids)}" for name, ids in listed.items()]
    write_atomic(path, "{\n" + ",\n".join(lines) + "\n}\n")
    return True


def frame_difference(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """The first way `b` differs from `a` (columns, dtypes, index, values bit for bit, a missing
    value as missing), or "" when they are the same frame."""
    import numpy as np
    if list(a.columns) != list(b.columns):
        return f"columns {list(a.columns)} != {list(b.columns)}"
    if not a.index.equals(b.index) or type(a.index) is not type(b.index):
        return "index"
    for col in a.columns:
        x, y = a[col], b[col]
        if x.dtype != y.dtype:
            return f"column {col}: dtype {x.dtype} != {y.dtype}"
        if x.dtype.kind in "iufb":
            xv, yv = x.to_numpy(), y.to_numpy()
            if xv.dtype.kind == "f":
                nan = np.isnan(xv)
                if not (np.array_equal(nan, np.isnan(yv)) and np.array_equal(np.signbit(xv), np.signbit(yv))):
                    return f"column {col}: missing values or signs differ"
                xv, yv = xv[~nan], yv[~nan]
            if not np.array_equal(xv, yv):
                return f"column {col}: values differ"
        else:
            for i, (u, v) in enumerate(zip(x.tolist(), y.tolist())):
                if not _same_value(u, v):
                    return f"column {col}, row {i}: {u!r} != {v!r}"
    return ""


def _same_value(u, v) -> bool:
    if type(u) is not type(v):
        return False
    if isinstance(u, float) and math.isnan(u):
        return math.isnan(v)
    return u == v


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with open(path, "wb") as fh:
        pq.write_table(table, fh, compression=COMPRESSION)
        fh.flush()
        os.fsync(fh.fileno())


def _read_parquet(path: Path) -> pd.DataFrame:
    """The frame as `read_csv` read it before the pack: Arrow's nulls in text columns come back
    as None, where the CSV reader gives NaN, so they are given back as NaN."""
    import numpy as np
    import pyarrow.parquet as pq
    try:
        df = pq.read_table(path).to_pandas()
    except FileNotFoundError:
        raise DataError(f"{path}: missing; the manifest says the run is packed there") from None
    except Exception as exc:   # pyarrow's errors (ArrowInvalid, ...) share no base class with OSError
        raise DataError(f"{path}: unreadable Parquet: {exc}") from None
    for col in df.columns:
        if df[col].dtype == object and df[col].isna().any():
            df[col] = df[col].where(df[col].notna(), np.nan)
    return df


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
