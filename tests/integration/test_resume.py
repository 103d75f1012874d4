"""Resume checks first and touches nothing unless it proceeds; every way a run can end closes its
manifest; only what can pass on a second try is retried. Real MariaDB, tiny workloads."""

import fcntl
import json
from pathlib import Path

import pandas as pd
import pytest

from claimlab import accounting, params, runner, units, witness
from claimlab.errors import SettingsMismatch, WorkloadError
from claimlab.store import read_jsonl, read_manifest, read_results
from claimlab.writer import RunStore
from conftest import SMALL_SCAN, run_cli


def _files(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}


def _interrupted(tmp_path, path: Path, after_appends: int = 6) -> Path:
    """A run stopped by Ctrl-C after `after_appends` measurements (mid-unit: 6 per unit here)."""
    exp = params.load(path)
    real = RunStore.append
    count = {"n": 0}

    def append(self, record):
        if count["n"] == after_appends:
            raise KeyboardInterrupt
        count["n"] += 1
        real(self, record)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RunStore, "append", append)
        with pytest.raises(KeyboardInterrupt):
            runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    (run_dir,) = (tmp_path / "raw" / "exp").iterdir()
    return run_dir


def _resume(tmp_path, path, run_dir):
    return run_cli("run", str(path), "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"),
                   "--no-progress", "--resume", run_dir.name)


def _one_line_refusal(result, *words):
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def test_paired_rounds_share_a_server_start_and_carry_probes(tmp_path, write_params, mariadbd):
    exp = params.load(write_params(SMALL_SCAN.replace("warmup: 0", "warmup: 1")))
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    df = read_results(outcome.path)
    servers = read_jsonl(outcome.path / "servers.jsonl")
    assert len(servers) == 2      # one server start per block, both collations in it
    elapsed = df[df["metric"] == "elapsed_s"].sort_values("started_at")
    assert len(elapsed) == 12
    for (seq, rep, attempt), unit in elapsed.groupby(["seq", "repetition", "attempt"]):
        assert seq == rep and attempt == 1
        # round by round: each condition once per round, rounds in time order
        assert unit.groupby("iteration")["condition"].apply(sorted).map(tuple).nunique() == 1
        assert unit["iteration"].is_monotonic_increasing
    firsts = elapsed.groupby(["seq", "iteration"])["condition"].first()
    assert firsts.nunique() == 2, "the order within rounds is randomized, not fixed"
    probes = df[df["metric"].isin(["probe_before_s", "probe_after_s"])]
    assert len(probes) == 24 and (probes["value"] > 0).all()
    probe = read_manifest(outcome.path)["speed_probe"]
    assert probe["n"] >= 1 and f"BENCHMARK({probe['n']}," in probe["sql"]
    # sized from the first start's warm-up calls (their median), each call recorded in the warm-up event
    first = next(e for e in read_jsonl(outcome.path / "events.jsonl") if e["event"] == "warmup")
    assert len(first["each_s"]) == first["measurements"] == 2
    assert probe["target_s"] == round(witness.target_seconds(first["each_s"]), 4)


def test_interrupt_mid_unit_then_resume_numbers_the_new_server_start(tmp_path, write_params, mariadbd):
    path = write_params(SMALL_SCAN)
    run_dir = _interrupted(tmp_path, path, after_appends=8)
    assert read_manifest(run_dir)["status"] == "interrupted"
    assert set(read_manifest(run_dir)["checksums"]) >= {"results.csv", "servers.jsonl"}
    before = read_results(run_dir)
    result = _resume(tmp_path, path, run_dir)
    assert result.returncode == 0, result.stderr
    after = read_results(run_dir)
    elapsed = after[after["metric"] == "elapsed_s"]
    assert len(elapsed) == 12 and not elapsed.duplicated(["condition", "repetition", "iteration"]).any()
    # the unit cut after 2 of its 6 measurements finished on a second server process: the rows
    # say so by their attempt, and servers.jsonl maps each (seq, attempt) to its pid
    cut = elapsed[elapsed["seq"] == 1]
    assert sorted(cut["attempt"].unique()) == [1, 2]
    starts = {(s["seq"], s["attempt"]): s["pid"] for s in read_jsonl(run_dir / "servers.jsonl")}
    assert starts[(1, 1)] != starts[(1, 2)]
    kept = before.merge(after, on=["condition", "repetition", "iteration", "metric"], suffixes=("", "_2"))
    assert len(kept) == len(before) and (kept["value"] == kept["value_2"]).all()


def test_resume_refuses_an_edited_params_file_and_touches_nothing(tmp_path, write_params, mariadbd):
    path = write_params(SMALL_SCAN)
    run_dir = _interrupted(tmp_path, path)
    files = _files(run_dir)
    path.write_text(path.read_text().replace("rows: 300", "rows: 400"))
    _one_line_refusal(_resume(tmp_path, path, run_dir), "differs from the params")
    assert _files(run_dir) == files


def test_resume_refuses_a_hand_edited_value(tmp_path, write_params, mariadbd):
    path = write_params(SMALL_SCAN)
    run_dir = _interrupted(tmp_path, path)
    results = run_dir / "results.csv"
    lines = results.read_text().splitlines(keepends=True)
    cells = lines[1].split(",")
    idx = read_manifest(run_dir)["columns"].index("value")
    cells[idx] = "0.5"
    results.write_text("".join([lines[0], ",".join(cells), *lines[2:]]))
    files = _files(run_dir)
    _one_line_refusal(_resume(tmp_path, path, run_dir), "results.csv", "checksum")
    assert _files(run_dir) == files and read_manifest(run_dir)["status"] == "interrupted"


def test_resume_of_a_complete_run_with_a_cut_line_refuses_without_trimming(tmp_path, write_params, mariadbd):
    path = write_params(SMALL_SCAN)
    run_dir = _interrupted(tmp_path, path)
    assert _resume(tmp_path, path, run_dir).returncode == 0
    results = run_dir / "results.csv"
    results.write_bytes(results.read_bytes()[:-7])
    files = _files(run_dir)
    _one_line_refusal(_resume(tmp_path, path, run_dir), "already complete")
    assert _files(run_dir) == files


def test_resume_of_a_live_run_is_one_line_and_writes_no_event(tmp_path, write_params, mariadbd):
    path = write_params(SMALL_SCAN)
    run_dir = _interrupted(tmp_path, path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["status"] = "running"          # as a live run's manifest reads
    manifest.pop("checksums")
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    lock_path = tmp_path / "work" / run_dir.name / ".lock"
    lock_path.parent.mkdir(parents=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)   # the live run holds this
        files = _files(run_dir)
        _one_line_refusal(_resume(tmp_path, path, run_dir), "still running")
        assert _files(run_dir) == files


@pytest.mark.parametrize("fault, status", [
    (RuntimeError("a bug"), "failed"),
    (OSError(5, "I/O error"), "failed"),
    (WorkloadError("workload scan: measuring failed"), "failed"),
    (KeyboardInterrupt(), "interrupted"),
])
def test_every_exception_closes_the_run(tmp_path, write_params, mariadbd, monkeypatch, fault, status):
    """Raised where the run has a server up (the meter opens its connection)."""
    def broken(self, server):
        raise fault
    monkeypatch.setattr(accounting.Meter, "__init__", broken)
    exp = params.load(write_params(SMALL_SCAN))
    with pytest.raises(type(fault)):
        runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    (run_dir,) = (tmp_path / "raw" / "exp").iterdir()
    manifest = read_manifest(run_dir)
    assert manifest["status"] == status and manifest["checksums"]
    assert read_jsonl(run_dir / "events.jsonl")[-1]["event"] == status
    assert len(read_jsonl(run_dir / "servers.jsonl")) == 1      # not retried
    assert not (tmp_path / "work" / run_dir.name).exists()


def test_setting_mismatch_is_not_retried(tmp_path, write_params, mariadbd, monkeypatch):
    def mismatch(requested, facts, target):
        raise SettingsMismatch(f"target {target}: log_bin requested ON, server reports OFF")
    monkeypatch.setattr(units, "verify_settings", mismatch)
    with pytest.raises(SettingsMismatch):
        runner.run(params.load(write_params(SMALL_SCAN)), data_root=tmp_path / "raw", work_root=tmp_path / "work",
                   progress=False)
    (run_dir,) = (tmp_path / "raw" / "exp").iterdir()
    assert len(read_jsonl(run_dir / "servers.jsonl")) == 1
    assert read_manifest(run_dir)["status"] == "failed"


def test_a_refused_collation_fails_once_and_is_not_retried(tmp_path, write_params, mariadbd):
    text = SMALL_SCAN.replace("collation: latin1_swedish_ci", "collation: latin1_no_such_ci")
    with pytest.raises(WorkloadError, match="latin1_no_such_ci"):
        runner.run(params.load(write_params(text)), data_root=tmp_path / "raw", work_root=tmp_path / "work",
                   progress=False)
    (run_dir,) = (tmp_path / "raw" / "exp").iterdir()
    assert len(read_jsonl(run_dir / "servers.jsonl")) == 1
    assert read_manifest(run_dir)["status"] == "failed"
    assert pd.read_csv(run_dir / "results.csv").empty


def test_a_unit_resumed_halfway_is_not_extended_and_the_next_one_is(tmp_path, write_params, mariadbd):
    """`design.fast_rounds`: three rounds cannot hold four fast values, so every unit measured whole
    gets rounds added; the unit cut by the interrupt completes its three rounds only, and the next
    unit reads its fast level from the run's stored starts (RunStore.start_bests)."""
    text = SMALL_SCAN.replace("max_attempts: 3}", "max_attempts: 3,\n         fast_rounds: "
                              "{metric: elapsed_s, count: 4, max_iterations: 5}}")
    path = write_params(text)
    run_dir = _interrupted(tmp_path, path, after_appends=2)
    result = _resume(tmp_path, path, run_dir)
    assert result.returncode == 0, result.stderr
    elapsed = read_results(run_dir).query("metric == 'elapsed_s'")
    assert not elapsed.duplicated(["condition", "repetition", "iteration"]).any()
    rounds = elapsed.groupby("seq")["iteration"].nunique()
    assert rounds[0] == 3 and 4 <= rounds[1] <= 5, rounds
    added = [(e["seq"], e["added"]) for e in read_jsonl(run_dir / "events.jsonl") if e["event"] == "fast_rounds"]
    assert added == [(1, rounds[1] - 3)]
