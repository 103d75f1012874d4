"""An interrupted `claimlab report` (SIGTERM, as Ctrl-C's SIGINT) stops the servers of the run
its notebook kernel is making: the kernel runs in a session of its own, so the signal reaches
only the command, which passes it on and waits, instead of killing the kernel and leaving its
servers running (real MariaDB). Before, the command died at once and the kernel after it, and
the servers ran on until the next claimlab reaped them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil

from conftest import ROOT, pid_alive


def _kernel_servers_below(pid: int) -> list[psutil.Process]:
    """The MariaDB servers below `pid` that are not its own children (the command's preloading
    starts and stops a server of its own; it may exit between listing and reading its parent)."""
    servers = []
    try:
        below = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    for p in below:
        try:
            if p.name() == "mariadbd" and p.ppid() != pid:
                servers.append(p)
        except psutil.NoSuchProcess:
            continue
    return servers


def test_sigterm_to_a_report_stops_the_servers_of_its_kernels_run(tmp_path, mariadbd):
    env = dict(os.environ, CLAIMLAB_DATADIRS=str(tmp_path / "datadirs"))
    # C1's quick run on MariaDB: about a minute of sysbench bursts, so the signal lands mid-run
    cmd = [sys.executable, "-m", "claimlab.cli", "report", "--profile", "quick", "--only", "charset_mismatch",
           "--targets", "mariadb", "--out", str(tmp_path / "reports"), "--data", str(tmp_path / "raw"),
           "--figures", str(tmp_path / "figures")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        servers: list[psutil.Process] = []
        while time.monotonic() < deadline and proc.poll() is None:
            # a server of the kernel's run: below the kernel, not the command's own preloading
            run_dirs = list((tmp_path / "raw" / "charset_mismatch").glob("*")) if (tmp_path / "raw").exists() else []
            servers = _kernel_servers_below(proc.pid)
            if run_dirs and servers:
                break
            time.sleep(0.05)
        assert servers, f"no server of the report's run came up: {proc.poll()} {proc.stderr.read()[-2000:]}"
        pids = [s.pid for s in servers]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted by SIGTERM" in err
    assert not any(pid_alive(pid) for pid in pids), "the kernel's servers were left running"
    # the kernel's run was cut short by the signal (it did not just end first), and says so
    (run_dir,) = (tmp_path / "raw" / "charset_mismatch").iterdir()
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"
    # the command names the run its kernel made and how to finish it (before: "run RUN_ID")
    assert (f"claimlab: {run_dir.name} keeps what was measured; resume with: claimlab run charset_mismatch "
            f"--profile quick --target mariadb --data {tmp_path / 'raw'} --resume {run_dir.name}") in err, err[-2000:]
