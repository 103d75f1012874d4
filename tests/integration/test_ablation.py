"""Ablation on real MariaDB: a planted large effect is attributed to the option that causes it."""

from __future__ import annotations

from claimlab import ablation, attribution, store
from claimlab.params import Design
from claimlab.servers import ServerOptions, TargetSpec
from claimlab.workloads import ProcInsertLoop


def test_ablation_attributes_binlog_sync_to_log_bin(tmp_path, mariadbd):
    # Slow: binlog on, plus a harmless difference (max_connections). Fast: no binlog. The planted
    # effect must dwarf the machine's noise (CPU speed states of 2x, fsync as cheap as a no-op on
    # tmpfs): with binlog group commit told to wait for a second committer that never comes, every
    # binlogged commit sleeps 5 ms (binlog_commit_wait_usec) -- 100 commits, 0.5 s against a few ms.
    # Without a binlog there is no group commit and nothing waits.
    target = TargetSpec(name="default", kind="mariadb",
                        options=ServerOptions(innodb_buffer_pool_size="64M", innodb_flush_log_at_trx_commit=1,
                                              extra=(("binlog_commit_wait_count", "2"),
                                                     ("binlog_commit_wait_usec", "5000"))))
    abl = ablation.Ablation(
        name="planted", target=target, workload=ProcInsertLoop(name="insert_loop", rows=100),
        slow=ServerOptions(log_bin=True, sync_binlog=1, extra=(("max_connections", "60"),)),
        fast=ServerOptions(sync_binlog=1),
        order=("max_connections", "log_bin"),
        design=Design(repetitions=2, warmup=1, iterations=2, seed=7))
    assert ablation.toggles(abl.slow, abl.fast) == ("log_bin", "max_connections")
    assert len(abl.conditions()) == 4     # slow, fast, only-log_bin, only-max_connections (= upto-)
    outcome = ablation.run(abl, data_root=tmp_path / "raw", work_root=tmp_path / "work")
    assert outcome.status == "complete"
    table = attribution.attribute(store.read_results(outcome.path), abl, n_boot=500, seed=1)
    assert attribution.largest(table, "one") == "log_bin"
    assert attribution.largest(table, "cumulative") == "log_bin"
    cumulative = table[table["kind"] == "cumulative"]
    assert abs(cumulative["share"].sum() - 1.0) < 1e-9      # the waterfall adds up to the gap
    assert not list((tmp_path / "work").glob("*/*/server.pid"))
