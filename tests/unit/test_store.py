"""Raw results: append-only, whole measurements, torn tails detected and repaired, edits caught."""

import json

import pytest

from claimlab.errors import DataError
from claimlab.records import RESERVED_COLUMNS, MeasurementRecord, Metric, RunManifest
from claimlab.store import find_run, list_runs, read_jsonl, read_manifest, read_results, run_state, verify
from claimlab.writer import RunStore, write_atomic


def _row(store, condition="binlog=on", repetition=0, iteration=0, metrics=(("elapsed_s", 1.0),),
         levels=None):
    return MeasurementRecord(
        run_id=store.run_id, claim="C4", experiment="exp", condition=condition,
        levels=levels or (("binlog", condition.split("=")[1]),), target="default", server_version="10.11",
        workload="ins", repetition=repetition, iteration=iteration, seq=0, attempt=1, started_at="t0",
        ended_at="t1", contention=False, metrics=tuple(Metric(n, v, "s") for n, v in metrics))


@pytest.fixture
def store(tmp_path):
    return RunStore.create(tmp_path / "raw", RunManifest.new(experiment="exp", claim="C4", profile="quick",
                                                            factors=["binlog"]))


def test_append_and_read_back(store):
    store.append(_row(store, metrics=(("elapsed_s", 1.0), ("roundtrip_s", 0.001))))
    store.append(_row(store, iteration=1, metrics=(("elapsed_s", 2.0),)))
    df = read_results(store.path)
    assert len(df) == 3
    assert store.completed() == {("binlog=on", "ins", 0, 0), ("binlog=on", "ins", 0, 1)}
    assert df["binlog"].tolist() == ["on", "on", "on"]


def test_each_stored_starts_fastest_value_takes_up_a_resumed_runs_fast_level(store):
    for repetition, rounds in enumerate([[(2.0, 5.0), (1.5, 6.0)], [(3.0, 4.0), (2.5, 7.0)]]):
        for iteration, (on, off) in enumerate(rounds):
            store.append(_row(store, repetition=repetition, iteration=iteration,
                              metrics=(("elapsed_s", on), ("qps", 10 * on))))
            store.append(_row(store, condition="binlog=off", repetition=repetition, iteration=iteration,
                              metrics=(("elapsed_s", off),)))
    assert store.start_bests("elapsed_s", "min") == {("binlog=on", "ins"): [1.5, 2.5],
                                                     ("binlog=off", "ins"): [5.0, 4.0]}
    assert store.start_bests("qps", "max") == {("binlog=on", "ins"): [20.0, 30.0]}
    assert store.start_bests("latency", "min") == {}


def test_run_directory_is_never_reused(tmp_path, store):
    with pytest.raises(FileExistsError):
        RunStore.create(tmp_path / "raw", RunManifest.new(experiment="exp", claim="C4", profile="quick",
                                                          factors=["binlog"], run_id=store.run_id))


def test_a_data_directory_that_cannot_hold_runs_is_a_one_line_error(tmp_path):
    (tmp_path / "a_file").write_text("")
    manifest = RunManifest.new(experiment="exp", claim="C4", profile="quick", factors=["binlog"])
    with pytest.raises(DataError, match=r"a_file: cannot make a run directory there \(Not a directory\)"):
        RunStore.create(tmp_path / "a_file", manifest)


def test_torn_last_line_is_detected_then_repaired(store):
    store.append(_row(store))
    with open(store.path / "results.csv", "a") as fh:
        fh.write("20261122,C4,exp,binlog=on,on,def")   # a crash mid-write
    with pytest.raises(DataError, match=f"the last line is torn; if the run crashed mid-write, `claimlab run "
                                        f"{store.path.parent.name} --resume {store.run_id}` repairs it"):
        read_results(store.path)
    store.close()     # the crashed writer's lock is gone with it
    reopened = RunStore.open_run(store.path)
    assert len(read_results(reopened.path)) == 1
    events = [json.loads(x) for x in (store.path / "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "repaired" and events[-1]["file"] == "results.csv"


def test_a_run_is_read_from_the_text_of_its_path_as_from_a_path(store):
    # what a notebook cell often holds; a str once failed deep inside with "unsupported operand"
    store.append(_row(store))
    store.finish("complete")
    text = str(store.path)
    assert read_results(text).equals(read_results(store.path))
    assert read_manifest(text) == read_manifest(store.path)
    assert verify(text) == [] and run_state(text).verified
    assert read_jsonl(text + "/events.jsonl") == read_jsonl(store.path / "events.jsonl")


def test_edit_after_finish_is_refused_unless_accepted(store):
    store.append(_row(store))
    store.finish("complete")
    assert verify(store.path) == []
    text = (store.path / "results.csv").read_text().replace(",1.0,", ",0.5,")
    (store.path / "results.csv").write_text(text)
    with pytest.raises(DataError, match="checksum"):
        read_results(store.path)
    assert read_results(store.path, accept_modified=True)["value"].tolist() == [0.5]


def test_unknown_format_version_is_refused(store):
    manifest = json.loads((store.path / "manifest.json").read_text())
    manifest["format_version"] = 99
    (store.path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="format_version"):
        read_results(store.path)


def test_measurement_missing_a_column_is_refused(store):
    with pytest.raises(DataError, match="binlog"):
        store.append(_row(store, levels=(("charset", "x"),)))
    assert store.completed() == set()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1.0", True])
def test_metric_refuses_what_is_not_a_finite_number(bad):
    with pytest.raises(ValueError, match="finite"):
        Metric("elapsed_s", bad, "s")


def test_measurement_record_is_validated_when_built(store):
    with pytest.raises(ValueError, match="repeats"):
        _row(store, metrics=(("elapsed_s", 1.0), ("elapsed_s", 2.0)))
    with pytest.raises(ValueError, match="attempt"):
        MeasurementRecord(**{**_row(store).__dict__, "attempt": 0})
    with pytest.raises(ValueError, match="results column"):
        _row(store, levels=(("attempt", "x"),))


def test_reserved_names_are_the_store_columns():
    assert {"attempt", "started_at", "server_version", "contention", "experiment", "metric"} <= RESERVED_COLUMNS
    with pytest.raises(ValueError, match="results column"):
        RunManifest.new(experiment="e", claim="C1", profile="quick", factors=["ended_at"])


def test_unfinished_run_reads_as_unverified(store):
    store.append(_row(store))
    assert read_results(store.path).attrs["run_state"]["verified"] is False
    assert "unverified" in run_state(store.path).note
    store.finish("complete")
    assert read_results(store.path).attrs["run_state"] == {"status": "complete", "verified": True,
                                                          "note": "complete, verified"}


def test_a_finished_run_without_checksums_is_refused_not_read_as_verified(store):
    # Before: with its checksums removed from the manifest, an edited complete run read as
    # "complete, verified" and its edited values gave another verdict.
    store.append(_row(store))
    store.finish("complete")
    manifest = read_manifest(store.path)
    for checksums in ({}, None):
        edited = {k: v for k, v in manifest.items() if k != "checksums"}
        if checksums is not None:
            edited["checksums"] = checksums
        (store.path / "manifest.json").write_text(json.dumps(edited))
        with pytest.raises(DataError, match="the run ended \\(complete\\) but its manifest holds no checksums"):
            read_results(store.path)
        said = read_results(store.path, accept_modified=True).attrs["run_state"]
        assert said == {"status": "complete", "verified": False, "note": "complete, unverified (no checksums)"}


def test_a_missing_table_or_a_broken_line_is_a_data_error_not_a_traceback(store):
    store.append(_row(store))
    store.finish("complete")
    (store.path / "events.jsonl").write_text('{"event": "warmup"}\n{"event": \n')
    with pytest.raises(DataError, match="events.jsonl: line 2 is not JSON"):
        read_jsonl(store.path / "events.jsonl")
    (store.path / "results.csv").unlink()     # with --accept-modified it was a FileNotFoundError
    with pytest.raises(DataError, match="results.csv: missing; is this a whole claimlab run directory"):
        read_results(store.path, accept_modified=True)


def test_server_variables_are_inside_the_checksums(store):
    sha = store.record_server({"seq": 0, "attempt": 1}, {"log_bin": "ON"})
    store.finish("complete")
    assert f"variables/{sha}.json" in read_manifest(store.path)["checksums"]
    (store.path / "variables" / f"{sha}.json").write_text('{"log_bin": "OFF"}\n')
    with pytest.raises(DataError, match="variables/"):
        read_results(store.path)


def test_format_1_runs_stay_readable():
    """The one format-1 run kept frozen (format 1 did not checksum variables/): old runs stay readable."""
    from conftest import RAW, frozen_id
    run = find_run(frozen_id("format_1"), RAW)
    assert read_manifest(run)["format_version"] == 1
    df = read_results(run)
    assert len(df) > 0 and df.attrs["run_state"]["verified"]


def test_find_run(tmp_path, store):
    assert find_run(store.run_id, tmp_path / "raw") == store.path == find_run(store.run_id, str(tmp_path / "raw"))
    assert [r["run_id"] for r in list_runs(str(tmp_path / "raw"))] == [store.run_id]
    with pytest.raises(DataError, match="claimlab runs"):
        find_run("nope", tmp_path / "raw")


def test_disk_full_mid_write_leaves_a_valid_file(store, monkeypatch):
    """A write that stops half-way (ENOSPC) is cut back: no torn line, the measurement is not done."""
    import os as os_module
    store.append(_row(store))
    real_write = os_module.write

    def half_then_full(fd, data):
        real_write(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os_module, "write", half_then_full)
    with pytest.raises(DataError, match="No space left on device.*--resume"):
        store.append(_row(store, iteration=1))
    monkeypatch.undo()
    assert store.completed() == {("binlog=on", "ins", 0, 0)}
    assert (store.path / "results.csv").read_bytes().endswith(b"\n")
    assert len(read_results(store.path)) == 1


def test_unwritable_results_file_is_a_clear_error(store):
    (store.path / "results.csv").unlink()
    (store.path / "results.csv").mkdir()   # cannot be opened for writing, even by root
    with pytest.raises(DataError, match="results.csv: cannot open for writing"):
        store.append(_row(store))


def test_measurements_reach_the_disk_once_per_sync_not_one_by_one(store, monkeypatch):
    """An fsync per measurement cost 0.66 ms between two 47 ms scans: `append` writes, `sync` (after
    each unit) and `finish` flush the measurement files."""
    import os as os_module
    synced = []
    real_fsync = os_module.fsync

    def counted(fd):
        synced.append(os_module.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[1])
        real_fsync(fd)

    monkeypatch.setattr(os_module, "fsync", counted)
    for i in range(3):
        store.append(_row(store, iteration=i))
    assert synced == []
    store.sync()
    assert sorted(synced) == ["intervals.csv", "results.csv"]
    synced.clear()
    store.finish("complete")
    assert {"intervals.csv", "results.csv"} <= set(synced)
    assert len(read_results(store.path)) == 3


def test_an_atomic_write_takes_text_or_bytes_and_leaves_no_temporary_file_when_it_fails(tmp_path):
    """The cluster's packed runs are bytes; a write that cannot land keeps the old content."""
    path = tmp_path / "outbox.tar.gz"
    write_atomic(path, b"\x1f\x8b\x00")
    assert path.read_bytes() == b"\x1f\x8b\x00"
    write_atomic(path, "text", sync=False)
    assert path.read_text() == "text"
    taken = tmp_path / "taken"
    (taken / "inside").mkdir(parents=True)       # a directory in the way: the rename fails
    with pytest.raises(DataError, match="taken: cannot write"):
        write_atomic(taken, b"new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outbox.tar.gz", "taken"]
