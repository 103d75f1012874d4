"""A unit's servers shut down while the next unit's start and warm-up run, never while anything
is measured; on Oracle MySQL, whose shutdown mostly waits (about 1.4 s), a configuration whose
data directory is cached (its initialisation alone takes seconds) alternates between two, so
that the next server need not wait for the previous one to let go of its directory. Real MySQL 9.7."""

import pandas as pd

from claimlab import datacache, params, runner
from claimlab.store import read_jsonl, read_results
from conftest import pid_alive

EXP = """
claim: C2
targets:
  mysql: {kind: mysql-debian, options: {innodb_buffer_pool_size: 64M}}
workloads:
  scan: {kind: varchar_scan, rows: 500}
factors:
  collation:
    utf8mb3_general_ci: {workloads: {scan: {charset: utf8mb3, collation: utf8mb3_general_ci}}}
    utf8mb4_general_ci: {workloads: {scan: {charset: utf8mb4, collation: utf8mb4_general_ci}}}
design: {repetitions: 4, warmup: 1, iterations: 2}
"""


def test_shutdowns_overlap_the_next_start_and_never_a_measurement(tmp_path, write_params, mysql_target,
                                                                   monkeypatch):
    monkeypatch.setattr(datacache, "root", lambda: tmp_path / "datadirs")   # MySQL stays in the real cache
    # The load is tiny, made faster than a copy is worth (MIN_LOAD_S); here every directory is kept.
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 0.0)
    run = runner.run(params.load(write_params(EXP)), data_root=tmp_path / "raw", work_root=tmp_path / "work",
                     progress=False)
    assert run.status == "complete"
    starts = read_jsonl(run.path / "servers.jsonl")
    events = read_jsonl(run.path / "events.jsonl")
    # The first unit loads; the second waits for it (its load is saved only once it has stopped),
    # then reuses its directory; from then on the cached load gives a second directory to alternate.
    assert [s["slot"] for s in starts] == [0, 0, 1, 0]
    assert [s["datadir_from_cache"] for s in starts] == [False, False, True, False]
    assert [e["seq"] for e in events if e["event"] == "datadir_cached"] == [0]

    stopped = {e["seq"]: e for e in events if e["event"] == "stopped"}
    assert sorted(stopped) == [0, 1, 2, 3]
    assert [stopped[s["seq"]]["pids"] for s in starts] == [[s["pid"]] for s in starts]
    df = read_results(run.path)
    first_started = df.groupby("seq")["started_at"].min().map(pd.Timestamp)
    last_ended = df.groupby("seq")["ended_at"].max().map(pd.Timestamp)
    for seq in range(3):
        gone = pd.Timestamp(stopped[seq]["at"])
        assert last_ended[seq] < gone < first_started[seq + 1], seq   # gone before the next unit measures
    assert [e["event"] for e in events][-2:] == ["stopped", "last_stop"]
    assert not any(pid_alive(s["pid"]) for s in starts)
