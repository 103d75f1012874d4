"""CPU evidence on real MariaDB: perf names server functions, callgrind counts repeat."""

from __future__ import annotations

import os
import signal
import threading
import time

import psutil

from claimlab import instructions, profiling
from claimlab.servers import ServerOptions
from claimlab.workloads import VarcharScan
from conftest import pid_alive

SCAN = VarcharScan(name="scan", rows=30_000, collation="utf8mb4_uca1400_ai_ci")


def test_profile_names_known_server_functions_and_renders(launcher, default_target, tmp_path):
    prof = profiling.profile_condition(launcher, default_target, ServerOptions(innodb_buffer_pool_size="64M"),
                                       SCAN, "uca1400", tmp_path / "prof", iterations=15)
    functions = set(prof.top_functions(200)["function"])
    # Exported symbols of the OS package's mariadbd on the scan's path (no debug symbols needed).
    assert functions & {"handler::ha_rnd_next", "sub_select", "JOIN::exec_inner", "mysql_select",
                        "dispatch_command"}, sorted(functions)[:40]
    assert prof.share_of(r"^dispatch_command$") > 0.5
    unnamed = prof.unnamed()
    assert set(unnamed.columns) >= {"named_caller", "share"}
    assert not any(pid_alive(p) for p in _server_pids(launcher))
    # inferno is installed by `make setup`; its absence is a setup failure, not a skip
    svg = profiling.flamegraph(prof, tmp_path / "uca1400.svg")
    diff = profiling.differential(prof, prof, tmp_path / "diff.svg")
    assert "<svg" in svg.read_text() and "handler::ha_rnd_next" in svg.read_text()
    assert "<svg" in diff.read_text()


def test_callgrind_counts_of_the_statements_thread_repeat_within_a_tenth_of_a_percent(launcher, default_target,
                                                                                     tmp_path):
    # The first server dies as callgrind dumps its first window (as MySQL 8.0.40 once died under
    # valgrind), while callgrind_control's vgdb waits on it: the windows are counted anew on a
    # second server, and nothing waits for good on the dead one.
    scan = VarcharScan(name="scan", rows=2_000, collation="utf8mb4_uca1400_ai_ci")
    killed, out = [], tmp_path / "cg" / "uca1400"

    def kill_the_first_server_as_it_dumps():
        deadline = time.monotonic() + 300
        while not killed and time.monotonic() < deadline:
            for proc in psutil.process_iter(["name", "cmdline"]):
                cmd = proc.info["cmdline"] or []
                pid = next((a[len("--pid="):] for a in cmd if a.startswith("--pid=")), None)
                if proc.info["name"] == "vgdb" and "dump" in cmd and (out / f"callgrind.out.{pid}").exists():
                    killed.append(int(pid))
                    os.kill(killed[0], signal.SIGKILL)
                    break
            time.sleep(0.01)

    watcher = threading.Thread(target=kill_the_first_server_as_it_dumps, daemon=True)
    watcher.start()
    counts = instructions.count_instructions(launcher, default_target, ServerOptions(innodb_buffer_pool_size="64M"),
                                          scan, "uca1400", tmp_path / "cg", repeats=3)
    watcher.join(timeout=5)
    dumped = {int(d.name.split(".")[2]) for d in out.glob("callgrind.out.*.*-*")}
    assert len(killed) == 1 and dumped - set(killed), "a second server counted the windows"
    assert len(counts.counts) == len(counts.own) == 3
    # The statement's own thread repeats to ~0.05%; background threads' wake-ups (60k instructions,
    # 1.2% of this scan in one CI run) add to the all-thread counts only.
    assert counts.own_spread < 0.001, counts.own
    assert all(own <= total for own, total in zip(counts.own, counts.counts))
    assert counts.own_per_row > 100   # a UCA comparison per row is hundreds of instructions
    assert counts.per_row >= counts.own_per_row
    assert counts.top()["instructions"].sum() > 0
    assert counts.top()["named"].any()
    assert not any(pid_alive(p) for p in _server_pids(launcher))


def _server_pids(launcher) -> list[int]:
    return [int(p.read_text()) for p in launcher.workdir.glob("*/server.pid")]
