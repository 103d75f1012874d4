"""Preloading fills the data-directory cache with what a run would keep, under the run's own keys:
the run's first start of every cell then copies it and nothing is loaded or saved during the run.
Real MariaDB."""

import signal

import psutil

from claimlab import cli, datacache, params, preload, runner
from claimlab.store import read_jsonl
from conftest import interrupt_when

EXP = """
claim: C4
targets:
  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}
workloads:
  scan: {kind: varchar_scan, rows: 500}
factors:
  binlog:
    "off": {server: {log_bin: false}}
    "on": {server: {log_bin: true}}
  collation:
    general: {workloads: {scan: {charset: utf8mb4, collation: utf8mb4_general_ci}}}
    bin: {workloads: {scan: {charset: utf8mb4, collation: utf8mb4_bin}}}
design: {repetitions: 1, warmup: 0, iterations: 1}
"""


def test_a_run_starts_every_cell_from_the_preloaded_directory(tmp_path, write_params, mariadbd, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "datadirs"))
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 0.0)   # the test's loads are tiny
    exp = params.load(write_params(EXP))
    made = preload.preload(exp, work_root=tmp_path / "work")
    assert sorted(p.cell for p in made) == ["binlog=off", "binlog=on"]   # a server each, both tables in it
    assert all(p.kept and not p.found and p.seconds > 0 for p in made)
    assert len(list((tmp_path / "datadirs").iterdir())) == 2
    assert not list((tmp_path / "work").glob("preload-*"))   # its scratch directory is removed

    out = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert [s["datadir_from_cache"] for s in read_jsonl(out.path / "servers.jsonl")] == [True, True]
    assert not any(e["event"] == "datadir_cached" for e in read_jsonl(out.path / "events.jsonl"))

    again = preload.preload(exp, work_root=tmp_path / "work")
    assert [(p.found, p.seconds) for p in again] == [(True, 0.0), (True, 0.0)]


def test_a_quick_load_is_not_kept_nor_made_again_and_the_command_says_so(tmp_path, write_params, mariadbd,
                                                                         monkeypatch, capsys):
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "datadirs"))
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 1e6)   # nothing is worth a copy
    path = write_params(EXP)
    prepare = ["prepare", str(path), "--profile", "quick", "--work", str(tmp_path / "work")]
    assert cli.main(prepare) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all("not kept (quicker to make than to copy)" in line for line in lines), lines
    assert [p.name for p in (tmp_path / "datadirs").iterdir()] == [datacache.QUICK_DIR]   # no directory kept
    assert cli.main(prepare) == 0     # seen to be quick: no server is started for it again
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 2 and all(line.endswith("left to its run (quicker to make than to copy, seen before)")
                                   for line in lines), lines
    assert "loading" not in captured.err


def test_a_run_notes_its_quick_loads_and_the_preload_leaves_them_to_it(tmp_path, write_params, mariadbd,
                                                                       monkeypatch):
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "datadirs"))
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 1e6)
    exp = params.load(write_params(EXP))
    out = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert not any(s["datadir_from_cache"] for s in read_jsonl(out.path / "servers.jsonl"))
    said = []
    again = preload.preload(exp, work_root=tmp_path / "work", log=said.append)
    assert sorted((p.cell, p.quick) for p in again) == [("binlog=off", True), ("binlog=on", True)]
    assert not said     # nothing loaded


def test_a_cell_whose_server_does_not_start_is_left_to_its_run(tmp_path, write_params, mariadbd, monkeypatch):
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "datadirs"))
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 0.0)
    exp = params.load(write_params(EXP.replace('"on": {server: {log_bin: true}}',
                                               '"on": {server: {extra: {no_such_option: 1}}}')))
    said = []
    made = preload.preload(exp, work_root=tmp_path / "work", log=said.append)
    assert [p.cell for p in made] == ["binlog=off"] and made[0].kept
    assert any("binlog=on not loaded ahead, its run will load it" in line and "no_such_option" in line
               for line in said), said
    assert not list((tmp_path / "work").glob("preload-*"))


def test_sigterm_to_prepare_stops_the_server_it_was_loading(tmp_path, write_params, mariadbd):
    """Before: `claimlab prepare` took SIGTERM's default action and left the MariaDB it was
    loading running, and Ctrl-C told it to resume a run it never made."""
    path = write_params(EXP.replace("rows: 500", "rows: 400000"))
    code, err, servers = interrupt_when(["prepare", str(path), "--work", str(tmp_path / "work")],
                                        lambda p: p.name() == "mariadbd" and "--version" not in p.cmdline(),
                                        signal.SIGTERM,
                                        env={"CLAIMLAB_DATADIRS": str(tmp_path / "datadirs")})
    assert code == 130, err[-2000:]
    assert err.splitlines()[-2:] == [
        "claimlab: error: interrupted by SIGTERM",
        "claimlab: the tables loaded before the interrupt stay in the cache; the same command loads the rest"]
    gone, alive = psutil.wait_procs(servers, timeout=10)
    assert not alive, [p.pid for p in alive]


def test_sigterm_while_prepare_asks_a_server_its_version_interrupts_it(tmp_path, write_params):
    """Before: a SIGTERM while `mariadbd --version` ran (whether the target can run here) took the
    default action (exit -15, no word) before any handler was set; with one, the target was
    reported "not run: interrupted by SIGTERM" and prepare went on and exited 0."""
    slow = tmp_path / "slow_version.sh"
    slow.write_text('#!/bin/sh\n[ "$1" = "--version" ] && exec sleep 29.5\nexit 1\n')   # as slow as it can be
    slow.chmod(0o755)
    path = write_params(EXP.replace("{kind: mariadb,", f"{{kind: mariadb, binary: {slow},"))
    code, err, _ = interrupt_when(["prepare", str(path), "--work", str(tmp_path / "work")],
                                  lambda p: p.cmdline() == ["sleep", "29.5"], signal.SIGTERM,
                                  env={"CLAIMLAB_DATADIRS": str(tmp_path / "datadirs")})
    assert code == 130, err[-2000:]
    assert err.splitlines()[-2:] == [
        "claimlab: error: interrupted by SIGTERM",
        "claimlab: the tables loaded before the interrupt stay in the cache; the same command loads the rest"]
