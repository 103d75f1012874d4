"""Moving a finished run between stores: a run directory packed as one archive, and a run made
elsewhere (a worker's archive, a directory or a .tar.gz given to `claimlab import`) checked and
moved into this store.

Why one module for both ends: what is sent and what is accepted must agree (the writer's own
bookkeeping is neither sent nor imported), and the import is the one gate through which another
machine's data enters the store: every file checksummed, nothing but plain files under one run
directory, and one rename, so a run is stored whole or not at all.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import uuid
from pathlib import Path

from .errors import DataError
from .store import load_manifest, run_state, runs_root
from .writer import RESERVE, WRITER_LOCK, WRITTEN

STAGING_DIR = ".importing"    # under the data root: unpacked runs before their one rename


def _writers_own(name: str) -> bool:
    """The writer's bookkeeping in a run directory (its lock, its record of writes, its reserve):
    the writing machine's business, not the run's data, so it is neither sent nor imported."""
    return name in (WRITER_LOCK, WRITTEN, RESERVE)


def archive_run(path: Path) -> bytes:
    """A run directory as a gzipped tar whose one top-level entry is the run id."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(path, arcname=path.name,
                filter=lambda info: None if _writers_own(Path(info.name).name) else info)
    return buf.getvalue()

def import_run(source: Path | bytes, data_root: Path | None = None) -> tuple[Path, bool]:
    """Append a run made elsewhere (a directory, a .tar.gz, or an archive's bytes) to the store:
    checked, then moved in with one rename. Returns (its path, whether it was new): the same run
    imported twice is stored once; a different run under a stored run's id is refused."""
    data_root = Path(data_root or runs_root())
    if not isinstance(source, bytes) and not Path(source).exists():
        raise DataError(f"{source}: no such run directory or archive")
    staging = data_root / STAGING_DIR / uuid.uuid4().hex
    try:
        staging.mkdir(parents=True)
    except OSError as exc:
        raise DataError(f"{data_root}: cannot stage an import there ({exc.strerror})") from None
    try:
        label = "the worker's archive" if isinstance(source, bytes) else str(source)
        if isinstance(source, bytes) or Path(source).is_file():
            run = _unpack(source, staging, label)
        else:
            run = staging / Path(source).name
            shutil.copytree(source, run, symlinks=True, ignore=lambda _, names: [n for n in names if _writers_own(n)])
        manifest = _checked(run, label)
        dest = data_root / manifest.experiment / manifest.run_id
        elsewhere = [p for p in data_root.glob(f"*/{manifest.run_id}") if p != dest]
        if elsewhere:   # the same run under another experiment's name would be listed twice
            raise DataError(f"{label}: run {manifest.run_id} is already stored in {elsewhere[0]}, under "
                            "another experiment; nothing was imported")
        if dest.exists():
            if load_manifest(dest).checksums == manifest.checksums and not run_state(dest).changed:
                return dest, False
            raise DataError(f"{label}: run {manifest.run_id} is already stored in {dest} with other data; "
                            "nothing was imported")
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(run, dest)
        return dest, True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _unpack(source: Path | bytes, into: Path, label: str) -> Path:
    """Regular files and directories under one top-level directory, nothing else (no links, no
    absolute or climbing paths): an archive can only ever fill its own staging directory."""
    try:
        fileobj = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")
        with fileobj, tarfile.open(fileobj=fileobj, mode="r:*") as tar:
            members = tar.getmembers()
            tops = {m.name.split("/")[0] for m in members}
            bad = [m.name for m in members if not (m.isfile() or m.isdir()) or m.name.startswith("/")
                   or ".." in m.name.split("/")]
            if bad or len(tops) != 1:
                raise DataError(f"{label}: not a run archive (one run directory of plain files)")
            tar.extractall(into, filter="data")
    except tarfile.ReadError:   # its message lists each compression tarfile tried
        takes = "" if isinstance(source, bytes) else "; claimlab import takes a run's directory or a .tar.gz of one"
        raise DataError(f"{label}: not a tar archive{takes}") from None
    except (tarfile.TarError, EOFError) as exc:
        raise DataError(f"{label}: a damaged archive ({exc}); nothing was imported") from None
    except OSError as exc:
        raise DataError(f"{label}: cannot read it ({exc.strerror or exc})") from None
    return into / tops.pop()


def _checked(run: Path, label: str):
    manifest = load_manifest(run)
    if manifest.run_id != run.name:
        raise DataError(f"{label}: manifest.json: run_id {manifest.run_id} is not the directory's name {run.name}")
    if not manifest.checksums:
        raise DataError(f"{label}: run {manifest.run_id} is {manifest.status} and has no checksums; "
                        "only a finished run is imported")
    links = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_symlink())
    if links:
        raise DataError(f"{label}: run {manifest.run_id}: {links[0]} is a symbolic link, not data; "
                        "nothing was imported")
    state = run_state(run)
    if state.changed:
        raise DataError(f"{label}: run {manifest.run_id}: {', '.join(state.changed)} do not match the "
                        "manifest's checksums; nothing was imported")
    listed = set(manifest.checksums) | {"manifest.json"}
    if "packed" in manifest.extra:    # a shipped run whose tables are Parquet (claimlab publish)
        from .pack import packed_tables
        listed |= {entry["file"] for entry in packed_tables(manifest).values()}
    if (run / "evidence" / "evidence.json").is_file():   # CPU evidence: checksummed in its own index
        from .evidence import verified_files
        try:
            listed |= set(verified_files(run))
        except DataError as exc:
            raise DataError(f"{label}: run {manifest.run_id}: {str(exc).removeprefix(str(run) + '/')}; "
                            "nothing was imported") from None
    extra = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and
                   str(p.relative_to(run)) not in listed
                   and not (manifest.format_version < 2 and p.parent.name == "variables"))   # not checksummed in 1
    if extra:
        raise DataError(f"{label}: run {manifest.run_id}: {extra[0]} is not covered by a checksum; "
                        "nothing was imported")
    return manifest
