"""Servers left behind by a claimlab that was killed (SIGKILL, power loss): found and stopped at
the next claimlab start that may start servers, never left running until someone notices.

A run's directory under the work root holds a `.lock` that the live run keeps locked; a directory
whose lock nobody holds belongs to a dead run. Its servers are stopped by their pid files, and only
when the process's command line names that directory's option file, so a recycled pid is never hit.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import time
from pathlib import Path
from typing import Iterator

import psutil

from .local import remove_socket_dir

REAPER_LOCK = ".reaper.lock"


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


def reap_stale(work_root: Path) -> list[int]:
    """Stop the servers of dead runs and remove their directories. Call with the reaper lock
    held (`reaping`)."""
    reaped: list[int] = []
    if not work_root.is_dir():
        return reaped
    for run_dir in sorted(p for p in work_root.iterdir() if (p / ".lock").exists()):
        with open(run_dir / ".lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue   # a live run owns it
            for pid_file in run_dir.glob("*/server.pid"):
                pid = _read_pid(pid_file)
                if pid and _started_with(pid, pid_file.parent / "my.cnf"):
                    _terminate(pid)
                    reaped.append(pid)
            for home in (cnf.parent for cnf in run_dir.glob("*/my.cnf")):
                remove_socket_dir(home)
            shutil.rmtree(run_dir, ignore_errors=True)
    return reaped


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
