"""Where a server's program lies in physical memory: drawn anew for every block.

Why: on these VMs a server binary's page-cache pages keep their physical frames for as long as
the binary is in use, and are read back onto other frames only after the host's reclaim (DAMON
pageout of file pages idle for a minute) has evicted them, that is between runs. Some placements
slow one code path by 7-12% in every server start made on them. A run that starts all its
servers from the page cache therefore carries one placement's state in every block, a run-level
term that no interval over blocks covers. A fresh copy of the binary per block turns it into a
block-level term, which the interval does.

The copy lives in tmpfs (`/dev/shm`, or CLAIMLAB_PLACEMENT_DIR): its pages are its own frames,
not the page cache of the original. It is written page by page in an order drawn from a recorded
seed, with a page of anonymous memory taken between writes, so its frames come from all over the
free lists instead of one contiguous run (the frames freed by the previous block's copy, handed
out again first, would otherwise re-deal the same mapping). It then replaces the previous copy by
rename: a server still shutting down keeps its inode. Beside the copy stand symlinks to the
directories next to the binary's own, so paths a server derives from its own location
(`$ORIGIN/../lib/private` of a tarball mysqld, MariaDB's basedir) still resolve.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import random
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ServerStartError

ENV = "CLAIMLAB_PLACEMENT_DIR"
DEFAULT_ROOT = "/dev/shm"
PREFIX = "claimlab-place-"
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Placement:
    """One drawn copy: what a server starts, and how to draw it again."""

    executable: Path
    seed: int
    pages: int
    seconds: float

    def __post_init__(self):
        if self.pages < 1 or self.seconds < 0:
            raise ValueError(f"placement of {self.executable}: {self.pages} pages in {self.seconds} s")

    def record(self) -> dict:
        return {"seed": self.seed, "pages": self.pages, "seconds": round(self.seconds, 4)}


def seed_of(text: str) -> int:
    """A 63-bit seed named by text (the run, unit, attempt and start), stable across Pythons."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def unusable(root: Path) -> str | None:
    """Why copies cannot be placed under `root` (None: they can): tmpfs missing, read-only or
    mounted noexec, where a copied server could not run."""
    if not root.is_dir():
        return f"{root} does not exist"
    if not os.access(root, os.W_OK | os.X_OK):
        return f"{root} is not writable"
    if os.statvfs(root).f_flag & os.ST_NOEXEC:
        return f"{root} is mounted noexec"
    return None


def write_scattered(image: bytes, dest: Path, seed: int, mode: int = 0o755) -> int:
    """Write `image` to `dest` a page at a time in the order `seed` draws, one page of anonymous
    memory touched between writes (held until the copy is complete, then freed). Written to
    `dest.partial` and renamed, so `dest` is never half a program. Returns the pages written."""
    pages = max(1, -(-len(image) // PAGE))
    order = list(range(pages))
    random.Random(seed).shuffle(order)
    partial = dest.with_name(dest.name + ".partial")
    view = memoryview(image)
    spacer = mmap.mmap(-1, pages * PAGE)
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.ftruncate(fd, len(image))
            for n, page in enumerate(order):
                os.pwrite(fd, view[page * PAGE:(page + 1) * PAGE], page * PAGE)
                spacer[n * PAGE] = 1
        finally:
            os.close(fd)
        os.chmod(partial, mode)
        os.replace(partial, dest)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        spacer.close()
    return pages


class Placer:
    """A run's copies of its server binaries, one directory per server it runs at once (`key`),
    under a directory named by this process's pid (removed by `close()`; a dead process's
    directories are removed by the next Placer). `reason` says why it places nothing, if so."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root or os.environ.get(ENV) or DEFAULT_ROOT)
        self.reason = unusable(self.root)
        self.home = self.root / f"{PREFIX}{os.getpid()}"
        self._images: dict[Path, bytes] = {}
        if self.reason is None:
            _remove_dead(self.root)

    @property
    def available(self) -> bool:
        return self.reason is None

    def place(self, binary: Path, key: str, seed_text: str) -> Placement:
        """A fresh copy of `binary` for the server `key`, drawn from `seed_text`."""
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", key):
            raise ValueError(f"placement key {key!r}")
        began = time.monotonic()
        where = self.home / key
        try:
            image = self._image(binary)
            program_dir = self._layout(where, binary)
            seed = seed_of(seed_text)
            pages = write_scattered(image, program_dir / binary.name, seed, binary.stat().st_mode & 0o777)
        except OSError as exc:
            raise ServerStartError(f"cannot place a copy of {binary} in {where}: {exc.strerror or exc}") from None
        return Placement(program_dir / binary.name, seed, pages, time.monotonic() - began)

    def _image(self, binary: Path) -> bytes:
        """The program's bytes, read once per run (mysqld: 82 MB)."""
        if binary not in self._images:
            self._images[binary] = binary.read_bytes()
        return self._images[binary]

    def _layout(self, where: Path, binary: Path) -> Path:
        """`where`/<the binary's directory name>/, beside symlinks to that directory's siblings,
        and holding symlinks to the binary's own siblings."""
        program_dir = where / binary.parent.name
        if program_dir.is_dir():
            return program_dir
        program_dir.mkdir(parents=True)
        for sibling in binary.parent.parent.iterdir():
            if sibling.name != binary.parent.name:
                (where / sibling.name).symlink_to(sibling)
        for sibling in binary.parent.iterdir():
            if sibling.name != binary.name:
                (program_dir / sibling.name).symlink_to(sibling)
        return program_dir

    def close(self) -> None:
        self._images.clear()
        shutil.rmtree(self.home, ignore_errors=True)


def _remove_dead(root: Path) -> None:
    """Copies left by claimlab processes that died before `close()` (only those whose pid is gone)."""
    for path in root.glob(f"{PREFIX}*"):
        pid = path.name.removeprefix(PREFIX)
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(path, ignore_errors=True)
