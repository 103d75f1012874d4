"""A loaded data directory is kept after a run and copied by the next one (same binary, options and
tables); another table definition is a different entry. Real MariaDB."""

from claimlab import datacache, params, runner
from claimlab.store import read_jsonl, read_results

EXP = """
claim: C2
targets:
  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}
workloads:
  scan: {kind: varchar_scan, rows: ROWS}
design: {repetitions: 2, warmup: 1, iterations: 2}
"""


def test_second_run_starts_from_the_cached_load(tmp_path, write_params, mariadbd, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CLAIMLAB_DATADIRS")             # the suite's own; here the cache's default place
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 0.0)   # the test's load is tiny
    path = write_params(EXP.replace("ROWS", "500"))

    def run():
        out = runner.run(params.load(path), data_root=tmp_path / "raw", work_root=tmp_path / "work",
                         progress=False)
        return out.path, read_jsonl(out.path / "servers.jsonl")

    first, starts = run()
    assert [s["datadir_from_cache"] for s in starts] == [False, False]
    assert any(e["event"] == "datadir_cached" for e in read_jsonl(first / "events.jsonl"))
    assert len(list((tmp_path / "cache" / "datadirs").iterdir())) == 1
    second, starts = run()
    assert [s["datadir_from_cache"] for s in starts] == [True, False]   # then reused within the run
    assert not any(e["event"] == "datadir_cached" for e in read_jsonl(second / "events.jsonl"))
    df = read_results(second)
    assert len(df[df["metric"] == "elapsed_s"]) == 4       # the scans found all 500 rows (checked)

    other = write_params(EXP.replace("ROWS", "600"), name="other")
    out = runner.run(params.load(other), data_root=tmp_path / "raw", work_root=tmp_path / "work",
                     progress=False)
    assert read_jsonl(out.path / "servers.jsonl")[0]["datadir_from_cache"] is False
    assert len(list((tmp_path / "cache" / "datadirs").iterdir())) == 2
    assert all(oct(p.stat().st_mode)[-3:] == "700" for p in (tmp_path / "cache" / "datadirs").iterdir())
