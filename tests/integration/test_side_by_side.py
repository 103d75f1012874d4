"""Side by side on real MariaDB: a block's cells run in servers started together, the rounds
alternate between them, and a lost server restarts the whole block without losing a row."""

import json
import os
import signal
from pathlib import Path

import pandas as pd

from claimlab import params, runner, stats
from claimlab.claims import load_claims
from claimlab.store import read_results
from claimlab.writer import RunStore
from conftest import ROOT, pid_alive

EXP = """
claim: C4
targets:
  default: {{kind: mariadb, options: {{innodb_buffer_pool_size: 64M}}}}
workloads:
  insert_loop: {{kind: proc_insert_loop, rows: {rows}}}
factors:
  binlog:
    "off": {{server: {{log_bin: false}}}}
    "on": {{server: {{log_bin: true, sync_binlog: 1}}}}
design: {{repetitions: 2, warmup: 1, iterations: {iterations}, max_attempts: 3, side_by_side: true}}
"""


def _servers(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "servers.jsonl").read_text().splitlines() if x.strip()]


def _elapsed(run_dir: Path) -> pd.DataFrame:
    df = read_results(run_dir)
    return df[df["metric"] == "elapsed_s"]


def test_cells_of_a_block_run_together_and_pair_round_by_round(tmp_path, write_params, mariadbd):
    exp = params.load(write_params(EXP.format(rows=100, iterations=4), name="binlog_default"))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and outcome.measurements == 2 * 2 * 4
    elapsed = _elapsed(outcome.path)
    # one unit (seq) per block, holding both conditions, each measured once per round
    assert elapsed.groupby("repetition")["seq"].nunique().eq(1).all()
    assert elapsed.groupby(["seq", "iteration"])["condition"].nunique().eq(2).all()
    # two server processes per unit, started together: both alive through every round
    servers = _servers(outcome.path)
    assert len(servers) == 4 and len({s["pid"] for s in servers}) == 4
    for seq, group in pd.DataFrame(servers).groupby("seq"):
        assert sorted(group["condition"]) == ["binlog=off", "binlog=on"]
        assert {c: lb for c, lb in zip(group["condition"], group["log_bin"])} == {"binlog=off": False,
                                                                                  "binlog=on": True}
        rows = elapsed[elapsed["seq"] == seq].sort_values("started_at")
        # the conditions alternate in time, not all of one then all of the other
        runs = (rows["condition"] != rows["condition"].shift()).sum()
        assert runs >= 4, rows[["iteration", "condition", "started_at"]]
    # a probe closing one measurement opens the next only when both ran on the same server
    probes = read_results(outcome.path).pivot_table(
        index=["seq", "started_at", "condition"], columns="metric", values="value").reset_index()
    shared = other = 0
    for _, unit in probes.sort_values("started_at").groupby("seq"):
        rows = list(unit.itertuples(index=False))
        for previous, this in zip(rows, rows[1:]):
            if this.condition == previous.condition:
                assert this.probe_before_s == previous.probe_after_s
                shared += 1
            else:
                assert this.probe_before_s != previous.probe_after_s
                other += 1
    assert shared > 0 and other > 0      # the recorded seed's order has both
    # the rows of each condition name their own server's version and process
    assert set(elapsed["server_version"]) == {s["version"] for s in servers}
    # the analysis pairs the two servers round by round within each block
    table = stats.analyze(read_results(outcome.path), load_claims(ROOT / "data" / "claims.yaml")["C4"])
    row = table[table["comparison"] == "binlog_on_vs_off"].iloc[0]
    assert row["pairing"] == "rounds" and row["n_blocks"] == 2
    assert not any(pid_alive(s["pid"]) for s in servers)
    assert not (tmp_path / "work" / outcome.run_id).exists()


def test_a_lost_server_restarts_its_whole_block(tmp_path, write_params, mariadbd, monkeypatch):
    """Kill one of the two servers right after the block's first stored row: the block is started
    again (both servers, a new attempt), and every measurement is stored exactly once."""
    exp = params.load(write_params(EXP.format(rows=300, iterations=3), name="binlog_default"))
    killed = []
    append = RunStore.append

    def append_then_kill_the_other(self, record):
        append(self, record)
        if not killed:   # the other condition's server: found gone when its turn comes
            pid = next(s["pid"] for s in _servers(self.path) if s["condition"] != record.condition)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    monkeypatch.setattr(RunStore, "append", append_then_kill_the_other)
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and len(killed) == 1
    events = [json.loads(x) for x in (outcome.path / "events.jsonl").read_text().splitlines()]
    failed = [e for e in events if e["event"] == "attempt_failed"]
    assert [(e["seq"], e["attempt"]) for e in failed] == [(0, 1)], failed
    servers = _servers(outcome.path)
    assert sorted((s["seq"], s["attempt"]) for s in servers) == [(0, 1), (0, 1), (0, 2), (0, 2), (1, 1), (1, 1)]
    elapsed = _elapsed(outcome.path)
    assert not elapsed.duplicated(["condition", "repetition", "iteration"]).any() and len(elapsed) == 2 * 2 * 3
    # the row stored before the kill is kept (attempt 1); the rest of block 0 comes from attempt 2
    assert (elapsed[elapsed["seq"] == 0]["attempt"].value_counts().sort_index() == [1, 5]).all()
    assert not any(pid_alive(s["pid"]) for s in servers)
