"""Interleaved sysbench levels on real MariaDB: one process per round measures every level, each
thread alternating its transactions between the levels' connections."""

import os
import threading
import time
from pathlib import Path

from claimlab import params, runner
from claimlab.store import read_jsonl, read_manifest, read_results

EXP = """
claim: C1
targets:
  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M, innodb_flush_log_at_trx_commit: 2}}
workloads:
  oltp: {kind: sysbench, test: oltp_read_write, threads: 2, time: 2, warmup_time: 1, tables: 1,
         table_size: 500, ps_mode: disable, interleave: true}
factors:
  charset:
    latin1: {workloads: {oltp: {charset: latin1, schema_charset: latin1}}}
    mismatch: {workloads: {oltp: {charset: latin1, schema_charset: utf8mb4}}}
design: {repetitions: 2, warmup: 1, iterations: 2}
"""


def test_levels_share_each_burst_and_keep_only_machine_facts(tmp_path, write_params, mariadbd):
    exp = params.load(write_params(EXP))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and outcome.measurements == 8
    df = read_results(outcome.path)
    spans = df.groupby(["repetition", "iteration"])[["started_at", "ended_at"]].nunique()
    assert (spans == 1).all().all()                       # both levels measured in one burst
    assert df.groupby(["repetition", "iteration"])["condition"].nunique().eq(2).all()
    metrics = set(df["metric"])
    assert {"tps", "qps", "transactions", "latency_avg_ms", "machine_busy_share", "probe_before_s"} <= metrics
    # the server's CPU, its counters and the disk's totals cover both levels at once: not
    # recorded against either
    assert not {m for m in metrics if m.startswith(("server_", "status.", "client_", "disk_"))}
    assert {"machine_steal_share", "other_cpu_cores", "other_disk_bytes_s"} <= metrics
    tx = df[df["metric"] == "transactions"]
    assert (tx["value"] > 0).all()
    # each thread alternates levels in a random order per cycle, and a transaction sysbench runs
    # again after a deadlock stays on its level: counts differ by at most one per thread
    per_burst = tx.groupby(["repetition", "iteration"])["value"]
    assert (per_burst.max() - per_burst.min()).le(2).all()
    qps = df[df["metric"] == "qps"].set_index(["repetition", "iteration", "condition"])["value"]
    tps = df[df["metric"] == "tps"].set_index(["repetition", "iteration", "condition"])["value"]
    assert ((qps / tps).round(6) == 20).all()              # oltp_read_write: 20 queries a transaction
    warmups = [e for e in read_jsonl(outcome.path / "events.jsonl") if e["event"] == "warmup"]
    assert [e["measurements"] for e in warmups] == [1, 1]  # one warm-up burst per server start
    assert all(0.9 < e["seconds"] < 30 for e in warmups)


def _allowed_cpus(names: tuple[str, ...]) -> dict[str, set[str]]:
    """Per process name: the Cpus_allowed_list of every thread of such processes that this test
    started (children of this process: sysbench, and the servers, whose sessions are their own);
    another test's servers may run beside it. `sysbench --version`, which the manifest's
    provenance runs once before any server starts, is not a burst and is left unconfined."""
    seen: dict[str, set[str]] = {}
    for status in Path("/proc").glob("[0-9]*/task/*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
            argv = (status.parents[2] / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            continue
        if b"--version" in argv:
            continue
        if fields.get("Name") in names and fields.get("PPid", "").strip() == str(os.getpid()):
            seen.setdefault(fields["Name"], set()).add(fields["Cpus_allowed_list"].strip())
    return seen


def test_design_cpus_confine_server_and_sysbench(tmp_path, write_params, mariadbd):
    """`design.cpus`: every thread of the server and of each sysbench burst runs on those vCPUs
    only, read from /proc while the run measures; the manifest records the set."""
    cpu = max(os.sched_getaffinity(0))
    # one start: its warm-up and measured bursts are two sysbench processes to watch
    exp = params.load(write_params(EXP.replace("design: {repetitions: 2, warmup: 1, iterations: 2}",
                                               f"design: {{cpus: [{cpu}], repetitions: 1, warmup: 1, iterations: 1}}")))
    seen: dict[str, set[str]] = {}
    done = threading.Event()

    def watch():
        while not done.is_set():
            for name, lists in _allowed_cpus(("mariadbd", "sysbench")).items():
                seen.setdefault(name, set()).update(lists)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    finally:
        done.set()
        watcher.join()
    assert outcome.status == "complete" and outcome.measurements == 2
    assert seen == {"mariadbd": {str(cpu)}, "sysbench": {str(cpu)}}, seen
    assert read_manifest(outcome.path)["design"]["cpus"] == [cpu]
