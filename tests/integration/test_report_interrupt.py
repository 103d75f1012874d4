"""An interrupted `claimlab report` (Ctrl-C's SIGINT, as `make report` gets it) stops every server
of the run it is making: the runs happen in the command's own process (claimlab.campaign), whose
runner stops its servers on the way out; no notebook kernel stands between the signal and the
servers (real MariaDB). The command then names the cut run and the exact command that finishes it
and renders the reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil

from conftest import ROOT, pid_alive


def _servers_of_run(pid: int, run_id: str) -> list[psutil.Process]:
    """The MariaDB servers below the command that belong to run `run_id` (their option file lies
    in the run's work directory), not the preloading's servers."""
    servers = []
    try:
        below = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    for p in below:
        try:
            if p.name() == "mariadbd" and any(run_id in arg for arg in p.cmdline()):
                servers.append(p)
        except psutil.NoSuchProcess:
            continue
    return servers


def _between(server: psutil.Process, pid: int) -> list[psutil.Process]:
    """The processes from `server`'s parent up to (not including) `pid`."""
    chain = []
    for parent in server.parents():
        if parent.pid == pid:
            return chain
        chain.append(parent)
    return chain


def test_sigint_to_a_report_stops_every_server_of_its_run_and_says_how_to_resume(tmp_path, mariadbd):
    env = dict(os.environ, CLAIMLAB_DATADIRS=str(tmp_path / "datadirs"))
    raw = tmp_path / "raw"
    # C1's quick run on MariaDB: about a minute of sysbench bursts, so the signal lands mid-run
    cmd = [sys.executable, "-m", "claimlab.cli", "report", "--profile", "quick", "--only", "charset_mismatch",
           "--targets", "mariadb", "--out", str(tmp_path / "reports"), "--data", str(raw),
           "--figures", str(tmp_path / "figures")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        servers: list[psutil.Process] = []
        while time.monotonic() < deadline and proc.poll() is None:
            run_dirs = list((raw / "charset_mismatch").glob("*")) if raw.exists() else []
            servers = _servers_of_run(proc.pid, run_dirs[0].name) if run_dirs else []
            if servers:
                break
            time.sleep(0.05)
        assert servers, f"no server of the report's run came up: {proc.poll()} {proc.stderr.read()[-2000:]}"
        # the servers are the command's own: its run phase, not a notebook kernel, started them
        assert not [a for s in servers for a in _between(s, proc.pid) if "ipykernel" in " ".join(a.cmdline())]
        pids = [s.pid for s in servers]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:   # a failed check above: stop it as a reader would, then for good
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=240)
            except subprocess.TimeoutExpired:
                proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted by SIGINT" in err
    assert not any(pid_alive(pid) for pid in pids), "the run's servers were left running"
    assert not (tmp_path / "reports").exists(), "nothing is rendered from a cut run phase"
    # the run was cut short by the signal (it did not just end first), and says so
    (run_dir,) = (raw / "charset_mismatch").iterdir()
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "interrupted"
    # the command names the run and the exact command that finishes it and renders the reports
    assert (f"claimlab: {run_dir.name} keeps what was measured; resume with: claimlab run charset_mismatch "
            f"--profile quick --target mariadb --data {raw} --resume {run_dir.name} && claimlab report "
            f"--from-data {run_dir.name} --data {raw}") in err, err[-2000:]
