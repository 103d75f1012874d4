"""What claimlab guarantees when something goes wrong (docs/faults.md), each on real MariaDB:
nothing outside its own folders is removed; one writer per run; a refused run touches nothing;
no secret on disk and no orphan left running; hand edits are refused on resume after any stop;
a full disk is one line and a closed run."""

import csv
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from claimlab import datacache, params, runner
from claimlab.errors import DataError
from claimlab.servers import Launcher, ServerOptions, TargetSpec, reaper
from claimlab.store import read_manifest, read_results
from claimlab.writer import RunStore
from conftest import ROOT, SMALL_SCAN, pid_alive, query, run_cli, wait_for

INSERTS = """
claim: C4
targets:
  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}
workloads:
  ins: {kind: proc_insert_loop, rows: 1500}
factors:
  binlog:
    "off": {server: {log_bin: false}}
    "on": {server: {log_bin: true, sync_binlog: 1}}
design: {repetitions: 2, warmup: 0, iterations: 3, max_attempts: 3}
"""
EXTERNAL = """
claim: C2
targets:
  theirs: {{kind: external, socket: {socket}, user: root, password_env: CLAIMLAB_TEST_PW}}
workloads:
  {workload}
design: {{repetitions: 1, warmup: 0, iterations: 1}}
"""
KEYS = ["condition", "workload", "repetition", "iteration", "metric"]


def _one_line(result, *words):
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def _cli(*args, env=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "claimlab.cli", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})}, start_new_session=True)


def _measurements(run_dir: Path) -> int:
    path = run_dir / "results.csv"
    return max(0, len(path.read_text().splitlines()) - 1) if path.exists() else 0


# --------------------------------------------------------------------------- nothing else removed

def test_the_reaper_leaves_a_folder_claimlab_did_not_make(tmp_path, mariadbd):
    work = tmp_path / "V"
    project = work / "proj"                       # someone's folder that happens to hold a `.lock`
    (project / "src").mkdir(parents=True)
    (project / ".lock").touch()
    (project / "src" / "f").write_text("x")
    result = run_cli("diff", "no_such_target", "no_such_target", "--work", str(work))
    assert result.returncode == 1 and "no_such_target" in result.stderr, result.stderr
    assert (project / "src" / "f").read_text() == "x" and (project / ".lock").exists()


def test_the_reaper_never_goes_through_a_link_nor_trusts_a_foreign_marker(tmp_path, mariadbd):
    work = tmp_path / "V"
    work.mkdir()
    elsewhere = tmp_path / "elsewhere" / "link"   # a dead run's folder, but reached through a link
    elsewhere.mkdir(parents=True)
    (elsewhere / ".lock").touch()
    reaper.mark(elsewhere, "link")
    (elsewhere / "keep").write_text("y")
    sockdir = tmp_path / "claimlab-sock"          # what a server's option file there names
    sockdir.mkdir()
    (elsewhere / "home").mkdir()
    (elsewhere / "home" / "my.cnf").write_text(f"[mysqld]\nsocket={sockdir}/mysqld.sock\n")
    (work / "link").symlink_to(elsewhere)
    forged = work / "forged"                      # a marker naming another run
    forged.mkdir()
    (forged / ".lock").touch()
    reaper.mark(forged, "someone-else")
    result = run_cli("diff", "no_such_target", "no_such_target", "--work", str(work))
    assert result.returncode == 1 and "no_such_target" in result.stderr, result.stderr
    assert (elsewhere / "keep").read_text() == "y" and (work / "link").is_symlink()
    assert sockdir.is_dir(), "nothing is removed through a link"
    assert forged.is_dir()


# --------------------------------------------------------------------------- one writer per run

def test_a_live_run_refuses_a_second_writer_whatever_its_work(tmp_path, write_params, mariadbd):
    path = write_params(SMALL_SCAN)
    real = RunStore.append
    seen = {"n": 0}

    def append(self, record):
        seen["n"] += 1
        if seen["n"] == 3:     # the run is live, mid-unit: a resume with another --work
            seen["resume"] = run_cli("run", str(path), "--data", str(tmp_path / "raw"), "--work",
                                     str(tmp_path / "W2"), "--no-progress", "--resume", self.run_id)
        real(self, record)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RunStore, "append", append)
        outcome = runner.run(params.load(path), data_root=tmp_path / "raw", work_root=tmp_path / "W1",
                             progress=False)
    _one_line(seen["resume"], "still running", outcome.run_id)
    df = read_results(outcome.path)
    assert not df.duplicated(KEYS).any() and df.groupby(KEYS[:-1]).ngroups == 12
    assert outcome.status == "complete" and read_manifest(outcome.path)["status"] == "complete"
    assert not (tmp_path / "W2" / outcome.run_id).exists()


# --------------------------------------------------------------------------- refused runs touch nothing

def test_a_run_refused_on_an_external_target_touches_nothing(tmp_path, write_params, server, monkeypatch):
    """The first run holds the server (its named lock) and has loaded its schema: a second run is
    refused, drops nothing of the first's and leaves no run folder."""
    monkeypatch.setenv("CLAIMLAB_TEST_PW", server.password)
    socket = server.connect_args()["unix_socket"]
    path = write_params(EXTERNAL.format(socket=socket, workload="scan: {kind: varchar_scan, rows: 50}"))
    exp = params.load(path)
    schema = exp.workloads[0].schema()
    first = Launcher(tmp_path / "first")
    first.prepare(exp.targets["theirs"], ServerOptions())   # what a live run holds
    try:
        query(server, f"CREATE DATABASE `{schema}`")
        query(server, "CREATE TABLE t (a INT)", database=schema)
        result = run_cli("run", str(path), "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"),
                         "--no-progress", env={"CLAIMLAB_TEST_PW": server.password})
        _one_line(result, "another claimlab run is using this server")
        assert query(server, "SHOW TABLES", database=schema) == [("t",)]
        assert not list((tmp_path / "raw").rglob("*")), "a refused run leaves no run folder"
    finally:
        first.close()


# --------------------------------------------------------------------------- after SIGKILL

def test_after_sigkill_hand_edits_are_refused_and_the_resume_reaps_its_servers_from_any_work(
        tmp_path, write_params, mariadbd):
    path = write_params(INSERTS)
    proc = _cli("run", str(path), "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "W1"), "--no-progress")
    try:
        run_dir = wait_for(lambda: next((tmp_path / "raw" / "exp").glob("*"), None)
                            if (tmp_path / "raw" / "exp").is_dir() else None)
        wait_for(lambda: _measurements(run_dir) >= 6)
        proc.kill()                      # SIGKILL: no handler runs, no checksum is written
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.communicate()
    servers = [json.loads(x)["pid"] for x in (run_dir / "servers.jsonl").read_text().splitlines()]
    orphans = [p for p in servers if pid_alive(p)]
    assert orphans, "expected the killed run's server to be left running"
    assert read_manifest(run_dir)["status"] == "running"

    results = run_dir / "results.csv"
    original = results.read_bytes()
    lines = original.decode().splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    row = next(csv.reader([lines[1]]))
    row[header.index("value")] = repr(float(row[header.index("value")]) * 2)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    results.write_bytes("".join([lines[0], buf.getvalue(), *lines[2:]]).encode())
    files = _files(run_dir)
    resume = ["run", str(path), "--data", str(tmp_path / "raw"), "--no-progress", "--resume", run_dir.name]
    _one_line(run_cli(*resume, "--work", str(tmp_path / "W2")), "results.csv", "checksum")
    assert _files(run_dir) == files

    results.write_bytes(original)
    result = run_cli(*resume, "--work", str(tmp_path / "W2"))
    assert result.returncode == 0, result.stderr
    assert not any(pid_alive(p) for p in orphans), "the resume stops the servers it left under --work W1"
    assert not (tmp_path / "W1" / run_dir.name).exists()
    df = read_results(run_dir)
    assert not df.duplicated(KEYS).any() and df.groupby(KEYS[:-1]).ngroups == 12


def test_the_resume_hint_is_the_whole_command(tmp_path, write_params, mariadbd):
    path = write_params(INSERTS)
    proc = _cli("run", str(path), "--profile", "quick", "--data", str(tmp_path / "raw"), "--work",
                str(tmp_path / "W1"), "--no-progress")
    try:
        run_dir = wait_for(lambda: next((tmp_path / "raw" / "exp").glob("*"), None)
                            if (tmp_path / "raw" / "exp").is_dir() else None)
        wait_for(lambda: _measurements(run_dir) >= 1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert (f"claimlab run {path} --profile quick --data {tmp_path / 'raw'} --work {tmp_path / 'W1'} "
            f"--resume {run_dir.name}") in err, err


def _sysbench_of(session: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        try:
            if cmd and cmd[0].endswith("sysbench") and "run" in cmd and os.getsid(proc.pid) == session:
                found.append(proc)
        except OSError:
            continue
    return found


def test_external_sysbench_keeps_no_secret_on_disk_and_is_reaped_after_sigkill(tmp_path, write_params, server):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    socket = server.connect_args()["unix_socket"]
    path = write_params(EXTERNAL.format(
        socket=socket, workload="oltp: {kind: sysbench, test: oltp_point_select, table_size: 100, time: 60}"))
    env = {"CLAIMLAB_TEST_PW": server.password, "TMPDIR": str(tmpdir)}
    work = tmp_path / "work"
    proc = _cli("run", str(path), "--data", str(tmp_path / "raw"), "--work", str(work), "--no-progress", env=env)
    orphans = []
    try:
        orphans = wait_for(lambda: _sysbench_of(proc.pid))     # in its measured phase now
        secrets = [p for p in tmpdir.rglob("*") if p.is_file() and server.password in p.read_text(errors="replace")]
        assert not secrets, f"the password is in {secrets}"
        assert all(server.password not in " ".join(p.cmdline()) for p in orphans)
        proc.kill()
        proc.wait(timeout=30)
        assert all(p.is_running() for p in orphans), "expected sysbench to outlive the killed claimlab"
        result = run_cli("diff", "no_such_target", "no_such_target", "--work", str(work))
        assert "no_such_target" in result.stderr, result.stderr
        assert not any(pid_alive(p.pid) for p in orphans), "the reaper stops a dead run's sysbench"
        assert not [p for p in tmpdir.rglob("*") if p.is_file()]
    finally:
        proc.kill()
        proc.communicate()
        for p in orphans:
            if pid_alive(p.pid):
                p.kill()


# --------------------------------------------------------------------------- a full disk

@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8M", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(directory: Path) -> None:
    with open(directory / "filler", "ab") as fh:
        try:
            while True:
                fh.write(b"\0" * (64 << 10))
                fh.flush()
        except OSError:
            pass


def test_a_run_whose_data_disk_fills_up_is_closed_as_failed(tmp_path, write_params, mariadbd, small_fs):
    path = write_params(SMALL_SCAN)
    real = RunStore.append
    seen = {"n": 0}

    def append(self, record):
        seen["n"] += 1
        if seen["n"] == 2:
            _fill(small_fs)
        real(self, record)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RunStore, "append", append)
        with pytest.raises(DataError, match="cannot write"):
            runner.run(params.load(path), data_root=small_fs / "raw", work_root=tmp_path / "work", progress=False)
    (run_dir,) = (small_fs / "raw" / "exp").iterdir()
    assert read_manifest(run_dir)["status"] == "failed"
    assert not [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]
    assert len(read_results(run_dir)) > 0


def test_a_full_work_disk_is_one_line(tmp_path, mariadbd, small_fs, monkeypatch):
    """What `--data` on a full disk says, `--work` says too (not a copy's traceback)."""
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "cache"))
    entry = tmp_path / "cache" / ("k" * 24) / "data"
    entry.mkdir(parents=True)
    (entry / "ibdata1").write_bytes(b"\1" * (12 << 20))
    server = Launcher(small_fs / "work").prepare(TargetSpec(name="default", kind="mariadb"), ServerOptions())
    with pytest.raises(DataError) as err:
        datacache.restore(server, "k" * 24)
    message = str(err.value)
    assert "\n" not in message and "No space left on device" in message and "--work" in message, message
    assert not (server.home / "data.partial").exists() and not server.datadir.exists()
