"""Process and machine counters (accounting), read from this very process and machine."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from claimlab import accounting
from claimlab.errors import WorkloadError

# a whole-disk line of Linux 5.5+ /proc/diskstats: 17 counters, the 16th (index 18) is flushes
LINE = "253 0 {name} 100 0 800 10 200 5 1600 20 0 30 40 0 0 0 0 {flushes} 7"


def _in_a_thread(work) -> tuple[threading.Event, threading.Thread]:
    """Run `work` in a thread of this process, keeping the thread alive until read."""
    done, release = threading.Event(), threading.Event()

    def body():
        work()
        done.set()
        release.wait()

    thread = threading.Thread(target=body)
    thread.start()
    done.wait()
    return release, thread


def test_context_switches_are_summed_over_every_thread():
    """A server waits in its connection threads, not its main one (psutil alone counts the main)."""
    before = accounting.process_times(os.getpid())
    release, thread = _in_a_thread(lambda: [time.sleep(0.001) for _ in range(200)])
    try:
        after = accounting.process_times(os.getpid())
    finally:
        release.set()
        thread.join()
    assert after.voluntary - before.voluntary >= 200


def test_cpu_time_counts_every_thread():
    def burn():
        start = time.thread_time()
        while time.thread_time() - start < 0.2:
            sum(range(1000))

    before = accounting.process_times(os.getpid())
    release, thread = _in_a_thread(burn)
    after = accounting.process_times(os.getpid())
    release.set()
    thread.join()
    spent = after - before
    assert spent.user_s + spent.system_s >= 0.18   # CPU seconds, clock ticks of 10 ms


def test_a_process_that_ended_has_no_times():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert accounting.process_times(child.pid) is None


def test_a_command_name_with_spaces_and_parentheses_is_read(tmp_path):
    """/proc/<pid>/stat puts the command name in parentheses, and a name may hold both."""
    odd = tmp_path / "x) (y z"
    odd.write_bytes(open("/bin/sleep", "rb").read())
    odd.chmod(0o755)
    child = subprocess.Popen([str(odd), "30"])
    try:
        time.sleep(0.1)
        with open(f"/proc/{child.pid}/stat", "rb") as fh:
            assert b"(x) (y z)" in fh.read()
        times = accounting.process_times(child.pid)
        assert times is not None and times.user_s >= 0 and times.system_s >= 0 and times.voluntary >= 0
    finally:
        child.kill()
        child.wait()


def test_disk_flushes_are_read_per_disk_and_summed():
    text = "\n".join([LINE.format(name="vda", flushes=5), LINE.format(name="vda1", flushes=4),
                      LINE.format(name="sdb", flushes=11)])
    assert accounting.disk_flushes(frozenset({"vda", "sdb"}), text) == 16
    assert accounting.disk_flushes(frozenset({"vda"}), text) == 5


@pytest.mark.parametrize("text, message", [
    ("8 0 vda 1 2 3 4 5 6 7 8 9 10 11", "line 1: disk vda has no flush count"),   # before Linux 5.5
    (LINE.format(name="vda", flushes="x"), "flush count 'x' is not a number"),
    (LINE.format(name="sdb", flushes=3), "no line for disk vda"),
])
def test_an_unreadable_flush_count_is_an_error_never_zero(text, message):
    with pytest.raises(WorkloadError, match=message):
        accounting.disk_flushes(frozenset({"vda"}), text)


def test_this_machines_disks_are_read():
    """Whatever disk this machine has: its counters are found and only grow."""
    first = accounting.machine()
    second = accounting.machine()
    assert len(first.cpu) == len(accounting.CPU_STATES)
    for name in ("disk_writes", "disk_write_bytes", "disk_flushes"):
        assert getattr(second, name) >= getattr(first, name) >= 0


def test_machine_metrics_are_shares_of_all_cpu_time_and_disk_deltas():
    before = accounting.MachineSample(0.0, (10, 0, 5, 80, 4, 0, 0, 1), 100, 4096, 7)
    #                        +4 user, +2 system, +10 idle, +2 iowait, +2 steal = 20 s in all
    after = accounting.MachineSample(1.0, (14, 0, 7, 90, 6, 0, 0, 3), 130, 4096 + 8192, 10)
    got = {m.name: (m.value, m.unit) for m in accounting.machine_metrics(before, after)}
    assert got == {"machine_busy_share": (8 / 20, "share"), "machine_iowait_share": (2 / 20, "share"),
                   "machine_steal_share": (2 / 20, "share"), "disk_writes": (30, "count"),
                   "disk_flushes": (3, "count"), "disk_write_bytes": (8192, "bytes")}
    assert accounting._others_cpu(before, after, own_cpu_s=3.0) == pytest.approx(8 - 3)


def test_bytes_written_by_another_process_are_seen_and_ours_left_out(tmp_path):
    writer = subprocess.Popen([sys.executable, "-c", (
        "import os, sys\n"
        f"with open({str(tmp_path / 'w.bin')!r}, 'wb') as f:\n"
        "    f.write(os.urandom(1 << 20)); f.flush(); os.fsync(f.fileno())\n"
        "print('done', flush=True)\n"
        "sys.stdin.read()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "done\n"
        written = accounting.user_write_bytes({os.getpid()})
        assert written[writer.pid] >= 1 << 20
        assert os.getpid() not in written
        assert writer.pid not in accounting.user_write_bytes({writer.pid})
        # a pid remembered as a kernel thread is not read again; one remembered as a user process is
        assert writer.pid not in accounting.user_write_bytes({os.getpid()}, {writer.pid: False})
        kinds: dict[int, bool] = {}
        assert accounting.user_write_bytes({os.getpid()}, kinds)[writer.pid] >= 1 << 20
        assert kinds[writer.pid] is True and os.getpid() not in kinds
    finally:
        writer.stdin.close()
        writer.wait()


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_quiet_check_does_not_count_claimlabs_own_work_in_its_window():
    """The warm-up runs inside the quiet check's window: its CPU (here, this process spinning a
    core) is ours. Windows with and without the spin, alternated, read the same others' load:
    counted, the spin would add a whole core. (Compared in pairs, not against the threshold, so
    a neighbour on a shared machine cannot fail it.)"""
    def others(spin: bool) -> float:
        window = accounting.LoadWindow([])
        _spin(0.4) if spin else time.sleep(0.4)
        return window.read()[0]

    spun, idle = zip(*((others(True), others(False)) for _ in range(3)))
    assert sorted(spun)[1] < sorted(idle)[1] + 0.5, (spun, idle)


def test_the_quiet_check_sees_a_neighbour_busy_during_its_window():
    """A window with another process spinning on the CPU: not quiet, and with no time left to
    wait, flagged."""
    spinner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 20\n"
                                "while time.time() < end: pass\n"])
    try:
        time.sleep(0.2)
        window = accounting.LoadWindow([])
        time.sleep(0.3)
        busy, cpu, _ = accounting.wait_until_quiet([], max_wait=0.0, since=window)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy and cpu > accounting.MAX_OTHER_CPU_CORES, cpu
