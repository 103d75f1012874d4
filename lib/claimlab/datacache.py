"""Loaded data directories kept between runs: load a table once per server binary, configuration
and workload definition, then start later runs from a copy.

A run reuses one data directory per configuration across its own restarts already; this keeps
the one a run leaves behind (copied after a clean shutdown, so InnoDB needs no recovery) in the
cache, keyed by everything that decides its content: the server binary and its version, the
effective server options, and the schemas of the cell's workloads (each schema is named by a
hash of the parameters that decide what is loaded, see `Workload.schema`). Only directories that
took long enough to make (initialise and load) to be worth a copy are kept; the cache is bounded
and evicts the least recently used.
Warm-up is not skipped by a cached start: buffer pools start cold either way, and the warm-up
iterations are run and recorded as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path

from .errors import DataError
from .servers import cache_dir
from .servers.initcache import copy_tree, keep_entry
from .writer import write_atomic

MIN_LOAD_S = 1.0                 # made faster, a directory costs less than a copy (200 MB: 0.3 s)
MAX_BYTES = 8 * 1024 ** 3        # at most this much, oldest use evicted first (quick profiles: 5.5 GB)
FORMAT = 1                       # bump when what a key covers changes
QUICK_DIR = ".quick"             # notes of keys made faster than MIN_LOAD_S (dotted: never evicted as an entry)


def root() -> Path:
    """`CLAIMLAB_DATADIRS` if set (the test suite keeps its own, removed after the session), else
    the claimlab cache's `datadirs`."""
    return Path(os.environ["CLAIMLAB_DATADIRS"]) if os.environ.get("CLAIMLAB_DATADIRS") else cache_dir() / "datadirs"


def key(server, schemas: list[str]) -> str | None:
    """The cache key of a local server's loaded data directory; None for servers claimlab does not
    own (external targets) or that cannot be copied."""
    binary = getattr(server, "binary", None)
    datadir = getattr(server, "datadir", None)
    if binary is None or datadir is None:
        return None
    try:
        stat = Path(binary).stat()
    except OSError:
        return None
    identity = {"format": FORMAT, "binary": str(binary), "size": stat.st_size, "mtime": int(stat.st_mtime),
                "flavor": repr(getattr(server, "flavor", None)), "options": server.options.as_dict(),
                "target_kind": server.target.kind, "schemas": sorted(set(schemas))}
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:24]


def worth_keeping(made_s: float) -> bool:
    """Whether a data directory that took `made_s` seconds to initialise and load is worth a copy in
    the cache: quicker than `MIN_LOAD_S`, its run makes it again (the runner and the preload agree)."""
    return made_s >= MIN_LOAD_S


def note_quick(cache_key: str | None, made_s: float) -> None:
    """Remember that the directory of `cache_key` took only `made_s` seconds to make, so that a
    preload need not make it again only to drop it: its run makes it anyway. A hint, not a record:
    written whole or not at all, and a failure to write costs only a preload's time."""
    if cache_key is None:
        return
    marks = root() / QUICK_DIR
    with contextlib.suppress(OSError, DataError):
        marks.mkdir(parents=True, exist_ok=True)
        write_atomic(marks / cache_key, f"{made_s:.3f}\n", sync=False)


def known_quick(cache_key: str | None) -> bool:
    """Whether the directory of `cache_key` was made faster than `MIN_LOAD_S` before (by a run or a
    preload); a threshold raised since, or an unreadable note, makes it unknown again."""
    if cache_key is None:
        return False
    try:
        return not worth_keeping(float((root() / QUICK_DIR / cache_key).read_text()))
    except (OSError, ValueError):
        return False


def cell_key(server, conditions) -> str | None:
    """The key of the data directory one cell's server loads: every condition's tables. The runner
    and the preload both ask here, so that what one makes the other finds."""
    return key(server, [w.schema() for c in conditions for w in c.workloads])


def has(cache_key: str | None) -> bool:
    return cache_key is not None and (root() / cache_key / "data").is_dir()


def restore(server, cache_key: str | None) -> bool:
    """Copy a cached data directory into a server home that has none yet. True if one was used.
    A server without a key (an external one: no data directory of claimlab's) is left alone."""
    if not has(cache_key) or server.datadir.exists():
        return False
    entry = root() / cache_key
    server.home.mkdir(parents=True, exist_ok=True)
    partial = server.home / "data.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        copy_tree(entry / "data", partial, allocate=True)
        password = entry / "root.password"
        if password.exists():
            fd = os.open(server.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(password.read_text())
    except (shutil.Error, OSError) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if not entry.exists():      # evicted by another process meanwhile: the run loads its own
            return False
        raise DataError(f"{server.home}: cannot copy a cached data directory there: {_why(exc)}; free space on "
                        "--work's file system (or name another --work), then `claimlab run ... --resume`") from None
    partial.rename(server.datadir)
    with contextlib.suppress(FileNotFoundError):
        os.utime(entry)
    return True


def _why(exc: Exception) -> str:
    """The cause of a failed copy in a few words: copytree gathers one error per file, as
    (source, destination, reason) triples, and a full disk fails them all alike."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        reason = str(exc.args[0][0][-1])
        return reason.split("] ", 1)[-1].split(":")[0]
    return exc.strerror or str(exc)


def save(server, cache_key: str | None) -> bool:
    """Keep a stopped server's data directory and the root password that opens it (mode 0600), as
    one entry that concurrent runs see whole or not at all (`keep_entry`)."""
    if cache_key is None or not server.datadir.is_dir():
        return False

    def fill(tmp: Path) -> None:
        copy_tree(server.datadir, tmp / "data")
        if server.password_file.exists():
            fd = os.open(tmp / "root.password", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(server.password_file.read_text())

    return keep_entry(root(), cache_key, fill, MAX_BYTES)
