"""Packed runs: a shipped run's tables as Parquet read back exactly as the CSV did, checksummed,
refused when edited, and never left half-packed (tested on a CSV copy of a frozen shipped run)."""

from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest

from claimlab import cli
from claimlab import pack as pack_mod
from claimlab.errors import DataError
from claimlab.pack import (
    PACK_FORMAT_VERSION,
    AlreadyPacked,
    NotPackable,
    PackError,
    _read_parquet,
    _write_parquet,
    frame_difference,
    pack,
)
from claimlab.store import (
    load_manifest,
    read_csv,
    read_intervals,
    read_manifest,
    read_results,
    run_state,
    sha256_file,
    verify,
)
from claimlab.writer import RunStore
from conftest import ROOT, copy_run, frozen, frozen_id

SHIPPED = frozen_id("c1")


@pytest.fixture
def run(tmp_path):
    """A CSV copy of a frozen run (data/raw is never touched, and may hold it packed)."""
    return copy_run(frozen("c1"), tmp_path / "raw")


def _files(path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_packed_run_reads_as_its_csv(run):
    before, intervals = read_results(run), read_intervals(run)
    csv_bytes, checksums = (run / "results.csv").stat().st_size, load_manifest(run).checksums
    entry = pack(run)
    assert not (run / "results.csv").exists()
    parquet = run / "results.parquet"
    assert parquet.stat().st_size < csv_bytes / 3
    after = read_results(run)
    assert frame_difference(before, after) == ""
    pd.testing.assert_frame_equal(before, after, check_exact=True)
    assert after.attrs["run_state"] == {"status": "complete", "verified": True, "note": "complete, verified"}
    assert frame_difference(intervals, read_intervals(run)) == ""   # header only: left as CSV
    assert (run / "intervals.csv").exists()
    manifest = read_manifest(run)
    assert manifest["checksums"] == checksums                       # the record of what was measured
    assert manifest["packed"] == entry
    assert entry["format_version"] == PACK_FORMAT_VERSION
    assert entry["tables"] == {"results.csv": {"file": "results.parquet", "sha256": sha256_file(parquet),
                                               "csv_sha256": checksums["results.csv"], "rows": len(before),
                                               "csv_bytes": csv_bytes}}
    assert verify(run) == []


def test_a_small_table_is_packed_too_when_over_the_threshold(run, monkeypatch):
    monkeypatch.setattr(pack_mod, "MIN_PACK_BYTES", 0)
    intervals, results = read_intervals(run), read_results(run)
    assert set(pack(run)["tables"]) == {"results.csv", "intervals.csv"}
    assert not (run / "intervals.csv").exists()
    assert frame_difference(intervals, read_intervals(run)) == ""    # a header only: no rows
    assert frame_difference(results, read_results(run)) == ""
    assert verify(run) == []
    (run / "intervals.parquet").unlink()
    assert verify(run, accept_modified=True) == ["intervals.parquet"]


def test_frame_difference_sees_one_changed_value_dtype_or_missing_value():
    a = pd.DataFrame({"x": [1.0, float("nan")], "s": pd.Series(["a", None], dtype="str"), "n": [1, 2]})
    assert frame_difference(a, a.copy()) == ""
    assert "x" in frame_difference(a, a.assign(x=[1.0 + 1e-15, float("nan")]))
    assert "x" in frame_difference(a, a.assign(x=[1.0, 0.0]))
    assert "x" in frame_difference(a.assign(x=[0.0, 1.0]), a.assign(x=[-0.0, 1.0]))
    assert "s" in frame_difference(a, a.assign(s=pd.Series(["a", ""], dtype="str")))
    assert "dtype" in frame_difference(a, a.assign(n=[1.0, 2.0]))
    assert "columns" in frame_difference(a, a[["s", "x", "n"]])


def test_missing_values_come_back_from_parquet_as_the_csv_reader_gives_them(tmp_path):
    """NaN, not Arrow's None, in text columns (object columns in pandas 2, `str` in pandas 3)."""
    (tmp_path / "t.csv").write_text("condition,server_version,s,x,e\n1,,a,1.5,\n2,10.11,,,\n")
    frame = read_csv(tmp_path / "t.csv")
    assert frame["s"].isna().tolist() == [False, True] and frame["server_version"].isna().tolist() == [True, False]
    _write_parquet(frame, tmp_path / "t.parquet")
    assert frame_difference(frame, _read_parquet(tmp_path / "t.parquet")) == ""


def test_an_edited_parquet_is_refused_as_an_edited_csv_is(run):
    pack(run)
    table = pq.read_table(run / "results.parquet").to_pandas()
    table.loc[0, "value"] *= 0.5
    table.to_parquet(run / "results.parquet", index=False)
    assert verify(run, accept_modified=True) == ["results.parquet"]
    with pytest.raises(DataError, match="results.parquet changed after the run"):
        read_results(run)
    assert read_results(run, accept_modified=True).attrs["run_state"]["verified"] is False


def test_a_csv_left_beside_its_parquet_counts_only_when_it_differs(run):
    """A pack stopped after the manifest was written leaves the CSV: the same data, no change."""
    original = (run / "results.csv").read_bytes()
    pack(run)
    (run / "results.csv").write_bytes(original)
    assert verify(run) == []
    (run / "results.csv").write_bytes(original.replace(b"\n", b"\n ", 1))
    assert verify(run, accept_modified=True) == ["results.csv"]


def test_the_manifests_two_records_of_the_csv_must_agree(run):
    pack(run)
    manifest = load_manifest(run)
    RunStore(run, manifest.columns).write_manifest(manifest.with_(checksums=manifest.checksums | {
        "results.csv": "0" * 64}))
    assert verify(run, accept_modified=True) == ["results.csv"]


def test_an_unknown_pack_version_is_refused(run):
    pack(run)
    manifest = load_manifest(run)
    RunStore(run, manifest.columns).write_manifest(manifest.with_(
        extra=manifest.extra | {"packed": manifest.extra["packed"] | {"format_version": 99}}))
    with pytest.raises(DataError, match="packed.format_version 99"):
        read_results(run)


@pytest.mark.parametrize("change", ["interrupted", "running", "edited"])
def test_a_run_not_complete_and_verified_is_not_packed(run, change):
    manifest = load_manifest(run)
    if change == "edited":
        text = (run / "results.csv").read_text()   # a measurement counted twice
        (run / "results.csv").write_text(text + text.splitlines()[-1] + "\n")
    else:
        RunStore(run, manifest.columns).write_manifest(manifest.with_(
            status=change, checksums={} if change == "running" else manifest.checksums))
    files = _files(run)
    with pytest.raises(NotPackable, match="only a"):
        pack(run)
    assert _files(run) == files


def test_a_packed_run_is_not_packed_again(run):
    pack(run)
    files = _files(run)
    with pytest.raises(AlreadyPacked, match="already packed"):
        pack(run)
    assert _files(run) == files


@pytest.mark.parametrize("failing_call", [1, 2], ids=["parquet-rename", "manifest-rename"])
def test_an_interrupted_pack_leaves_the_run_as_it_was(run, monkeypatch, failing_call):
    before, files = read_results(run), _files(run)
    real_replace, calls = os.replace, []

    def replace_failing_once(src, dst):
        calls.append(dst)
        if len(calls) == failing_call:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_failing_once)
    with pytest.raises(PackError, match="the run is unchanged"):
        pack(run)
    assert len(calls) == failing_call
    assert _files(run) == files                      # no Parquet, no temporary file, same manifest
    assert frame_difference(before, read_results(run)) == ""
    monkeypatch.setattr(os, "replace", real_replace)
    pack(run)                                        # and it packs once the disk has room
    assert frame_difference(before, read_results(run)) == ""


@pytest.fixture
def checkout(tmp_path, monkeypatch, run):
    """A checkout of its own (CLAIMLAB_ROOT): the run under runs/, a published list under data/."""
    root = tmp_path / "checkout"
    (root / "data").mkdir(parents=True)
    (root / "data" / "published_runs.json").write_text('{\n "collation_cost": ["x"]\n}\n')
    shutil.copytree(run, root / "runs" / "charset_mismatch" / SHIPPED)
    monkeypatch.setenv("CLAIMLAB_ROOT", str(root))
    return root


def test_publish_ships_a_packed_copy_and_lists_it_only_when_asked(checkout, capsys):
    source = checkout / "runs" / "charset_mismatch" / SHIPPED
    before, files = read_results(source), _files(source)
    assert cli.main(["publish", SHIPPED]) == 0
    shipped = checkout / "data" / "raw" / "charset_mismatch" / SHIPPED
    assert f"published {SHIPPED}" in capsys.readouterr().out
    assert "packed" in read_manifest(shipped) and not (shipped / "results.csv").exists()
    assert frame_difference(before, read_results(shipped)) == ""
    assert _files(source) == files                   # runs/ keeps its original
    assert [p.name for p in shipped.parent.iterdir()] == [SHIPPED]   # no staging directory left
    listed = json.loads((checkout / "data" / "published_runs.json").read_text())
    assert listed == {"collation_cost": ["x"]}
    assert cli.main(["publish", SHIPPED, "--mark-published"]) == 0   # again: the same run, now listed
    assert capsys.readouterr().out.splitlines() == [   # before: "published" again, where nothing changed
        f"{SHIPPED} is shipped already, packed: {shipped}",
        f"listed {SHIPPED} in data/published_runs.json under charset_mismatch"]
    listed = json.loads((checkout / "data" / "published_runs.json").read_text())
    assert listed == {"collation_cost": ["x"], "charset_mismatch": [SHIPPED]}
    assert run_state(shipped).verified


def test_publish_refuses_in_one_line(checkout, capsys):
    assert cli.main(["publish", "20000101T000000Z-000000"]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    source = checkout / "runs" / "charset_mismatch" / SHIPPED
    manifest = load_manifest(source)
    RunStore(source, manifest.columns).write_manifest(manifest.with_(status="interrupted"))
    assert cli.main(["publish", SHIPPED, "--mark-published"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "status is 'interrupted'" in err and str(source) in err
    assert not (checkout / "data" / "raw").exists()
    assert "charset_mismatch" not in (checkout / "data" / "published_runs.json").read_text()


def test_analyze_says_the_same_of_a_packed_run(run, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert cli.main(["analyze", SHIPPED, "--data", str(run.parents[1])]) == 0
    as_csv = capsys.readouterr().out
    pack(run)
    assert cli.main(["analyze", SHIPPED, "--data", str(run.parents[1])]) == 0
    assert capsys.readouterr().out == as_csv
    assert "latin1 client, utf8mb4 server vs latin1 throughout" in as_csv
