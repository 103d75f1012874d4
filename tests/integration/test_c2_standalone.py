"""bench/c2_standalone.py, C2's query outside the harness, runs on a real MariaDB: one line per
collation, ns per row and the ratio to utf8mb3_general_ci (README: the harness's MySQL readings at
larger tables against the server's own), in one schema or in the harness's layout."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import bench_module

HARNESS_LIKE = ["--restart", "--per-table-connections", "--probe", "5", "--meter", "--session", "--schema-per-table"]


@pytest.mark.parametrize("options", [[], HARNESS_LIKE])
def test_standalone_scan_prints_every_collation_against_utf8mb3(capsys, mariadbd, options):
    assert bench_module("c2_standalone").main(["--target", "mariadb", "--rows", "2000", "--rounds", "5",
                                                *options]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == ["latin1_swedish_ci", "utf8mb3_general_ci", "utf8mb4_general_ci", "utf8mb4_unicode_ci",
                     "utf8mb4_uca1400_ai_ci"]
    ratios = {line.split()[0]: float(re.search(r"utf8mb3_general_ci (\d+\.\d+)$", line).group(1)) for line in lines}
    assert ratios["utf8mb3_general_ci"] == 1.0 and all(0.2 < r < 5 for r in ratios.values())


def test_starts_print_each_starts_code_address_and_a_fixed_layout_keeps_it(capsys, mariadbd):
    # data/README.md, "MySQL's unicode scan has a state of its own": the per-start lines, and the layout
    # held fixed (ADDR_NO_RANDOMIZE for the servers only: this process's own flag is set back)
    if subprocess.run(["setarch", "-R", "true"], capture_output=True).returncode != 0:
        pytest.skip("this host refuses personality(ADDR_NO_RANDOMIZE) (a container's seccomp profile)")
    standalone = bench_module("c2_standalone")
    persona = Path("/proc/self/personality").read_text()
    addresses = {}
    for fixed in (True, False):
        assert standalone.main(["--target", "mariadb", "--rows", "2000", "--rounds", "4", "--starts", "2",
                                *(["--fixed-layout"] if fixed else [])]) == 0
        starts = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("start ")]
        assert [s[1] for s in starts] == ["0", "1"] and all(s[-2] == "unicode/general" for s in starts)
        addresses[fixed] = {s[4] for s in starts}
        assert Path("/proc/self/personality").read_text() == persona
    assert len(addresses[True]) == 1
    if Path("/proc/sys/kernel/randomize_va_space").read_text().strip() != "0":
        assert len(addresses[False]) == 2, addresses


@pytest.mark.parametrize("how", [[], ["scattered"]])
def test_move_binary_puts_the_servers_pages_on_other_frames_before_it_starts(capsys, mariadbd, how):
    # data/README.md, "Build AN, and where the binary's pages lie": the binary is evicted and read
    # back, all at once while 1 GiB is held elsewhere or page by page in a random order; root
    # reads the frames from /proc/self/pagemap. Where they land is not asserted here: a server
    # another test runs at the same time maps the binary, and its pages stay put (CI read 15
    # frames before and 18 after a scattered move of a 13-frame binary)
    standalone = bench_module("c2_standalone")
    assert standalone.main(["--target", "mariadb", "--rows", "2000", "--rounds", "4", "--move-binary", *how]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    moved = re.fullmatch(r"moved (\S+): its pages lay in (\d+|unknown) 2 MiB frames, now in (\d+|unknown)", first)
    assert moved, first
    binary = Path(moved.group(1))
    assert binary.name == "mariadbd"
    if os.geteuid() == 0:
        least = -(-binary.stat().st_size // (2 << 20))          # frames the file fills at the least
        assert int(moved.group(2)) >= least and int(moved.group(3)) >= least, first
    else:
        assert moved.group(2) == moved.group(3) == "unknown"


@pytest.mark.parametrize("how", ["_move", "_scatter"])
def test_a_move_puts_a_files_pages_on_other_frames(tmp_path, how):
    # on a file no other process maps (on disk, not tmpfs, so eviction takes it). How many 2 MiB
    # frames they then fill depends on how fragmented free memory is (13 frames of file: 389-426
    # after a contiguous move and 599-600 after a scattered one on a long-running host; 37 and 21
    # beside other tests a little later), so only that the pages moved is asserted
    if os.geteuid() != 0:
        pytest.skip("frame numbers need root")
    standalone = bench_module("c2_standalone")
    path = tmp_path / "binary"
    path.write_bytes(os.urandom(13 * (2 << 20)))
    os.sync()                                    # eviction leaves dirty pages where they are
    before = standalone._page_frames(path)
    getattr(standalone, how)(path)
    after = standalone._page_frames(path)
    assert len(before) == len(after) == 13 * 512 and 0 not in before + after
    stayed = sum(a == b for a, b in zip(before, after))
    assert stayed < len(before) // 2, (how, stayed)
    assert standalone._frames(path) >= 13


def test_without_root_the_frames_are_unknown(mariadbd):
    # /proc/self/pagemap gives frame numbers only to CAP_SYS_ADMIN; a child that drops to nobody
    # reads zeros, which _frames reports as unknown rather than as one frame
    if os.geteuid() != 0:
        assert bench_module("c2_standalone")._frames(Path(mariadbd)) is None
        return
    frames = bench_module("c2_standalone")._frames
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # the child: nobody, then report and leave
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            ctypes.CDLL(None).prctl(4, 1)           # PR_SET_DUMPABLE: its /proc/self is its own again
            os.write(write, repr(frames(Path(mariadbd))).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    assert said == "None"
