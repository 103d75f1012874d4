"""Per-operation costs and the contention guard, on real MariaDB."""

import signal
import subprocess
import sys
import time

import psutil
import pytest

from claimlab import accounting, params, runner, stats
from claimlab.errors import ServerGone
from claimlab.store import read_jsonl, read_results
from conftest import query

EXP = """
claim: C4
targets:
  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M, innodb_flush_log_at_trx_commit: 1}}
workloads:
  insert_loop: {kind: proc_insert_loop, rows: 300}
factors:
  binlog:
    "off": {server: {log_bin: false}}
    "on": {server: {log_bin: true, sync_binlog: 1}}
design: {repetitions: 2, warmup: 0, iterations: 2}
"""


def _on_block_device(path) -> bool:
    """Whether `path` lives on a file system backed by a disk (not tmpfs/ramfs)."""
    best, source = "", ""
    for part in psutil.disk_partitions(all=True):
        if str(path).startswith(part.mountpoint.rstrip("/") + "/") and len(part.mountpoint) > len(best):
            best, source = part.mountpoint, part.device
    return source.startswith("/dev/")


def _cost(table, condition, metric):
    return table[(table["condition"] == condition) & (table["metric"] == metric)]["mean"].iloc[0]


def test_costs_per_row_show_the_binlog_mechanism(tmp_path, write_params, mariadbd):
    exp = params.load(write_params(EXP))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    results = read_results(outcome.path)
    table = stats.cost_table(results)
    # one InnoDB fsync per autocommitted row, binlog or not (the server's own counter)
    for condition in ("binlog=off", "binlog=on"):
        assert 0.9 <= _cost(table, condition, "status.Innodb_data_fsyncs/op") <= 1.3
    assert _cost(table, "binlog=off", "status.Binlog_commits/op") == 0
    assert _cost(table, "binlog=on", "status.Binlog_commits/op") == 1
    # the device sees the binlog's extra sync: more cache flushes per row with it on; a data
    # directory in memory (tmpfs) reaches no device, and then none may be counted for it. The
    # disk's counter is the whole device's: servers of other tests running beside this one only
    # add flushes (once 1.8 per row with the binlog off, the mean ratio 1.26), so each condition's
    # least disturbed measurement, its minimum, carries the mechanism.
    if _on_block_device(tmp_path):
        flushes = stats.per_operation(results, ["disk_flushes"]).groupby("condition")["value"].min()
        assert flushes["binlog=on"] > 1.3 * flushes["binlog=off"], flushes
    else:
        assert _cost(table, "binlog=on", "status.Binlog_commits/op") == 1
    # server CPU per row is positive; the client's is recorded separately
    cpu = results[results["metric"] == "server_cpu_user_s"]["value"] + \
        results[results["metric"] == "server_cpu_system_s"]["value"].to_numpy()
    assert cpu.sum() > 0
    assert (results[results["metric"] == "client_cpu_s"]["value"] >= 0).all()
    # threads waiting on fsync switch out: summed over all server threads, not just the main one
    assert results[results["metric"] == "server_ctx_voluntary"]["value"].sum() > 0
    assert len(results[results["metric"] == "client_cpu_s"]) == 8


def test_a_disk_writer_next_door_is_flagged_and_kept(tmp_path, write_params, mariadbd):
    """A neighbour writing and syncing to the same disk: the rows are flagged, never dropped. It
    writes a MiB every 20 ms or so (ten times accounting.MAX_OTHER_DISK_BYTES_S), not as fast as
    the disk takes it: unthrottled, it wrote 6 GB in ten seconds and slowed every other test."""
    writer = subprocess.Popen([sys.executable, "-c", (
        "import os, time\n"
        f"path = {str(tmp_path / 'noise.bin')!r}\n"
        "block = os.urandom(1 << 20)\n"
        "end = time.time() + 120\n"
        "with open(path, 'wb') as f:\n"
        "    while time.time() < end:\n"
        "        f.write(block); f.flush(); os.fsync(f.fileno()); f.seek(0); time.sleep(0.02)\n")])
    try:
        time.sleep(1)
        exp = params.load(write_params(EXP.replace("repetitions: 2", "repetitions: 1")))
        outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    finally:
        writer.kill()
        writer.wait()
    results = read_results(outcome.path)
    assert results["contention"].all(), results.groupby("condition")["contention"].mean()
    assert results[results["metric"] == "elapsed_s"].shape[0] == 4          # kept, all of them
    assert any(e["event"] == "contention" for e in read_jsonl(outcome.path / "events.jsonl"))
    kept = stats.cost_table(results)
    dropped = stats.cost_table(results, include_contention=False)
    assert len(kept) > 0 and len(dropped) == 0 and (kept["contention"] == "included").all()


def test_a_server_killed_between_snapshots_is_server_gone(server):
    """The runner retries on ServerGone only: a dead server seen by the status snapshot must be
    that, not a raw connector error that ends the run (seen when a kill landed between iterations)."""
    meter = accounting.Meter(server)
    meter.start()
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    with pytest.raises(ServerGone, match="status counters"):
        meter.stop()
    meter.close()


def _server_cpu_s(server, rounds: int) -> float:
    """Server CPU seconds metered around one SELECT BENCHMARK (about 0.3 s per million rounds)."""
    meter = accounting.Meter(server)
    try:
        meter.start()
        query(server, f"SELECT BENCHMARK({rounds}, MD5('claimlab'))")
        got = {m.name: m.value for m in meter.stop()}
    finally:
        meter.close()
    return got["server_cpu_user_s"] + got["server_cpu_system_s"]


def test_the_servers_cpu_grows_with_the_work_it_is_given(server):
    """The work runs in a connection thread, not the server's main one: all threads are counted."""
    light, heavy = _server_cpu_s(server, 1), _server_cpu_s(server, 1_000_000)
    assert heavy >= 0.1 and heavy > light + 0.05, (light, heavy)
