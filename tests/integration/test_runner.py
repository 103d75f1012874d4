"""End to end on real MariaDB: a run stores every measurement once, survives a killed server,
resumes after an interrupt, and leaves no server process or data directory behind."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from claimlab import params, runner
from claimlab.stopping import StopRule
from claimlab.store import read_manifest, read_results
from conftest import ROOT, looks_that_go_on, pid_alive, run_cli, wait_for

EXP = """
claim: C4
targets:
  default: {{kind: mariadb, options: {{innodb_buffer_pool_size: 64M}}}}
workloads:
  ins: {{kind: proc_insert_loop, rows: {rows}}}
factors:
  binlog:
    "off": {{server: {{log_bin: false}}}}
    "on": {{server: {{log_bin: true, sync_binlog: 1}}}}
design: {{repetitions: 2, warmup: 0, iterations: {iterations}, max_attempts: 3}}
"""


def _server_pids(run_dir: Path) -> list[int]:
    path = run_dir / "servers.jsonl"
    if not path.exists():
        return []
    return [json.loads(x)["pid"] for x in path.read_text().splitlines() if x.strip()]


def _events(run_dir: Path) -> list[dict]:
    path = run_dir / "events.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _assert_one_row_per_measurement(df: pd.DataFrame, expected_measurements: int):
    keys = ["condition", "workload", "repetition", "iteration", "metric"]
    assert not df.duplicated(keys).any(), df[df.duplicated(keys, keep=False)]
    assert df.groupby(keys[:-1]).ngroups == expected_measurements


def test_smoke_run_end_to_end(tmp_path, write_params, mariadbd):
    exp = params.load(write_params(EXP.format(rows=50, iterations=2)))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and outcome.measurements == 8
    df = read_results(outcome.path)
    _assert_one_row_per_measurement(df, 8)
    assert {"elapsed_s", "roundtrip_s", "operations", "server_cpu_user_s", "client_cpu_s",
            "status.Innodb_data_fsyncs", "machine_busy_share"} <= set(df["metric"])
    timed = df[df["metric"].isin(["elapsed_s", "roundtrip_s"])]
    assert len(timed) == 16 and (timed["value"] > 0).all()
    # every block holds both conditions: the order is interleaved, never all-A-then-all-B
    assert df.groupby("repetition")["condition"].nunique().eq(2).all()
    manifest = read_manifest(outcome.path)
    assert manifest["status"] == "complete" and manifest["seed"] == 20261122
    assert manifest["provenance"]["host"]["cpu_count"] >= 1
    assert manifest["provenance"]["connector_implementation"] in ("c-extension", "pure-python")
    assert set(manifest["checksums"]) >= {"results.csv", "servers.jsonl"}
    servers = [json.loads(x) for x in (outcome.path / "servers.jsonl").read_text().splitlines()]
    assert {s["log_bin"] for s in servers if s["condition"] == "binlog=on"} == {True}
    assert {s["log_bin"] for s in servers if s["condition"] == "binlog=off"} == {False}
    assert all((outcome.path / "variables" / f"{s['variables']}.json").exists() for s in servers)
    # nothing left behind: no server process, no scratch data directory
    assert not any(pid_alive(p) for p in _server_pids(outcome.path))
    assert not (tmp_path / "work" / outcome.run_id).exists()


def test_the_stamps_bracket_the_measured_work_not_the_meters_snapshots(tmp_path, write_params, mariadbd,
                                                                      monkeypatch):
    """The resource snapshots around each measurement are overhead (bench/overhead.py counts the
    stamped spans as measured time): made to last half a second each, they must fall between
    the spans, never inside one."""
    from claimlab import accounting

    def slow(method):
        def wrapped(self, *args):
            time.sleep(0.5)
            return method(self, *args)
        return wrapped

    monkeypatch.setattr(accounting.Meter, "start", slow(accounting.Meter.start))
    monkeypatch.setattr(accounting.Meter, "stop", slow(accounting.Meter.stop))
    exp = params.load(write_params(EXP.format(rows=10, iterations=1)))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    df = read_results(outcome.path)
    spans = df.drop_duplicates(["repetition", "iteration", "condition"]).sort_values("started_at")
    started, ended = (pd.to_datetime(spans[c]) for c in ("started_at", "ended_at"))
    assert len(spans) == 4
    assert ((ended - started).dt.total_seconds() < 0.5).all(), spans
    # each block's second measurement waits for the first one's closing and its own opening snapshot
    gaps = (started - ended.shift()).dt.total_seconds()[spans["repetition"].eq(spans["repetition"].shift())]
    assert len(gaps) == 2 and (gaps >= 1.0).all(), gaps


def _start_cli_run(params_path: Path, tmp_path: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "claimlab.cli", "run", str(params_path),
                             "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"),
                             "--no-progress", *extra], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def _run_dir(tmp_path: Path) -> Path | None:
    found = list((tmp_path / "raw").glob("exp/*/results.csv"))
    return found[0].parent if found else None


def _measurements(run_dir: Path) -> int:
    lines = (run_dir / "results.csv").read_text().splitlines()
    return sum(",elapsed_s," in line for line in lines)


def test_killed_server_is_retried_and_nothing_is_lost(tmp_path, write_params, mariadbd):
    path = write_params(EXP.format(rows=2000, iterations=3))
    proc = _start_cli_run(path, tmp_path)
    try:
        run_dir = wait_for(lambda: _run_dir(tmp_path))
        wait_for(lambda: _measurements(run_dir) >= 1)
        # a server that is alive now (the unit that stored the first row may have ended already)
        victim = wait_for(lambda: next((p for p in reversed(_server_pids(run_dir)) if pid_alive(p)), None))
        os.kill(victim, signal.SIGKILL)   # in the middle of a unit: the next CALL finds it gone
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    events = _events(run_dir)
    assert any(e["event"] == "attempt_failed" for e in events), events
    df = read_results(run_dir)
    _assert_one_row_per_measurement(df, 2 * 2 * 3)
    assert (df[df["metric"] == "elapsed_s"]["value"] > 0).all()
    assert not any(pid_alive(p) for p in _server_pids(run_dir))


def test_sigterm_stops_servers_and_resume_completes(tmp_path, write_params, mariadbd):
    path = write_params(EXP.format(rows=1500, iterations=3))
    proc = _start_cli_run(path, tmp_path)
    try:
        run_dir = wait_for(lambda: _run_dir(tmp_path))
        wait_for(lambda: _measurements(run_dir) >= 4)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert f"--resume {run_dir.name}" in err and "Traceback" not in err   # the id to resume, printed
    assert read_manifest(run_dir)["status"] == "interrupted"
    assert not any(pid_alive(p) for p in _server_pids(run_dir))
    before = read_results(run_dir)
    assert 4 <= before.groupby(["condition", "repetition", "iteration"]).ngroups < 12

    result = run_cli("run", str(path), "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"),
                     "--no-progress", "--resume", run_dir.name)
    assert result.returncode == 0, result.stderr
    assert "12 measurements stored (" in result.stdout   # the whole run, not only this session
    after = read_results(run_dir)
    _assert_one_row_per_measurement(after, 12)
    # what was measured before the interrupt is kept as it was, not measured again
    merged = before.merge(after, on=["condition", "repetition", "iteration", "metric"], suffixes=("", "_2"))
    assert len(merged) == len(before) and (merged["value"] == merged["value_2"]).all()
    assert read_manifest(run_dir)["status"] == "complete"
    assert not any(pid_alive(p) for p in _server_pids(run_dir))
    assert not (tmp_path / "work" / run_dir.name).exists()


def test_unavailable_target_is_reported_and_the_rest_runs(tmp_path, write_params, mariadbd):
    text = EXP.format(rows=20, iterations=1).replace(
        "workloads:", "  mysql80: {kind: mysql-tarball, path: /nonexistent/mysql-8.0.40.tar.xz}\nworkloads:")
    text = text.replace('"on": {server: {log_bin: true, sync_binlog: 1}}', '"on": {target: mysql80}')
    exp = params.load(write_params(text))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert "mysql80" in outcome.skipped and "does not exist" in outcome.skipped["mysql80"]
    assert set(read_results(outcome.path)["condition"]) == {"binlog=off"}
    assert "mysql80" in read_manifest(outcome.path)["skipped_targets"]


def test_cli_errors_are_one_line(tmp_path, write_params):
    bad = write_params(EXP.format(rows=0, iterations=1))
    result = run_cli("run", str(bad), "--data", str(tmp_path / "raw"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and str(bad) in result.stderr and "workloads.ins.rows" in result.stderr
    assert not (tmp_path / "raw").exists()


def test_crash_of_claimlab_leaves_a_resumable_run_and_its_server_is_reaped(tmp_path, write_params, mariadbd):
    path = write_params(EXP.format(rows=1500, iterations=3))
    proc = _start_cli_run(path, tmp_path)
    try:
        run_dir = wait_for(lambda: _run_dir(tmp_path))
        wait_for(lambda: _measurements(run_dir) >= 2)
        proc.kill()                      # SIGKILL: no handler runs, the server is orphaned
        proc.wait(timeout=30)
    finally:
        proc.kill()
    orphans = [p for p in _server_pids(run_dir) if pid_alive(p)]
    assert orphans, "expected the server of the killed run to be left running"
    sockdirs = [Path(line.removeprefix("socket=")).parent
                for cnf in (tmp_path / "work" / run_dir.name).glob("*/my.cnf")
                for line in cnf.read_text().splitlines() if line.startswith("socket=")]
    assert any(d.is_dir() for d in sockdirs), "the orphan's socket directory is outside the run directory"
    result = run_cli("run", str(path), "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"),
                     "--no-progress", "--resume", run_dir.name)
    assert result.returncode == 0, result.stderr
    assert not any(pid_alive(p) for p in orphans)
    assert not any(d.exists() for d in sockdirs), "the reaper leaves no socket directory behind"
    assert any(e["event"] == "reaped_stale_servers" for e in _events(run_dir))
    _assert_one_row_per_measurement(read_results(run_dir), 12)
    assert not any(pid_alive(p) for p in _server_pids(run_dir))


def _claims():
    from claimlab.claims import load_claims
    from conftest import ROOT
    return load_claims(ROOT / "data" / "claims.yaml")


def test_sequential_design_stops_when_the_claim_is_decided(tmp_path, write_params, mariadbd):
    from claimlab import campaign, stats
    text = EXP.format(rows=300, iterations=2).replace("ins:", "insert_loop:").replace(
        "max_attempts: 3}", "max_attempts: 3, sequential: {min_blocks: 3, max_blocks: 8, target_rel_width: 0.5}}")
    exp = params.load(write_params(text, name="binlog_default"))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False,
                         should_stop=campaign.should_stop(exp))
    decisions = [e for e in _events(outcome.path) if e["event"] == "sequential"]
    results = read_results(outcome.path)
    blocks = results["repetition"].nunique()
    # Asked after every complete block from min_blocks on; it stops at the first "stop", or the
    # design's cap ends it.
    assert [d["blocks"] for d in decisions] == list(range(3, 3 + len(decisions)))
    assert [d["stop"] for d in decisions[:-1]] == [False] * (len(decisions) - 1)
    assert (decisions[-1]["stop"] and 3 <= blocks < 8) or (not decisions[-1]["stop"] and blocks == 8), decisions
    # The last recorded decision is the statistics' own answer on the stored data (on a quiet machine
    # binlog on vs off is decided after 3-4 blocks; under load it may need them all).
    again = stats.should_stop(results, _claims()["C4"], StopRule.of_manifest(read_manifest(outcome.path)))
    assert again.stop == decisions[-1]["stop"] or blocks == 8
    assert StopRule.of_manifest(read_manifest(outcome.path)).max_blocks == 8


def test_a_target_with_a_fixed_design_of_its_own_runs_it_whole_without_looks(tmp_path, write_params, mariadbd):
    """`claimlab run --target other`: the design is the target's (`design_for`), and so is the
    stopping rule. Before, the command took the callback from the default target's
    sequential design, and the runner looked after every block of the fixed one (C2 on MySQL
    was looked at with MariaDB's rule; a file of another name stopped after one block)."""
    two = EXP.format(rows=50, iterations=2).replace(
        "  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}\n",
        "  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}\n"
        "  other: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}\n").replace(
        "max_attempts: 3}", "max_attempts: 3, sequential: {min_blocks: 2, max_blocks: 6}}\n"
        "profiles:\n  quick:\n    design_for: {other: {repetitions: 3, sequential: false}}")
    path = write_params(two, name="renamed_experiment")
    result = run_cli("run", str(path), "--profile", "quick", "--target", "other", "--no-progress",
                     "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"))
    assert result.returncode == 0, result.stderr
    (run_dir,) = (tmp_path / "raw" / "renamed_experiment").iterdir()
    assert not [e for e in _events(run_dir) if e["event"] == "sequential"]
    _assert_one_row_per_measurement(read_results(run_dir), 3 * 2 * 2)
    with pytest.raises(ValueError, match="a stopping callback goes with a sequential design, and only with one"):
        exp = params.with_default_target(params.load(path, "quick"), "other", "--target")
        runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", should_stop=lambda results: True)


def _sequential(write_params, rule: str):
    """The test experiment (fifty rows, two rounds a block) with the sequential design `rule`."""
    text = EXP.format(rows=50, iterations=2).replace("max_attempts: 3}", f"max_attempts: 3, sequential: {rule}}}")
    return params.load(write_params(text, name="binlog_default"))


def test_a_run_that_reaches_its_cap_records_what_the_cap_left(tmp_path, write_params, mariadbd):
    # no look follows the last block, so the runner asks once more and records the answer: a run
    # whose fast-state statistic counted fewer blocks than the rule's minimum says so
    exp = _sequential(write_params, "{min_blocks: 2, max_blocks: 3}")
    seen, should_stop = looks_that_go_on(lambda starts: f"{starts - 2} of at least 2 blocks")
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False,
                         should_stop=should_stop)
    assert outcome.status == "complete" and seen == [2, 3]
    events = _events(outcome.path)
    assert [(e["blocks"], e["stop"]) for e in events if e["event"] == "sequential"] == [(2, False)]
    (cap,) = [e for e in events if e["event"] == "sequential_cap"]
    assert (cap["blocks"], cap["decided"], cap["reason"]) == (3, False, "1 of at least 2 blocks")
    _assert_one_row_per_measurement(read_results(outcome.path), 3 * 2 * 2)


def test_a_look_runs_beside_the_next_start_and_sees_complete_blocks_only(tmp_path, write_params, mariadbd):
    # The look is taken in a thread while the next block's first server starts; it must see every
    # complete block and nothing of the one starting, and a "stop" must leave that block unmeasured.
    # With many looks left before the cap the start waits for the answer about a twentieth of a start's
    # cost at most (looks.look_wait), so the 0.3 s look below answers beside the start.
    exp = _sequential(write_params, "{min_blocks: 2, max_blocks: 20, target_rel_width: 0.5}")
    seen = []

    def should_stop(results):
        time.sleep(0.3)    # longer than a MariaDB start: the next block's server is up before the answer
        seen.append(sorted(results["repetition"].unique()))
        return len(seen) == 2, "scripted"

    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False,
                         should_stop=should_stop)
    assert outcome.status == "complete"
    assert seen == [[0, 1], [0, 1, 2]]
    events = _events(outcome.path)
    assert [(e["blocks"], e["stop"]) for e in events if e["event"] == "sequential"] == [(2, False), (3, True)]
    _assert_one_row_per_measurement(read_results(outcome.path), 3 * 2 * 2)
    (unused,) = [e for e in events if e["event"] == "unit_not_measured"]
    assert unused["repetition"] == 3
    assert len(_server_pids(outcome.path)) == 3 * 2 + 1
    assert not any(pid_alive(p) for p in _server_pids(outcome.path))
    assert all("look_s" in e["phases"] for e in events if e["event"] == "unit_done")


def test_a_look_that_answers_in_time_stops_the_run_before_the_next_block_starts(tmp_path, write_params, mariadbd,
                                                                               monkeypatch):
    # A start waits for its look (how long is looks.look_wait's, tested apart: half a start's cost
    # here, which a loaded host can outlast), and a "stop" answered within the wait starts no server
    # that would go unmeasured. The wait is made ample so the test checks the mechanism, not the
    # host's speed.
    monkeypatch.setattr(runner, "look_wait", lambda start_cost, looks_left: 60.0)
    exp = _sequential(write_params, "{min_blocks: 2, max_blocks: 3}")

    def should_stop(results):
        time.sleep(0.05)
        return True, "scripted"

    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False,
                         should_stop=should_stop)
    assert outcome.status == "complete"
    events = _events(outcome.path)
    assert [(e["blocks"], e["stop"]) for e in events if e["event"] == "sequential"] == [(2, True)]
    assert not [e for e in events if e["event"] == "unit_not_measured"]
    assert len(_server_pids(outcome.path)) == 2 * 2
    _assert_one_row_per_measurement(read_results(outcome.path), 2 * 2 * 2)


def test_two_runs_at_once_do_not_collide(tmp_path, write_params, mariadbd):
    path = write_params(EXP.format(rows=200, iterations=2))
    procs = [_start_cli_run(path, tmp_path) for _ in range(2)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    runs = sorted((tmp_path / "raw" / "exp").iterdir())
    assert len(runs) == 2 and runs[0].name != runs[1].name
    for run_dir in runs:
        _assert_one_row_per_measurement(read_results(run_dir), 8)
        assert read_manifest(run_dir)["status"] == "complete"
    pids = _server_pids(runs[0]) + _server_pids(runs[1])
    assert len(set(pids)) == len(pids) and not any(pid_alive(p) for p in pids)


def _sysbench_running(session: int) -> bool:
    """A `sysbench ... run` process in the claimlab run's session (not its load phase)."""
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"]
        try:
            if cmd and cmd[0].endswith("sysbench") and "run" in cmd and os.getsid(proc.pid) == session:
                return True
        except OSError:   # it ended meanwhile
            continue
    return False


def test_sigterm_during_sysbench_leaves_no_process_behind(tmp_path, write_params, mariadbd):
    path = write_params("""
claim: C1
targets:
  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}
workloads:
  oltp: {kind: sysbench, test: oltp_point_select, table_size: 200, time: 60, threads: 2}
design: {repetitions: 2, warmup: 0, iterations: 1}
""")
    proc = subprocess.Popen([sys.executable, "-m", "claimlab.cli", "run", str(path), "--data",
                             str(tmp_path / "raw"), "--work", str(tmp_path / "work"), "--no-progress"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        run_dir = wait_for(lambda: _run_dir(tmp_path))
        wait_for(lambda: _server_pids(run_dir))
        wait_for(lambda: _sysbench_running(proc.pid))   # in its 60 s measured phase now
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    # sysbench ran in claimlab's process group; none of that group may survive it
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
    assert not any(pid_alive(p) for p in _server_pids(run_dir))
    assert read_manifest(run_dir)["status"] == "interrupted"
