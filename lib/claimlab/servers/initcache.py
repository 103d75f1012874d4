"""Initialised, empty data directories kept per server program and configuration.

`mysqld --initialize-insecure` (3-6 s, most of it the bootstrap and RSA key generation) and
`mariadb-install-db` (0.6-1.4 s) make the same directory for every server of one configuration,
and a report or the test suite initialises dozens. The first initialisation is kept; later ones
start from a copy of it (0.1-0.3 s). The key covers everything that can change what an
initialisation makes: the server program and the program that initialises it (path, size,
modification time), the version, the layout and every server option but those that only tune a
running server (`RUNTIME_ONLY`). Entries are stored sparse (MariaDB's 96 MiB redo log file is
zeros: 6.5 MiB on disk) and copied back in full, so a server writes into allocated files, as after
its own initialisation. MySQL's `auto.cnf` is not copied: each server makes its own server_uuid.
A copy that fails costs only the time: the server initialises as it would without the cache.

"Copied back in full" means allocated, not written: the servers allocate their redo logs and
tablespaces with fallocate (ext4 keeps the blocks as unwritten extents), so a copy writes the
data and allocates the rest the same way (`copy_tree`). Writing the zeros instead (as
`shutil.copytree` does) wrote 96 MiB per MariaDB start and most of a test run's disk traffic.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable

FORMAT = 2                       # bump when what a key covers changes
# Options that change how a running server uses memory and syncs, never what an initialisation
# writes: servers differing only in these start from one initialised directory (the test suite's
# 51 distinct initialisations became 30). The binary log's switch and format stay in the key (an
# installer that logged would leave binary logs behind).
RUNTIME_ONLY = ("innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "sync_binlog")
MAX_BYTES = 2 * 1024 ** 3        # on disk; the least recently used go first
# MySQL 8.0.30+ keeps 31 spare redo log files beside the one in use (#innodb_redo,
# innodb_redo_log_capacity / 32 each: 496 MB of C2's 835 MB at 512M) and makes any that are
# missing at its start by writing them in full. They are copied as every file is (`copy_tree`):
# their few blocks of data written, the rest allocated, so a start from a copy writes none of them.
_COPIED_BACK = shutil.ignore_patterns("auto.cnf")


class InitCache:
    def __init__(self, root: Path):
        self.root = root

    def key(self, server) -> str | None:
        """None where a program cannot be identified (it is gone): such a server initialises."""
        inst = server.installation
        programs = [Path(server.binary), Path(server.flavor.init_command(server.binary, Path("my.cnf"))[0])]
        try:
            identity = [(str(p), st.st_size, int(st.st_mtime)) for p, st in ((p, p.stat()) for p in programs)]
        except OSError:
            return None
        described = {"format": FORMAT, "programs": identity, "version": inst.version_text,
                     "basedir": str(inst.basedir), "layout": list(inst.layout_lines),
                     "kind": server.target.kind,
                     "options": {k: v for k, v in server.options.as_dict().items() if k not in RUNTIME_ONLY}}
        return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()[:24]

    def restore(self, key: str, partial: Path) -> bool:
        """Copy the kept directory to `partial` (which must not exist). True if one was copied."""
        entry = self.root / key / "data"
        if not entry.is_dir():
            return False
        try:
            copy_tree(entry, partial, ignore=_COPIED_BACK, allocate=True)
        except (shutil.Error, OSError):
            shutil.rmtree(partial, ignore_errors=True)
            return False
        with contextlib.suppress(FileNotFoundError):
            os.utime(entry.parent)
        return True

    def save(self, key: str, datadir: Path) -> bool:
        """Keep a just-initialised directory (see `keep_entry`)."""
        return keep_entry(self.root, key, lambda tmp: copy_tree(datadir, tmp / "data"), MAX_BYTES)


def copy_tree(src: Path, dst: Path, ignore=None, allocate: bool = False) -> Path:
    """`shutil.copytree` that writes only the blocks that hold data: holes, unwritten extents and
    blocks of zeros (SEEK_DATA finds a just-fallocated file all data while its pages are cached)
    stay a hole (`allocate=False`: a compact cache entry) or are allocated without being written
    (`allocate=True`: a directory a server writes into, as after its own fallocate)."""
    def copy(s: str, d: str) -> str:
        _copy_blocks(s, d, allocate)
        shutil.copystat(s, d)
        return d
    return Path(shutil.copytree(src, dst, symlinks=True, ignore=ignore, copy_function=copy))


_BLOCK = 1 << 16
_ZEROS = bytes(_BLOCK)


def _copy_blocks(src: str, dst: str, allocate: bool) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        fi, fo = fin.fileno(), fout.fileno()
        size = os.fstat(fi).st_size
        for start, end in _data_regions(fi, size):
            for offset in range(start, end, 1 << 20):
                chunk = os.pread(fi, min(1 << 20, end - offset), offset)
                blocks = range(0, len(chunk), _BLOCK)
                data = [at for at in blocks if chunk[at:at + _BLOCK] != _ZEROS[:len(chunk) - at]]
                for first, last in _runs(data):          # consecutive data blocks, one write each
                    os.pwrite(fo, chunk[first:last + _BLOCK], offset + first)
        if allocate and size:
            os.posix_fallocate(fo, 0, size)
        else:
            os.ftruncate(fo, size)


def _runs(offsets: list[int]):
    """(first, last) of each run of consecutive block offsets."""
    for i, at in enumerate(offsets):
        if i == 0 or offsets[i - 1] != at - _BLOCK:
            first = at
        if i == len(offsets) - 1 or offsets[i + 1] != at + _BLOCK:
            yield first, at


def _data_regions(fd: int, size: int):
    """(start, end) of each region SEEK_DATA finds; the whole file where it is not supported."""
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:        # only a hole after pos
                return
            yield pos, size
            return
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, end
        pos = end


def keep_entry(root: Path, key: str, fill: Callable[[Path], None], max_bytes: int) -> bool:
    """Make the entry `root/key` (this cache's or the loaded-directory cache's): `fill` writes it
    into a private directory, which is then renamed into place, so a concurrent reader never sees
    half an entry and, of two processes that made the same one, the first kept stays. A failure (a
    full disk, a twin) leaves no entry and costs only the copy: the server made its own directory.
    Then evicts beyond `max_bytes`. True if this call kept it."""
    if (root / key).exists():
        return False
    tmp = root / f".{key}.{os.getpid()}.tmp"
    try:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(mode=0o700)
        fill(tmp)
        tmp.rename(root / key)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    evict_least_recent(root, max_bytes)
    return True


def evict_least_recent(root: Path, max_bytes: int) -> None:
    """Delete the least recently used entries of `root` beyond `max_bytes` on disk, never the
    newest (this cache's and the loaded-directory cache's). Concurrent processes evict too: an entry
    that vanishes meanwhile counts as gone. An entry is renamed away before it is deleted, so a
    copy being made from it fails (and that server initialises or loads) rather than miss the files
    deleted first."""
    sizes, used = {}, {}
    for p in root.iterdir():
        if not p.name.startswith("."):
            with contextlib.suppress(FileNotFoundError):
                used[p] = p.stat().st_mtime
                sizes[p] = sum(f.lstat().st_blocks * 512 for f in p.rglob("*"))
    total = sum(sizes.values())
    for p in sorted(sizes, key=used.get)[:-1]:
        if total <= max_bytes:
            break
        doomed = root / f".{p.name}.{os.getpid()}.evicted"
        with contextlib.suppress(OSError):
            p.rename(doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        total -= sizes[p]
