"""Servers and load generators left behind by a claimlab that was killed (SIGKILL, power loss):
found and stopped at the next claimlab start that may start servers, never left running until
someone notices.

A run's directory under the work root holds a `.lock` that the live run keeps locked, and a marker
(`MARKER`) naming the run, written when the run claimed the directory. Only a directory with both,
whose marker names the directory itself, is claimlab's: anything else under `--work` (a project
that happens to hold a `.lock`, a symbolic link to anywhere) is never touched, and nothing is
reached through a symbolic link. A marked directory whose lock nobody holds belongs to a dead
run. Its servers are stopped when the process's command line names that directory's option file
(found by their pid files, and by a scan for one killed before it wrote its own), and its sysbench
processes by their pid files, only when the process started at the recorded time, so a recycled
pid is never hit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Iterator

import psutil

from .local import remove_socket_dir

REAPER_LOCK = ".reaper.lock"
MARKER = ".claimlab-work.json"
LOAD_PID_GLOB = "sysbench-*.pid"


@contextlib.contextmanager
def reaping(work_root: Path) -> Iterator[list[int]]:
    """Reap dead runs under `work_root` and hold the reaper lock until the block ends: a run that
    is starting claims its directory inside the block, so it is never mistaken for a dead one.
    Yields the pids stopped."""
    work_root.mkdir(parents=True, exist_ok=True)
    with open(work_root / REAPER_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield reap_stale(work_root)


def reap(work_root: Path) -> list[int]:
    """What the command line calls at start: reap and release (pids stopped)."""
    if not work_root.is_dir():
        return []
    with reaping(work_root) as reaped:
        return reaped


def mark(work: Path, run_id: str) -> None:
    """Say that `work` is the work directory of run `run_id`, made by claimlab (`reap_stale`
    removes nothing else)."""
    (work / MARKER).write_text(json.dumps({"run_id": run_id, "made_by": "claimlab"}) + "\n")


def is_marked(run_dir: Path) -> bool:
    """Whether `run_dir` is a real directory (not a link) that claimlab made for a run: its marker
    (a regular file, not a link) names the directory's own name."""
    try:
        if not stat.S_ISDIR(os.lstat(run_dir).st_mode) or not stat.S_ISREG(os.lstat(run_dir / MARKER).st_mode):
            return False
        record = json.loads((run_dir / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("made_by") == "claimlab" and record.get("run_id") == run_dir.name


def reap_stale(work_root: Path) -> list[int]:
    """Stop the servers and load generators of dead runs and remove their directories. Call with
    the reaper lock held (`reaping`)."""
    reaped: list[int] = []
    if not work_root.is_dir():
        return reaped
    for run_dir in sorted(p for p in work_root.iterdir() if is_marked(p) and _regular(p / ".lock")):
        with open(run_dir / ".lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue   # a live run owns it
            homes = [h for h in run_dir.iterdir() if _real_dir(h)]
            for pid_file in (f for d in [run_dir, *homes] for f in d.glob(LOAD_PID_GLOB) if _regular(f)):
                pid = _stop_load_generator(pid_file)
                if pid:
                    reaped.append(pid)
            for home in homes:
                pid_file, cnf = home / "server.pid", home / "my.cnf"
                pid = _read_pid(pid_file) if _regular(pid_file) else None
                pids = {pid} if pid and _started_with(pid, cnf) else set()
                if _regular(cnf):   # one killed between its start and its pid file has none
                    pids |= _started_with_file(cnf)
                for pid in sorted(pids):
                    _terminate(pid)
                    reaped.append(pid)
                if _regular(cnf):
                    remove_socket_dir(home)
            shutil.rmtree(run_dir, ignore_errors=True)   # never follows a link (shutil's fd-based walk)
    return reaped


def record_load_generator(directory: Path, pid: int) -> Path | None:
    """A pid file for a load generator (sysbench) claimlab started: its pid and start time, so that
    the reaper stops it if claimlab dies first, and only it. None if it has ended already."""
    try:
        started = psutil.Process(pid).create_time()
    except psutil.Error:
        return None
    path = directory / f"sysbench-{pid}.pid"
    path.write_text(f"{pid} {started!r}\n")
    return path


def _stop_load_generator(pid_file: Path) -> int | None:
    try:
        pid_text, started = pid_file.read_text().split()
        pid, started_at = int(pid_text), float(started)
        process = psutil.Process(pid)
        if abs(process.create_time() - started_at) > 0.01:
            return None     # the pid was recycled
    except (OSError, ValueError, psutil.Error):
        return None
    _terminate(pid)
    return pid


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _started_with(pid: int, cnf: Path) -> bool:
    try:
        return f"--defaults-file={cnf}" in psutil.Process(pid).cmdline()
    except psutil.Error:   # gone, a zombie, or not ours to read
        return False


def _started_with_file(cnf: Path) -> set[int]:
    """Every process whose command line names this option file: a server, or an initialisation's
    own server, whose claimlab died before it wrote a pid file (seen when a Dask worker was killed
    as its servers started: the server ran on, unattached, through later measurements)."""
    wanted = f"--defaults-file={cnf}"
    found = set()
    for process in psutil.process_iter(["cmdline"]):
        try:
            if wanted in (process.info["cmdline"] or []) and process.status() != psutil.STATUS_ZOMBIE:
                found.add(process.pid)
        except psutil.Error:
            continue
    return found


def _terminate(pid: int, timeout: float = 30.0) -> None:
    """TERM, then KILL after `timeout`. A zombie has exited: only its parent can reap it (init,
    once the claimlab that started it is dead), so waiting for its pid to vanish would wait out
    the timeout for nothing."""
    try:
        process = psutil.Process(pid)
        process.terminate()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.status() == psutil.STATUS_ZOMBIE:
                return
            time.sleep(0.1)
        process.kill()
    except psutil.NoSuchProcess:
        pass
