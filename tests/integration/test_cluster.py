"""Experiments spread over Dask workers, for real: a scheduler and three worker processes, each
with its own working directory, data-directory cache and binary placements, running two claims'
smoke profiles on the embedded MariaDB. One worker is killed mid-run and comes back; one cannot
start servers; a client is killed and its session resumed; a worker killed for good has its job
moved to the host of its kind. The pooled table is checked against each host's own analysis.

Addresses: the scheduler and each worker run in a network namespace of their own, on an address
of a bridge the test makes (the client, this test, on the bridge in the machine's namespace);
where namespaces cannot be made (not root), on loopback addresses 127.0.0.1-4, and the fixture
says so (`hostnet`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import warnings
from concurrent.futures import Future
from pathlib import Path

import pandas as pd
import psutil
import pytest

from claimlab import cluster, hosts_view, transfer
from claimlab import journal as journal_mod
from claimlab.errors import ClaimlabError, DataError
from claimlab.records import RunManifest
from claimlab.report import analyze_runs
from claimlab.servers import reap
from claimlab.store import read_results
from claimlab.writer import RunStore
from conftest import ROOT, frozen, frozen_id, module_scratch, run_cli
from hostnet import HostNetwork, make

DASK = str(Path(sys.executable).with_name("dask"))
KINDS = {"bench-a": "epyc", "bench-b": "epyc", "bench-c": ""}    # the worker hosts and their kinds
EXPERIMENTS = ["binlog_default", "collation_cost"]
# bench-c's servers cannot start: its `mariadbd` answers --version and exits at once otherwise
BROKEN = """#!/bin/sh
case "$1" in --version) exec {real} --version;; esac
for arg in "$@"; do case "$arg" in --defaults-file=*) options="${{arg#--defaults-file=}}";; esac; done
log=$(sed -n 's/^log-error=//p' "$options" 2>/dev/null | head -n 1)
echo "[ERROR] mariadbd: this host's data disk is not mounted" >> "${{log:-/dev/stderr}}"
exit 1
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """The scheduler and the workers this test started, by pid; nothing else is touched."""

    def __init__(self, root: Path, mariadbd: str, net: HostNetwork):
        self.root, self.mariadbd, self.net = root, mariadbd, net
        host = net.addresses["scheduler"]
        self.address = f"tcp://{host}:{_free_port() if net.why_loopback else 8786}"
        self.procs: dict[str, subprocess.Popen] = {}
        # the HTTP routes (health, metrics) listen even without the dashboard: on all addresses
        # unless told otherwise
        self.start("scheduler", [DASK, "scheduler", "--host", host, "--port", self.address.rsplit(":", 1)[1],
                                 "--no-dashboard", "--dashboard-address", f"{host}:0"], self.env())

    def start(self, name: str, cmd: list[str], env: dict) -> None:
        log = open(self.root / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(self.net.command(name, cmd), cwd=ROOT, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)

    def env(self, **more: str) -> dict[str, str]:
        """Dask's scratch space (a killed worker's stays behind) in the test's directory, not /tmp."""
        return dict(os.environ, DASK_TEMPORARY_DIRECTORY=str(self.root / "dask-scratch"), **more)

    def worker_dir(self, name: str) -> Path:
        return self.root / name

    def start_worker(self, name: str) -> None:
        home = self.worker_dir(name)
        env = self.env(CLAIMLAB_WORKER_DIR=str(home), CLAIMLAB_DATADIRS=str(home / "datadirs"),
                       CLAIMLAB_PLACEMENT_DIR=str(home / "placement"), CLAIMLAB_CACHE=str(home / "cache"))
        (home / "placement").mkdir(parents=True, exist_ok=True)
        if name == "bench-c":
            bin_dir = home / "bin"
            bin_dir.mkdir(exist_ok=True)
            (bin_dir / "mariadbd").write_text(BROKEN.format(real=self.mariadbd))
            (bin_dir / "mariadbd").chmod(0o755)
            env["PATH"] = f"{bin_dir}:{env['PATH']}"
        resources = "host=1" + (f",{cluster.KIND}{KINDS[name]}=1" if KINDS[name] else "")
        address = self.net.addresses[name]
        self.start(name, [DASK, "worker", self.address, "--name", name, "--host", address,
                          "--resources", resources, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                          "--dashboard-address", f"{address}:0"], env)

    def wait_for(self, names: set[str], timeout: float = 60) -> dict[str, str]:
        from distributed import Client
        deadline = time.monotonic() + timeout
        with Client(self.address, timeout=timeout) as client:
            while set(cluster.hosts(client)) < names:
                assert time.monotonic() < deadline, f"workers {names} did not join: see {self.root}/*.log"
                time.sleep(0.3)
            return cluster.hosts(client)

    def http_ports(self) -> dict[str, int]:
        """The port of each process's HTTP routes, as the scheduler knows them."""
        from distributed import Client
        with Client(self.address, timeout=30) as client:
            info = client.scheduler_info(n_workers=-1)
        return {"scheduler": info["services"]["dashboard"]} | \
            {w["name"]: w["services"]["dashboard"] for w in info["workers"].values()}

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait(timeout=30)

    def close(self) -> None:
        for name in [n for n in self.procs if n != "scheduler"] + ["scheduler"]:
            proc = self.procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for name in KINDS:    # servers a killed worker's runner left behind, in its own work directory
            reap(self.worker_dir(name) / "work")


@pytest.fixture(scope="module")
def dask_cluster(request, tmp_path_factory, mariadbd):
    with module_scratch(request, tmp_path_factory, "cluster") as base:
        yield from _cluster(base, mariadbd)


def _cluster(base, mariadbd):
    net = make(["scheduler", *KINDS])
    print(net.describe())
    if net.why_loopback:    # in the summary too: the weaker set-up is not to pass unseen
        warnings.warn(net.describe(), stacklevel=1)
    try:
        c = Cluster(base, mariadbd, net)
        try:
            for name in KINDS:
                c.start_worker(name)
            assert c.wait_for(set(KINDS)) == {name: net.addresses[name] for name in KINDS}
            # each only on the address it was given, its HTTP routes included
            for name, http in c.http_ports().items():
                listening = net.listening(name, c.procs[name].pid)
                assert {ip for ip, _ in listening} == {net.addresses[name]} and http in {p for _, p in listening}, \
                    (name, listening)
            yield c
        finally:
            c.close()
    finally:
        net.close()


def _started_measuring(worker_dir: Path) -> bool:
    """A run under way on the worker: its results hold a measurement, the run is not finished."""
    for manifest in worker_dir.glob("runs/*/*/manifest.json"):
        results = manifest.parent / "results.csv"
        if json.loads(manifest.read_text())["status"] == "running" and results.exists() \
                and results.read_text().count("\n") > 1:
            return True
    return False


def _session_losing_bench_a(dask_cluster, store: Path, experiments: list[str], **options):
    """`cluster.run` in a thread, with bench-a SIGKILLed (no chance to close anything) once it
    measures: the thread, the holder of its session, and its log lines."""
    import threading
    lines: list[str] = []
    out: dict = {}
    where = cluster.endpoint(dask_cluster.address, None)
    thread = threading.Thread(target=lambda: out.update(session=cluster.run(
        where, experiments, profile="smoke", targets=["mariadb"], data_root=store, log=lines.append, **options)))
    thread.start()
    deadline = time.monotonic() + 90
    while not _started_measuring(dask_cluster.worker_dir("bench-a")):
        assert time.monotonic() < deadline and thread.is_alive(), "\n".join(lines)
        time.sleep(0.2)
    dask_cluster.kill("bench-a")
    return thread, out, lines


def test_two_claims_over_hosts_survive_a_killed_worker_and_pool_by_host(dask_cluster, tmp_path):
    store = tmp_path / "store"
    thread, out, lines = _session_losing_bench_a(dask_cluster, store, EXPERIMENTS)
    deadline = time.monotonic() + 30
    while not any("bench-a: lost mid-run" in line for line in lines):
        assert time.monotonic() < deadline, "\n".join(lines)
        time.sleep(0.2)
    dask_cluster.start_worker("bench-a")       # the host returns, with its own directory
    thread.join(timeout=240)
    assert not thread.is_alive(), "\n".join(lines)
    session = out["session"]

    # every (claim, host) stored once; bench-c failed in one line each, the others went on
    assert sorted((j.experiment, j.host) for j in session.stored) == \
        sorted((e, h) for e in EXPERIMENTS for h in ("bench-a", "bench-b"))
    assert sorted((j.experiment, j.host) for j in session.failed) == [(e, "bench-c") for e in EXPERIMENTS]
    for reason in session.failed.values():
        assert "\n" not in reason and "target mariadb" in reason, reason
    assert [j.host for j in session.interrupted] == ["bench-a"]
    assert any("resumed after an interruption" in line and line.startswith("bench-a") for line in lines), lines
    stored = sorted(store.glob("*/*/manifest.json"))
    assert len(stored) == 4 and not list((store / transfer.STAGING_DIR).iterdir())
    journal = [json.loads(x) for x in next((store / journal_mod.JOURNAL_DIR).glob("*.jsonl")).read_text().splitlines()]
    assert sorted(r["event"] for r in journal) == sorted(["submitted"] * 6 + ["stored"] * 4 + ["failed"] * 2
                                                       + ["interrupted"])
    ids = [path.parent.name for path in stored]
    for path in stored:
        df = read_results(path.parent)          # checksums verified on read
        assert df.attrs["run_state"]["verified"] and df.attrs["run_state"]["status"] == "complete"
        keys = ["condition", "workload", "repetition", "iteration", "metric"]
        assert not df.duplicated(keys).any(), f"{path.parent.name}: a measurement stored twice"
        host = json.loads(path.read_text())["provenance"]["host"]
        assert host["worker_name"] in ("bench-a", "bench-b") and host["cpu_model"] and host["kernel"]
        assert host["worker_kind"] == KINDS[host["worker_name"]]
        assert host["server_builds"] and all(b.startswith("mariadb: ") for b in host["server_builds"])

    # `claimlab runs` shows each run's host
    listed = run_cli("runs", "--data", str(store))
    assert listed.returncode == 0 and listed.stdout.count("bench-a, ") == 2 and listed.stdout.count("bench-b, ") == 2

    # the pooled table against each host's own analysis
    per_host, pooled = hosts_view.host_tables(ids, store)
    by_host = {}
    for path in stored:
        by_host.setdefault(json.loads(path.read_text())["provenance"]["host"]["worker_name"], []).append(
            path.parent.name)
    for host, host_ids in by_host.items():
        for analysis in analyze_runs(host_ids, store):
            tested = analysis.table[analysis.table["verdict"] != "not_tested"]   # untested: no host row
            own = tested.set_index(["comparison", "target"])
            mine = per_host[per_host["host"] == host].set_index(["comparison", "target"])
            pd.testing.assert_series_equal(own["estimate"], mine.loc[own.index, "estimate"], check_names=False)
            pd.testing.assert_series_equal(own["verdict"], mine.loc[own.index, "verdict"], check_names=False)
    assert len(pooled) == len(per_host) / 2 and (pooled["n_hosts"] == 2).all()
    for row in pooled.itertuples(index=False):
        hosts = per_host[(per_host["comparison"] == row.comparison) & (per_host["target"] == row.target)]
        # A smoke run may leave a host without an estimate (no fast-state value on one side):
        # the pool then has none, or lies between the hosts that have one.
        known = hosts["estimate"].dropna()
        assert (len(known) < len(hosts) and pd.isna(row.estimate)) or \
            known.min() * (1 - 1e-12) <= row.estimate <= known.max() * (1 + 1e-12), (row, hosts)
        supported = (hosts["verdict"] == "supported").sum()
        assert row.holds_on == {2: "every", 1: "some", 0: "none"}[supported]

    # the same run imported again is stored once; an edited copy is refused in one line
    archive = next(dask_cluster.worker_dir("bench-b").glob("outbox/*binlog_default*.tar.gz"))
    again = run_cli("import", str(archive), "--data", str(store))
    assert again.returncode == 0 and "already stored" in again.stdout, again.stderr
    edited = tmp_path / "edited" / stored[0].parent.name
    shutil.copytree(stored[0].parent, edited)
    rows = (edited / "results.csv").read_text().splitlines(keepends=True)
    (edited / "results.csv").write_text("".join(rows + rows[-1:]))    # a measurement stored twice
    refused = run_cli("import", str(edited), "--data", str(tmp_path / "other"))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "checksums" in refused.stderr
    assert not list((tmp_path / "other").glob("*/*/manifest.json"))
    fresh = run_cli("import", str(archive), "--data", str(tmp_path / "other"))
    assert fresh.returncode == 0 and "imported into" in fresh.stdout, fresh.stderr


def test_an_interrupted_clients_session_is_collected_by_resume(dask_cluster, tmp_path):
    store = tmp_path / "store"
    # bench-a and bench-b are held (SIGSTOP) until the client is interrupted: a smoke run can end
    # before the signal lands, and the client then ends as a finished session.
    held = [psutil.Process(dask_cluster.procs[name].pid) for name in ("bench-a", "bench-b")]
    held += [child for p in list(held) for child in p.children(recursive=True)]
    for p in held:
        p.suspend()
    try:
        client = subprocess.Popen([sys.executable, "-m", "claimlab.cli", "run", "binlog_default", "--profile",
                                   "smoke", "--target", "mariadb", "--scheduler", dask_cluster.address, "--data",
                                   str(store)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        journal = None
        while journal is None or journal.read_text().count('"submitted"') < 3:
            assert time.monotonic() < deadline and client.poll() is None
            journal = next((store / journal_mod.JOURNAL_DIR).glob("*.jsonl"), None)
            time.sleep(0.2)
        session = journal.stem
        client.send_signal(signal.SIGINT)   # Ctrl-C: the hosts go on; it says how to collect their runs
        _, err = client.communicate(timeout=30)
    finally:
        for p in held:
            p.resume()
    assert client.returncode == 130, err
    assert f"cluster session {session}: interrupted here" in err
    assert f"resume with: claimlab run binlog_default --resume {session} with the same --scheduler" in err
    assert not list(store.glob("*/*/manifest.json"))
    resumed = run_cli("run", "binlog_default", "--scheduler", dask_cluster.address, "--data", str(store),
                      "--resume", session, timeout=240)
    assert resumed.returncode == 1, resumed.stderr     # bench-c's run could not be made
    stored = sorted(store.glob("binlog_default/*/manifest.json"))
    assert len(stored) == 2, resumed.stdout + resumed.stderr
    assert sorted(json.loads(p.read_text())["provenance"]["host"]["worker_name"] for p in stored) == \
        ["bench-a", "bench-b"]
    assert "bench-c: binlog_default on mariadb not run: " in resumed.stderr
    # resumed once more: nothing left to collect, nothing stored twice
    again = run_cli("run", "binlog_default", "--scheduler", dask_cluster.address, "--data", str(store),
                    "--resume", session, timeout=60)
    assert again.returncode == 0 and len(list(store.glob("binlog_default/*/manifest.json"))) == 2


def test_a_cluster_file_names_the_scheduler_and_its_tls_files(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("scheduler: tls://127.0.0.1:8786\ntls: {ca_file: ca.pem, cert: c.pem, key: k.pem}\n")
    with pytest.raises(ClaimlabError, match=f"{path}: tls.ca_file: no such file {tmp_path / 'ca.pem'}"):
        cluster.endpoint(None, path)    # before: "--scheduler tls://...: cannot connect (No such file...)"
    for name in ("ca.pem", "c.pem", "k.pem"):
        (tmp_path / name).write_text("")
    where = cluster.endpoint(None, path)
    assert where.address == "tls://127.0.0.1:8786"
    assert where.tls == {"ca_file": str(tmp_path / "ca.pem"), "cert": str(tmp_path / "c.pem"),
                         "key": str(tmp_path / "k.pem")}
    security = where.security()
    assert security.require_encryption and security.tls_client_cert == str(tmp_path / "c.pem")
    assert cluster.endpoint("tcp://127.0.0.1:1", path).tls == {}    # --scheduler wins: Dask's own config
    for text, field in (("schedular: tcp://x:1\n", "scheduler"), ("scheduler: tcp://x:1\npassword: x\n", "password"),
                        ("scheduler: tcp://x:1\ntls: {ca_file: a}\n", "tls"),
                        ("scheduler: tcp://x:1\ntls: yes\n", "tls"),
                        ("scheduler: 127.0.0.1\n", "scheduler 127.0.0.1: expected tcp://HOST:PORT")):
        path.write_text(text)
        with pytest.raises(ClaimlabError, match=f"{path}: {field}"):
            cluster.endpoint(None, path)
    # before: Dask's tracebacks (missing port, unknown scheme)
    for address in ("notanaddress", "127.0.0.53", "foo://127.0.0.1:8786", "tcp://127.0.0.1"):
        with pytest.raises(ClaimlabError, match=f"--scheduler {address}: expected tcp://HOST:PORT or tls://HOST:PORT"):
            cluster.endpoint(address, None)
    assert cluster.endpoint("tcp://[::1]:8786", None).address == "tcp://[::1]:8786"


def test_a_port_where_no_scheduler_answers_is_one_line_in_bounded_time():
    # Before: pointed at the dashboard's HTTP port, the client waited for good (Dask's timeout does
    # not cover a peer that accepts and never speaks Dask's protocol)
    import socketserver
    import threading

    class Silent(socketserver.BaseRequestHandler):
        def handle(self):
            time.sleep(30)

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Silent) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        address = f"tcp://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(ClaimlabError, match=f"--scheduler {address}: no Dask scheduler answered in 6 s"):
            cluster.connect(cluster.Endpoint(address), timeout=1)
        server.shutdown()


def test_a_worker_started_without_a_name_is_refused_in_one_line(tmp_path):
    """Dask names an unnamed worker by its address, whose port changes at every start: a session
    could not find the host again on --resume, nor a manifest name it."""
    import asyncio

    import dask
    from distributed import Client, Scheduler, Worker

    async def workers():
        async with Scheduler(port=0, dashboard_address=None) as s, Worker(s.address, resources={"host": 1}), \
                Client(s.address, asynchronous=True) as client:
            return (await client.scheduler.identity())["workers"]

    with dask.config.set({"temporary-directory": str(tmp_path)}):     # their scratch space, not /tmp's
        found = asyncio.run(workers())
    (address,) = found
    with pytest.raises(ClaimlabError, match=f"^cluster: the worker at {re.escape(address)} has no name; start it "
                                            "with `--name HOST`"):
        cluster.offering(found)


def test_a_report_over_the_cluster_has_a_per_host_view(dask_cluster, tmp_path):
    result = run_cli("report", "--scheduler", dask_cluster.address, "--profile", "smoke", "--only", "binlog_default",
                     "--targets", "mariadb", "--data", str(tmp_path / "store"), "--out", str(tmp_path / "reports"),
                     "--figures", str(tmp_path / "figures"), timeout=240)
    # bench-c's run is missing: said last, and in the exit status (it was 0)
    assert result.returncode == 1, result.stderr
    assert "bench-c: binlog_default on mariadb not run: " in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("claimlab: 1 run(s) of cluster session ")
    assert "on bench-c (the reasons are above)" in result.stderr
    per_host = pd.read_csv(tmp_path / "reports" / "hosts.csv")
    pooled = pd.read_csv(tmp_path / "reports" / "hosts_pooled.csv")
    assert sorted(per_host["host"]) == ["bench-a", "bench-b"] and per_host["processor"].str.len().min() > 0
    assert len(pooled) == 1 and pooled["n_hosts"].iloc[0] == 2
    for host in ("bench-a", "bench-b"):     # one line per host: processor, ratio, verdict
        (line,) = [x for x in result.stdout.splitlines() if x.strip().startswith(host)]
        assert per_host.set_index("host").loc[host, "processor"] in line
    assert "pooled over 2 hosts" in result.stdout
    assert (tmp_path / "reports" / "index.html").exists()


def test_a_host_gone_for_good_has_its_job_moved_to_a_host_of_its_kind(dask_cluster, tmp_path):
    """The last test on the cluster: bench-a does not come back."""
    store = tmp_path / "store"
    thread, out, lines = _session_losing_bench_a(dask_cluster, store, ["binlog_default"], move_after=1)
    thread.join(timeout=240)
    assert not thread.is_alive(), "\n".join(lines)
    session = out["session"]

    ((old, new),) = session.moved.items()
    assert (old.host, new.host, new.moved_from) == ("bench-a", "bench-b", "bench-a") and new.key != old.key
    assert sorted((j.host, j.moved_from) for j in session.stored) == [("bench-b", ""), ("bench-b", "bench-a")]
    assert [j.host for j in session.failed] == ["bench-c"] and [j.host for j in session.interrupted] == ["bench-a"]
    assert any(x.startswith("bench-a: gone for 1 s or more;") and "moved to bench-b" in x for x in lines), lines
    stored = sorted(store.glob("*/*/manifest.json"))
    assert len(stored) == 2 and not list((store / transfer.STAGING_DIR).iterdir())
    for path in stored:     # both measured by bench-b, each whole and once
        host = json.loads(path.read_text())["provenance"]["host"]
        assert (host["worker_name"], host["worker_kind"]) == ("bench-b", "epyc")
        df = read_results(path.parent)
        assert df.attrs["run_state"]["verified"] and df.attrs["run_state"]["status"] == "complete"
        assert not df.duplicated(["condition", "workload", "repetition", "iteration", "metric"]).any()
    journal = [json.loads(x) for x in next((store / journal_mod.JOURNAL_DIR).glob("*.jsonl")).read_text().splitlines()]
    assert sorted(r["event"] for r in journal) == sorted(["submitted"] * 3 + ["interrupted", "moved", "failed"]
                                                       + ["stored"] * 2)
    (moved,) = [r for r in journal if r["event"] == "moved"]
    assert (moved["key"], moved["to"], moved["new_key"]) == (old.key, "bench-b", new.key)
    assert new.key in {r["key"] for r in journal if r["event"] == "stored"}
    assert journal_mod.Journal(store, session.session).unfinished(journal) == []
    # the first task was cancelled for good: should bench-a return, nothing is left for it to run
    from distributed import Client
    with Client(dask_cluster.address, timeout=30) as client:    # a lambda: pickled by value, not by module
        assert not client.run_on_scheduler(lambda dask_scheduler, key=old.key: key in dask_scheduler.tasks)


def _finished_run(root: Path) -> Path:
    store = RunStore.create(root, RunManifest.new(experiment="exp", claim="C4", profile="smoke", factors=[]))
    store.event("note", what="no measurement: the store's own files are enough to import")
    store.finish("complete")
    return store.path


def _finished(result=None, error: BaseException | None = None) -> Future:
    """A finished task as `_store` reads it (`.result()`, as Dask's futures)."""
    future = Future()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
    return future


def test_a_hosts_archive_that_fails_its_checks_fails_that_job_only(tmp_path):
    # Before: the DataError ended the session; the other hosts' good runs were never stored and
    # every --resume stopped on it again.
    store = tmp_path / "store"
    session, journal = journal_mod.Session("s1"), journal_mod.Journal(store, "s1")
    good, bad = _finished_run(tmp_path / "a"), _finished_run(tmp_path / "b")
    (bad / "events.jsonl").write_text((bad / "events.jsonl").read_text() + "\n")   # edited after the run
    said = []
    for run, host in ((bad, "bench-b"), (good, "bench-a")):
        archive = transfer.archive_run(run)
        job = journal_mod.Job("s1", "exp", "mariadb", host, "smoke")
        cluster._store(_finished({"archive": archive, "sha256": hashlib.sha256(archive).hexdigest(),
                                  "resumed": False}),
                       job, journal, session, store, said.append)
    assert [j.host for j in session.failed] == ["bench-b"] and [j.host for j in session.stored] == ["bench-a"]
    assert "bench-b's archive" in session.failed[next(iter(session.failed))]
    assert [r["event"] for r in journal.read()] == ["failed", "stored"]
    assert said[0].startswith("bench-b: exp on mariadb: not stored: ")


def test_a_job_whose_worker_died_too_often_is_sent_again_on_resume(tmp_path):
    # Before: Dask's KilledWorker was journalled "failed", which --resume never sends again, while
    # the run's measurements waited on the host.
    from distributed import KilledWorker
    store = tmp_path / "store"
    session, journal = journal_mod.Session("s2"), journal_mod.Journal(store, "s2")
    job = journal_mod.Job("s2", "exp", "mariadb", "bench-a", "smoke")
    journal.write("submitted", job)
    said = []
    cluster._store(_finished(error=KilledWorker("task", "tcp://10.0.0.1:1", 3)), job, journal, session, store,
                   said.append)
    assert list(session.failed) == [job] and "died mid-run too often" in session.failed[job]
    assert journal.unfinished(journal.read()) == [job]
    assert "the host keeps what it measured" in said[0] and "--resume s2" in said[0]


def test_import_refuses_archives_that_reach_outside_their_run_and_unfinished_runs(tmp_path):
    run = _finished_run(tmp_path / "made")
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(run, arcname=run.name)
        data = b"overwritten"
        info = tarfile.TarInfo(f"{run.name}/../../outside.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    store = tmp_path / "store"
    with pytest.raises(ClaimlabError, match="not a run archive"):
        transfer.import_run(evil, store)
    assert not (tmp_path / "outside.txt").exists() and not list(store.glob("*/*/manifest.json"))
    (run / "notes.txt").write_text("a file no checksum covers")
    with pytest.raises(ClaimlabError, match="notes.txt is not covered by a checksum"):
        transfer.import_run(run, store)
    (run / "notes.txt").unlink()
    (run / "variables").mkdir(exist_ok=True)
    (run / "variables" / "elsewhere.json").symlink_to(tmp_path / "outside.json")
    with pytest.raises(ClaimlabError, match="variables/elsewhere.json is a symbolic link"):
        transfer.import_run(run, store)
    (run / "variables" / "elsewhere.json").unlink()
    path, new = transfer.import_run(transfer.archive_run(run), store)     # what a worker sends
    assert new and path == store / "exp" / run.name and (path / "events.jsonl").read_bytes() == \
        (run / "events.jsonl").read_bytes()
    assert transfer.import_run(run, store) == (path, False)       # once only
    running = RunStore.create(tmp_path / "made", RunManifest.new(experiment="exp", claim="C4", profile="smoke",
                                                                 factors=[])).path
    with pytest.raises(ClaimlabError, match="running and has no checksums"):
        transfer.import_run(running, store)
    assert not list((store / transfer.STAGING_DIR).iterdir())


def test_import_says_what_a_file_that_is_no_archive_or_a_cut_one_is(tmp_path):
    # Before: "unreadable archive (file could not be opened successfully: | - method gz: ...)",
    # the list of the compressions tarfile had tried.
    run, store = _finished_run(tmp_path / "made"), tmp_path / "store"
    notes = tmp_path / "notes.txt"
    notes.write_text("not an archive\n")
    with pytest.raises(ClaimlabError, match=r"notes.txt: not a tar archive; claimlab import takes a run's "
                                            r"directory or a \.tar\.gz of one$"):
        transfer.import_run(notes, store)
    archive = transfer.archive_run(run)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(archive[:len(archive) // 2])
    with pytest.raises(ClaimlabError, match=r"cut.tar.gz: a damaged archive \(.+\); nothing was imported$"):
        transfer.import_run(cut, store)
    with pytest.raises(ClaimlabError, match="^the worker's archive: not a tar archive$"):
        transfer.import_run(b"not an archive", store)
    assert not list(store.glob("*/*/manifest.json"))


def test_import_refuses_a_manifest_naming_a_path_or_a_stored_run_under_another_name(tmp_path):
    # Before: the manifest's experiment was taken as a folder: "../../escaped" put the run outside
    # the store, "copy" stored a second copy of a stored run, 5 or "checksums": "abc" a traceback.
    run = _finished_run(tmp_path / "made")
    store = tmp_path / "store"
    path, _ = transfer.import_run(run, store)
    manifest = json.loads((run / "manifest.json").read_text())
    for change, message in [({"experiment": "../../escaped"}, "is not an experiment name"),
                            ({"experiment": "/tmp/claimlab-absolute"}, "is not an experiment name"),
                            ({"experiment": 5}, "is not an experiment name"),
                            ({"checksums": "abc"}, "checksums: expected"),
                            ({"experiment": "copy"}, f"already stored in {path}, under another experiment")]:
        (run / "manifest.json").write_text(json.dumps({**manifest, **change}))
        with pytest.raises(ClaimlabError, match=message):
            transfer.import_run(run, store)
    assert [p for p in store.glob("*/*") if p.parent.name != transfer.STAGING_DIR] == [path]
    assert not (tmp_path / "escaped").exists() and not Path("/tmp/claimlab-absolute").exists()


def test_a_packed_copy_of_a_shipped_run_imports_whole(tmp_path):
    """Runs made elsewhere include shipped ones, whose tables may be Parquet (claimlab publish)."""
    from claimlab import pack
    shipped = frozen("format_1")
    copy = tmp_path / "src" / shipped.name
    shutil.copytree(shipped, copy)
    if (copy / "results.csv").exists():
        pack.pack(copy)
    path, new = transfer.import_run(copy, tmp_path / "store")
    assert new and (path / "results.parquet").exists()
    pd.testing.assert_frame_equal(read_results(path), read_results(shipped))


def test_a_run_with_its_cpu_evidence_imports_whole_and_an_edited_profile_is_refused(tmp_path):
    """Before: every run with CPU evidence was refused ("evidence/... is not covered by a
    checksum"): the evidence's checksums are in evidence/evidence.json, not the manifest."""
    from claimlab import evidence
    source = tmp_path / "src" / frozen_id("c1")
    shutil.copytree(frozen("c1"), source)
    assert evidence.exists(source)
    path, new = transfer.import_run(transfer.archive_run(source), tmp_path / "store")
    assert new and evidence.load(path).profiles          # the profiles came along, verified
    edited = tmp_path / "edited" / source.name
    shutil.copytree(source, edited)
    folded = next((edited / evidence.DIRECTORY).glob("*.folded"))
    folded.write_text(folded.read_text() + "mysqld;edited 1\n")
    with pytest.raises(DataError, match=rf"run {source.name}: evidence: {folded.name} changed after profiling"):
        transfer.import_run(edited, tmp_path / "store2")
    assert not (tmp_path / "store2" / "charset_mismatch").exists()
