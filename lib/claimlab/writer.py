"""Writing one run: the one process that writes it holds its writer lock, appends whole lines or
nothing (each with a single `write` on a file opened with O_APPEND, then fsynced, cut back on a
failed write), records every append before and after in `WRITTEN`, and keeps a reserve of disk
for its closing records. store.py reads what this module writes, and never writes itself."""

from __future__ import annotations

import csv
import errno
import fcntl
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .errors import DataError
from .records import INTERVAL_COLUMNS, MeasurementRecord, RunManifest, now
from .store import CHECKSUMMED, checksums, load_manifest, read_csv, read_jsonl, variables_files


def append_lines(path: Path, text: str, *, sync: bool = True) -> None:
    """Append whole lines or nothing: on a short or failed write (disk full, read-only, quota) the
    file is cut back to where it was, so it stays valid and the measurement counts as not done.
    `sync=False` leaves the flush to disk to `RunStore.sync`: a written line already outlives
    the process (killed or crashed), only not the machine."""
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
            if sync:
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


def write_atomic(path: Path, content: str | bytes, *, sync: bool = True) -> None:
    """The whole new content or the old one; a failed write (disk full) leaves no temporary file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb" if isinstance(content, bytes) else "w") as fh:
            fh.write(content)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DataError(f"{path}: cannot write: {exc.strerror}; what was measured before is intact: free "
                        "space or fix permissions, then `claimlab run ... --resume`") from None


def _csv_lines(rows: Iterable[Iterable[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


WRITER_LOCK = ".writer.lock"      # held by the one process writing a run, for as long as it does
WRITTEN = ".written.json"         # what the writer wrote, as it wrote it (`unwritten`)
RESERVE = ".reserve"              # space kept for the closing records when the disk fills up
RESERVE_BYTES = 1 << 20           # a manifest is 10-20 kB; events and the record of writes less


def lock_writer(path: Path):
    """The run's writer lock, taken (an open file; closing it releases the lock). It lives in the
    run's own directory, so two processes never write one run, whatever their --work."""
    try:
        lock = open(path / WRITER_LOCK, "a")
    except OSError as exc:
        raise DataError(f"{path}: cannot open {WRITER_LOCK} ({exc.strerror})") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise DataError(f"run {path.name} is still running: another claimlab process writes to it (it holds "
                        f"{path / WRITER_LOCK}); nothing was changed") from None
    return lock


def writing(path: Path) -> bool:
    """Whether a process holds the run's writer lock now: a run whose manifest still says
    "running" and whose lock nobody holds was killed (it resumes). Opened to read, so a run
    without a lock file (shipped, or never started) gets none."""
    try:
        with open(Path(path) / WRITER_LOCK) as lock:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


@dataclass
class RunStore:
    """Writes one run's files, holding the run's writer lock. Created once; reopened (never
    recreated) to resume.

    Every append is recorded first in `WRITTEN`: each data file's length and SHA-256 before and
    after it. A run killed before it could write its checksums (SIGKILL, power loss) is then
    checked on resume as a closed one is (`unwritten`)."""

    path: Path
    columns: tuple[str, ...]
    writer: Any = field(default=None, repr=False, compare=False)
    _digests: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def create(cls, root: Path, manifest: RunManifest) -> "RunStore":
        path = root / manifest.experiment / manifest.run_id
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataError(f"{root}: cannot make a run directory there ({exc.strerror}); "
                            "name a writable directory") from None
        path.mkdir()   # fails if it exists: a run directory is never reused
        store = cls(path, manifest.columns, lock_writer(path))
        store._reserve()
        store.write_manifest(manifest)
        store._put("results.csv", _csv_lines([manifest.columns]))
        store._put("intervals.csv", _csv_lines([INTERVAL_COLUMNS]))
        return store

    @classmethod
    def open_run(cls, path: Path, writer=None) -> "RunStore":
        """Reopen to resume: torn tails (a crash mid-write) are cut and logged. The caller has
        checked first (see `resumable`) that resuming may touch this run at all, holding its
        writer lock (`writer`; taken here if not given)."""
        manifest = load_manifest(path)
        store = cls(path, manifest.columns, writer or lock_writer(path))
        torn = {name: _repair_torn_tail(path / name) for name in CHECKSUMMED}
        for name in [n for n in CHECKSUMMED if (path / n).exists()] + variables_files(path):
            store._digest(name)     # the record of writes covers what earlier sessions wrote too
        for name, dropped in torn.items():
            if dropped:
                store.event("repaired", file=name, dropped_bytes=dropped)
        store._reserve()
        return store

    def close(self) -> None:
        """Release the writer lock (the process ending releases it too)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def _reserve(self) -> None:
        """Set space aside, freed when the run closes (`release_reserve`): a run stopped by a full
        disk can still record that it stopped, and why."""
        try:
            fd = os.open(self.path / RESERVE, os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError:
            pass      # no room even for that: the run will stop at its first write
        finally:
            os.close(fd)

    def release_reserve(self) -> None:
        (self.path / RESERVE).unlink(missing_ok=True)

    def _digest(self, name: str) -> tuple[int, Any]:
        if name not in self._digests:
            digest = hashlib.sha256()
            size = 0
            if (self.path / name).exists():
                data = (self.path / name).read_bytes()
                digest.update(data)
                size = len(data)
            self._digests[name] = (size, digest)
        return self._digests[name]

    def _put(self, name: str, text: str, *, sync: bool = True) -> None:
        """Append to one data file, recording first what the file is before and will be after."""
        data = text.encode()
        size, digest = self._digest(name)
        after = digest.copy()
        after.update(data)
        self._record_written({name: {"before": [size, digest.hexdigest()],
                                     "after": [size + len(data), after.hexdigest()]}})
        append_lines(self.path / name, text, sync=sync)
        self._digests[name] = (size + len(data), after)

    def _record_written(self, changing: dict) -> None:
        state = {}
        for name in self._digests:
            size, digest = self._digests[name]
            state[name] = {"before": [size, digest.hexdigest()], "after": [size, digest.hexdigest()]}
        # a killed process's writes outlive it without an fsync: only a machine's death loses them,
        # and then the torn tails are what `open_run` repairs
        write_atomic(self.path / WRITTEN, json.dumps(state | changing, sort_keys=True), sync=False)

    @property
    def run_id(self) -> str:
        return self.path.name

    def manifest(self) -> RunManifest:
        return load_manifest(self.path)

    def write_manifest(self, manifest: RunManifest) -> None:
        write_atomic(self.path / "manifest.json", json.dumps(manifest.as_dict(), indent=1, sort_keys=True,
                                                              default=str) + "\n")

    def update_manifest(self, **changes) -> None:
        self.write_manifest(self.manifest().with_(**changes))

    def append(self, record: MeasurementRecord) -> None:
        """All metrics of one measurement in one write: a measurement is stored whole or not at all.
        Not flushed to disk one by one (`sync`): an fsync between two measurements cost 0.66 ms
        in C2's MariaDB run (1% of its wall time), and a machine that dies loses at most the
        unit being measured, which `--resume` measures again."""
        rows = record.rows()
        missing = [c for c in self.columns if c not in rows[0]]
        unknown = [c for c in rows[0] if c not in self.columns]
        if missing or unknown:
            raise DataError(f"{self.path}: measurement does not fit the columns "
                            f"(missing {missing}, unknown {unknown})")
        if record.intervals:
            self._put("intervals.csv",
                      _csv_lines([r[c] for c in INTERVAL_COLUMNS] for r in record.interval_rows()), sync=False)
        self._put("results.csv", _csv_lines([r[c] for c in self.columns] for r in rows), sync=False)

    def sync(self) -> None:
        """Flush the measurements appended so far to disk (the runner calls it after each unit)."""
        for name in ("results.csv", "intervals.csv"):
            try:
                fd = os.open(self.path / name, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            except OSError as exc:
                raise DataError(f"{self.path / name}: cannot flush to disk: {exc.strerror}") from None
            finally:
                os.close(fd)

    def record_server(self, record: dict, variables: dict[str, str]) -> str:
        text = json.dumps(variables, indent=0, sort_keys=True)
        sha = hashlib.sha256(text.encode()).hexdigest()[:16]
        vdir = self.path / "variables"
        vdir.mkdir(exist_ok=True)
        if not (vdir / f"{sha}.json").exists():
            write_atomic(vdir / f"{sha}.json", text + "\n")
        self._digest(f"variables/{sha}.json")
        self._put("servers.jsonl", json.dumps(record | {"variables": sha}, sort_keys=True, default=str) + "\n")
        return sha

    def event(self, kind: str, **fields) -> None:
        self._put("events.jsonl", json.dumps({"at": now(), "event": kind, **fields},
                                              sort_keys=True, default=str) + "\n")

    def completed(self) -> set[tuple[str, str, int, int]]:
        """(condition, workload, repetition, iteration) of every stored measurement."""
        df = read_csv(self.path / "results.csv")
        return set(zip(df["condition"], df["workload"], df["repetition"].astype(int),
                       df["iteration"].astype(int)))

    def start_bests(self, metric: str, fastest: str) -> dict[tuple[str, str], list[float]]:
        """The fastest stored value of `metric` of each server start (repetition, seq, attempt),
        smallest or largest (`fastest` "min" or "max"), per (condition, workload): where a resumed
        run's `design.fast_rounds` takes up its fast level."""
        df = read_csv(self.path / "results.csv")
        df = df[df["metric"] == metric]
        best = df.groupby(["condition", "workload", "repetition", "seq", "attempt"])["value"].agg(fastest)
        out: dict[tuple[str, str], list[float]] = {}
        for (condition, workload, *_), value in best.items():
            out.setdefault((condition, workload), []).append(float(value))
        return out

    def starts(self) -> dict[int, int]:
        """The highest attempt recorded per seq: a resumed unit numbers its server starts on from
        there, so rows of two server processes never share (seq, attempt)."""
        out: dict[int, int] = {}
        for rec in read_jsonl(self.path / "servers.jsonl"):
            out[int(rec["seq"])] = max(out.get(int(rec["seq"]), 0), int(rec["attempt"]))
        return out

    def finish(self, status: str, **extra) -> None:
        self.sync()
        self.release_reserve()
        self.update_manifest(status=status, finished_at=now(), checksums=checksums(self.path), **extra)


def unwritten(path: str | os.PathLike) -> tuple[str, ...]:
    """The data files of a run that differ from what its writer recorded writing (`RunStore`):
    each must be as it was before or after the last write to it (and may end in a torn line,
    which `open_run` cuts); a data file the writer never wrote counts too. Nothing recorded (a
    run written before this record existed): nothing to compare."""
    path = Path(path)
    try:
        written = json.loads((path / WRITTEN).read_text())
    except FileNotFoundError:
        return ()
    except (OSError, ValueError):
        return (WRITTEN,)
    changed = [name for name in CHECKSUMMED if name not in written and (path / name).exists()]
    for name, states in written.items():
        try:
            data = (path / name).read_bytes()
        except OSError:
            changed.append(name)
            continue
        if not any(len(data) >= size and b"\n" not in data[size:]
                   and hashlib.sha256(data[:size]).hexdigest() == sha
                   for size, sha in (states["before"], states["after"])):
            changed.append(name)
    return tuple(sorted(changed))


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
