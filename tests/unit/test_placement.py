"""servers.placement: a fresh copy of a server binary per block, byte for byte the program, on
frames of its own, never half written, and cleaned up after."""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from claimlab.errors import ServerStartError
from claimlab.servers import placement
from claimlab.servers.placement import PAGE, Placer, seed_of, unusable, write_scattered


def _program(tmp_path: Path) -> Path:
    """A small installation: bin/tool (an executable a few hundred pages long) beside lib/."""
    prefix = tmp_path / "inst"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    (prefix / "lib" / "marker").write_text("lib\n")
    (prefix / "bin" / "helper").write_text("helper\n")
    tool = prefix / "bin" / "tool"
    # a shell script padded past one page: runs, and reads a file through its own ../lib
    body = '#!/bin/sh\ncat "$(dirname "$0")/../lib/marker"\nexit 0\n'
    tool.write_text(body + "#" * (300 * PAGE + 123) + "\n")
    tool.chmod(0o755)
    return tool


def test_a_copy_is_the_program_byte_for_byte_and_runs_with_its_layout(tmp_path):
    tool = _program(tmp_path)
    (tmp_path / "shm").mkdir()
    placer = Placer(tmp_path / "shm")
    first = placer.place(tool, "s0", "run/1/1/0")
    assert first.executable.read_bytes() == tool.read_bytes()
    assert first.executable.stat().st_mode & 0o777 == 0o755
    assert first.pages == -(-tool.stat().st_size // PAGE) and first.seed == seed_of("run/1/1/0")
    out = subprocess.run([str(first.executable)], capture_output=True, text=True, check=True)
    assert out.stdout == "lib\n"       # $0/../lib resolves through the symlink beside the copy
    assert (first.executable.parent / "helper").read_text() == "helper\n"
    assert not list(first.executable.parent.glob("*.partial"))
    # the next block's copy replaces it by rename: a process still running the old one keeps it
    held = open(first.executable, "rb")
    old_inode = os.fstat(held.fileno()).st_ino
    second = placer.place(tool, "s0", "run/2/1/0")
    assert second.executable == first.executable and second.seed != first.seed
    assert os.stat(second.executable).st_ino != old_inode
    assert held.read() == tool.read_bytes()
    held.close()
    placer.close()
    assert not placer.home.exists()


def test_the_order_of_writes_follows_the_seed(tmp_path, monkeypatch):
    image = os.urandom(40 * PAGE + 7)
    orders = []
    real = os.pwrite

    def spy(fd, data, offset):
        orders[-1].append(offset // PAGE)
        return real(fd, data, offset)

    monkeypatch.setattr(placement.os, "pwrite", spy)
    for seed in (1, 1, 2):
        orders.append([])
        dest = tmp_path / f"copy{len(orders)}"
        assert write_scattered(image, dest, seed) == 41
        assert dest.read_bytes() == image
    assert orders[0] == orders[1] != orders[2]
    assert sorted(orders[0]) == list(range(41)) and orders[0] != sorted(orders[0])


def test_a_failed_copy_leaves_no_partial_file_and_names_the_binary(tmp_path, monkeypatch):
    tool = _program(tmp_path)
    (tmp_path / "shm").mkdir()
    placer = Placer(tmp_path / "shm")

    def full(fd, data, offset):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(placement.os, "pwrite", full)
    with pytest.raises(ServerStartError, match=f"cannot place a copy of {tool} in .*s0: No space left"):
        placer.place(tool, "s0", "x")
    assert not [p for p in placer.home.rglob("tool*") if not p.is_symlink()]
    placer.close()


def test_unusable_roots_are_named(tmp_path):
    assert unusable(tmp_path / "missing") == f"{tmp_path / 'missing'} does not exist"
    assert unusable(tmp_path) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root (CI runs as root)")
def test_a_noexec_tmpfs_is_refused(tmp_path):
    """Where a copied server could not run: a tmpfs mounted noexec (as /dev/shm is on some hosts)."""
    mountpoint = tmp_path / "shm"
    mountpoint.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,size=1m", "tmpfs", str(mountpoint)], check=True)
    try:
        assert unusable(mountpoint) == f"{mountpoint} is mounted noexec"
        assert not Placer(mountpoint).available
    finally:
        subprocess.run(["umount", str(mountpoint)], check=True)


def test_copies_of_dead_processes_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    stale = tmp_path / f"{placement.PREFIX}{dead.stdout.strip()}"
    live = tmp_path / f"{placement.PREFIX}1"       # init: always alive
    for path in (stale, live):
        (path / "s0").mkdir(parents=True)
    Placer(tmp_path)
    assert not stale.exists() and live.exists()


def _frames(path: Path) -> list[int]:
    """The physical frame of every page of a file, 0 where none is shown (root only: others
    read zeros). Each page is read through a private mapping (no copy is made on reading), then
    looked up in pagemap."""
    size = path.stat().st_size
    frames = []
    with open(path, "rb") as fh, open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        mapped = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_COPY)
        view = (ctypes.c_ubyte * size).from_buffer(mapped)
        try:
            address = ctypes.addressof(view)
            for page in range(-(-size // PAGE)):
                _ = view[page * PAGE]
                pagemap.seek((address // PAGE + page) * 8)
                entry = struct.unpack("Q", pagemap.read(8))[0]
                frames.append(entry & ((1 << 55) - 1) if entry >> 63 else 0)
        finally:
            del view
            mapped.close()
    return frames


@pytest.mark.skipif(os.geteuid() != 0, reason="physical frames are readable by root only (CI runs as root)")
def test_each_draw_lands_on_other_frames(tmp_path):
    """What the design relies on: the next block's copy is a new placement (no page keeps its
    frame), spread over many 2 MiB frames, not one contiguous run."""
    root = Path(os.environ.get(placement.ENV) or placement.DEFAULT_ROOT)
    if unusable(root):
        pytest.skip(unusable(root))
    program = tmp_path / "bin" / "program"
    program.parent.mkdir()
    program.write_bytes(os.urandom(2048 * PAGE))
    placer = Placer(root)
    try:
        first = _frames(placer.place(program, "s0", "a").executable)
        second = _frames(placer.place(program, "s0", "b").executable)
    finally:
        placer.close()
    assert all(first) and all(second), "pagemap showed no frame (not root?)"
    same = sum(a == b for a, b in zip(first, second))
    assert same < len(first) // 20, f"{same} of {len(first)} pages kept their frame"
    assert min(len({f >> 9 for f in first}), len({f >> 9 for f in second})) > 8
