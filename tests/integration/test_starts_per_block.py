"""Several starts of one server per block (`design.starts_per_block`), on real servers: the starts
run together, each is a block of its own in the data and the analysis, the rounds alternate
between them, and on Oracle MySQL each start keeps its own pair of data directories."""

import os
import signal

import pandas as pd

from claimlab import datacache, params, runner
from claimlab.servers import placement
from claimlab.stats.observations import block_log_ratios
from claimlab.store import read_jsonl, read_results
from claimlab.writer import RunStore
from conftest import C2_TWO_COLLATIONS, looks_that_go_on, pid_alive

EXP = C2_TWO_COLLATIONS + """design: {{repetitions: {repetitions}, warmup: 1, iterations: 4, starts_per_block: 2}}
"""


def _elapsed(run_dir) -> pd.DataFrame:
    df = read_results(run_dir)
    return df[df["metric"] == "elapsed_s"]


def test_two_starts_per_block_are_two_blocks_measured_together(tmp_path, write_params, mariadbd):
    exp = params.load(write_params(EXP.format(kind="mariadb", repetitions=4), name="collation_cost"))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and outcome.measurements == 4 * 2 * 4
    servers = pd.DataFrame(read_jsonl(outcome.path / "servers.jsonl"))
    # two processes per unit, one per repetition: block b holds repetitions 2b and 2b + 1
    assert servers.groupby("seq")["pid"].nunique().to_dict() == {0: 2, 1: 2}
    assert sorted(zip(servers["seq"], servers["repetition"])) == [(0, 0), (0, 1), (1, 2), (1, 3)]
    elapsed = _elapsed(outcome.path)
    assert not elapsed.duplicated(["condition", "repetition", "iteration"]).any()
    # the rounds alternate between the unit's two servers, not one server's rounds then the other's
    for _, rows in elapsed.sort_values("started_at").groupby("seq"):
        turns = (rows["repetition"] != rows["repetition"].shift()).sum()
        assert turns > 2, rows[["repetition", "condition", "iteration"]]
    # each start is a block of its own, paired round by round within its own process
    side = {c: elapsed[elapsed["condition"] == f"collation={c}"] for c in ("utf8mb3_general_ci", "utf8mb4_general_ci")}
    blocks = block_log_ratios(side["utf8mb3_general_ci"], side["utf8mb4_general_ci"], strata=[])
    assert blocks["repetition"].tolist() == [0, 1, 2, 3]
    assert blocks["paired"].all() and blocks["n_pairs"].eq(4).all() and blocks["unmatched"].eq(0).all()
    manifest = read_jsonl(outcome.path / "events.jsonl")
    assert [e["seq"] for e in manifest if e["event"] == "unit_done"] == [0, 1]
    assert not any(pid_alive(pid) for pid in servers["pid"])



def test_a_sequential_design_looks_after_whole_blocks_and_counts_server_starts(tmp_path, write_params, mariadbd):
    """The rule counts server starts (the analysis' blocks); with two starts a block the runner
    looks after each whole block, from the rule's minimum of starts on, and stops at its cap."""
    text = EXP.format(kind="mariadb", repetitions=2).replace(
        "starts_per_block: 2}", "starts_per_block: 2, sequential: {min_blocks: 4, max_blocks: 6}}")
    exp = params.load(write_params(text, name="collation_cost"))
    seen, should_stop = looks_that_go_on(lambda starts: f"{starts} starts, continuing")
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False,
                         should_stop=should_stop)
    assert outcome.status == "complete" and outcome.measurements == 6 * 2 * 4
    assert seen == [4, 6]                       # after blocks 2 and 3 (the cap's look), never after 1
    events = read_jsonl(outcome.path / "events.jsonl")
    assert [(e["event"], e["blocks"]) for e in events if e["event"].startswith("sequential")] == [
        ("sequential", 4), ("sequential_cap", 6)]
    stopped = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False,
                         should_stop=lambda results: (True, "decided"))
    assert stopped.measurements == 4 * 2 * 4     # decided at the first look: two blocks of two starts


def test_each_mysql_start_of_a_block_alternates_its_own_data_directories(tmp_path, write_params, mysql_target,
                                                                          monkeypatch):
    monkeypatch.setattr(datacache, "root", lambda: tmp_path / "datadirs")
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 0.0)        # the tiny loads are kept all the same
    exp = params.load(write_params(EXP.format(kind="mysql-debian", repetitions=6), name="collation_cost"))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and outcome.measurements == 6 * 2 * 4
    starts = read_jsonl(outcome.path / "servers.jsonl")
    by_rep = {s["repetition"]: s for s in starts}
    # block 0 loads both (slots 0 and 2); block 1 waits for them and reuses the directories (the
    # load is saved once they stopped); block 2 copies the cached load into each start's other slot
    assert [by_rep[r]["slot"] for r in range(6)] == [0, 2, 0, 2, 1, 3]
    assert [by_rep[r]["datadir_from_cache"] for r in range(6)] == [False, False, False, False, True, True]
    assert len({s["pid"] for s in starts}) == 6
    assert sorted(_elapsed(outcome.path)["repetition"].unique()) == list(range(6))
    assert not any(pid_alive(s["pid"]) for s in starts)


def test_a_lost_start_restarts_both_and_keeps_every_row_once(tmp_path, write_params, mariadbd, monkeypatch):
    """Kill the other start's server right after the block's first stored row: both servers start
    again (a new attempt), and each (condition, repetition, round) is stored exactly once."""
    exp = params.load(write_params(EXP.format(kind="mariadb", repetitions=2), name="collation_cost"))
    killed = []
    append = RunStore.append

    def append_then_kill_the_other(self, record):
        append(self, record)
        if not killed:
            pid = next(s["pid"] for s in read_jsonl(self.path / "servers.jsonl")
                       if s["repetition"] != record.repetition)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    monkeypatch.setattr(RunStore, "append", append_then_kill_the_other)
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and len(killed) == 1
    failed = [e for e in read_jsonl(outcome.path / "events.jsonl") if e["event"] == "attempt_failed"]
    assert [(e["seq"], e["attempt"]) for e in failed] == [(0, 1)]
    servers = read_jsonl(outcome.path / "servers.jsonl")
    assert sorted((s["attempt"], s["repetition"]) for s in servers) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    # the restart runs copies of its own, drawn for its attempt (servers.placement)
    assert [s["placement"]["seed"] for s in servers] == [
        placement.seed_of(f"{outcome.run_id}/0/{s['attempt']}/{s['repetition']}") for s in servers]
    elapsed = _elapsed(outcome.path)
    assert len(elapsed) == 2 * 2 * 4 and not elapsed.duplicated(["condition", "repetition", "iteration"]).any()
    assert elapsed["attempt"].value_counts().sort_index().tolist() == [1, 15]
    assert not any(pid_alive(s["pid"]) for s in servers)


def test_side_by_side_cells_with_two_starts_each_run_four_servers_at_once(tmp_path, write_params, mariadbd):
    text = """
claim: C4
targets:
  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}
workloads:
  insert_loop: {kind: proc_insert_loop, rows: 100}
factors:
  binlog:
    "off": {server: {log_bin: false}}
    "on": {server: {log_bin: true, sync_binlog: 1}}
design: {repetitions: 2, warmup: 1, iterations: 3, side_by_side: true, starts_per_block: 2}
"""
    outcome = runner.run(params.load(write_params(text, name="binlog_default")), data_root=tmp_path / "raw",
                         work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and outcome.measurements == 2 * 2 * 3
    servers = pd.DataFrame(read_jsonl(outcome.path / "servers.jsonl"))
    # one unit: both configurations, two starts of each, four processes alive together
    assert servers["seq"].eq(0).all() and servers["pid"].nunique() == 4
    assert sorted(zip(servers["condition"], servers["repetition"])) == [
        ("binlog=off", 0), ("binlog=off", 1), ("binlog=on", 0), ("binlog=on", 1)]
    elapsed = _elapsed(outcome.path)
    assert not elapsed.duplicated(["condition", "repetition", "iteration"]).any()
    # each repetition pairs one off-server with one on-server, round by round
    assert elapsed.groupby(["repetition", "iteration"])["condition"].nunique().eq(2).all()
    assert not any(pid_alive(pid) for pid in servers["pid"])
