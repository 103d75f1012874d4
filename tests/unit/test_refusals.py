"""Bad input that once slipped through or ended in a traceback: each is refused in one line naming
the file (and field, line or run) before anything runs; duplicated measurements are refused by
every reader (docs/faults.md)."""

import os
import re
from pathlib import Path

import pytest

from claimlab import params
from claimlab.errors import ConfigError, DataError
from claimlab.records import MeasurementRecord, Metric, RunManifest
from claimlab.store import find_run, read_results
from claimlab.writer import RunStore
from conftest import ROOT, run_cli

BASE = (ROOT / "params" / "binlog_default.yaml").read_text()
MINIMAL = """claim: C4
targets:
  default: {kind: mariadb}
workloads:
  WORKLOAD: {kind: proc_insert_loop, rows: 100}
"""


def _write(tmp_path: Path, text: str, name: str = "exp") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def test_a_control_character_is_one_line_naming_file_line_and_column(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_bytes(b"# \x1b[0m\n" + BASE.encode())
    with pytest.raises(ConfigError) as err:
        params.load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: line 1, column 3: ") and "\x1b" not in message, message
    assert "\n" not in message and ("#x001b" in message or "\\x1b" in message), message


@pytest.mark.parametrize("where", ["workload", "level", "factor"])
def test_names_ending_in_a_newline_are_refused(tmp_path, where):
    text = MINIMAL.replace("WORKLOAD", "ins")
    if where == "workload":
        text = MINIMAL.replace("WORKLOAD", '"ins\\n"')
    elif where == "level":
        text += 'factors:\n  binlog:\n    "on\\n": {server: {log_bin: true}}\n'
    else:
        text += 'factors:\n  "binlog\\n":\n    "on": {server: {log_bin: true}}\n'
    with pytest.raises(ConfigError, match="is not a valid name"):
        params.load(_write(tmp_path, text))


def test_a_size_or_charset_ending_in_a_newline_is_refused(tmp_path):
    text = MINIMAL.replace("WORKLOAD", "ins").replace("{kind: mariadb}",
                                                      '{kind: mariadb, options: {innodb_buffer_pool_size: "64M\\n"}}')
    with pytest.raises(ConfigError):
        params.load(_write(tmp_path, text))
    scan = ('claim: C2\ntargets: {default: {}}\nworkloads:\n'
            '  scan: {kind: varchar_scan, rows: 10, charset: "latin1\\n"}\n')
    with pytest.raises(ConfigError, match="charset"):
        params.load(_write(tmp_path, scan))


def test_a_workload_name_too_long_for_its_schema_is_refused_at_load(tmp_path):
    """Its schema, claimlab_<name>_<hash>, must fit MySQL's 64 characters."""
    longest = "w" * 46
    assert params.load(_write(tmp_path, MINIMAL.replace("WORKLOAD", longest))).workloads[0].schema().__len__() == 64
    with pytest.raises(ConfigError, match=r"workloads\.w{47}: .*64"):
        params.load(_write(tmp_path, MINIMAL.replace("WORKLOAD", "w" * 47)))
    with pytest.raises(ConfigError, match=r"workloads\.w{48}: .*64"):
        params.load(_write(tmp_path, MINIMAL.replace("WORKLOAD", "w" * 48)))


@pytest.mark.parametrize("char", ["\x1b", "\u202e", "\u2066", "\x07"])
def test_field_paths_never_echo_control_or_bidi_characters(tmp_path, char):
    key = f"a{char}[31mb"
    text = MINIMAL.replace("WORKLOAD", "ins") + f'design: {{"{key.encode("unicode_escape").decode()}": 1}}\n'
    with pytest.raises(ConfigError) as err:
        params.load(_write(tmp_path, text))
    message = str(err.value)
    assert char not in message and "design." in message, repr(message)
    assert all(c.isprintable() for c in message), repr(message)


def test_a_fifo_params_file_is_named_as_such(tmp_path):
    fifo = tmp_path / "exp.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file") as err:
        params.find(str(fifo))
    assert "no such" not in str(err.value)
    bare = tmp_path / "exp2"
    os.mkfifo(bare)
    result = run_cli("validate", str(bare), timeout=60)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "not a regular file" in result.stderr and str(bare) in result.stderr, result.stderr


def _store(tmp_path) -> RunStore:
    return RunStore.create(tmp_path / "raw", RunManifest.new(experiment="exp", claim="C4", profile="quick",
                                                            factors=["binlog"]))


def _record(store, iteration=0):
    return MeasurementRecord(
        run_id=store.run_id, claim="C4", experiment="exp", condition="binlog=on", levels=(("binlog", "on"),),
        target="default", server_version="10.11", workload="ins", repetition=0, iteration=iteration, seq=0,
        attempt=1, started_at="t0", ended_at="t1", contention=False, metrics=(Metric("elapsed_s", 1.0, "s"),))


@pytest.mark.parametrize("run_id", ["*", "2026*", "?*", "[0-9]*"])
def test_run_id_globs_are_refused(tmp_path, run_id):
    _store(tmp_path)
    with pytest.raises(DataError, match="not a run id"):
        find_run(run_id, tmp_path / "raw")


def test_duplicated_measurements_are_refused_by_readers(tmp_path):
    """Two writers of one run store a measurement twice; an analysis would count it twice."""
    store = _store(tmp_path)
    store.append(_record(store))
    store.append(_record(store, iteration=1))
    assert len(read_results(store.path)) == 2
    store.append(_record(store))
    with pytest.raises(DataError, match=r"results.csv: 1 measurement stored twice .*binlog=on"):
        read_results(store.path)
    with pytest.raises(DataError, match="stored twice"):
        read_results(store.path, accept_modified=True)


def test_analyze_of_a_run_without_measurements_says_so(tmp_path):
    store = _store(tmp_path)
    store.finish("failed")
    result = run_cli("analyze", store.run_id, "--data", str(tmp_path / "raw"), timeout=120)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "no claim" not in result.stderr, result.stderr
    assert re.search(r"holds no measurement", result.stderr), result.stderr


def test_an_option_name_ending_in_a_newline_never_reaches_the_option_file(tmp_path):
    text = MINIMAL.replace("WORKLOAD", "ins").replace("{kind: mariadb}",
                                                      '{kind: mariadb, options: {extra: {"log_bin\\n": 1}}}')
    with pytest.raises(ConfigError, match="not an option name"):
        params.load(_write(tmp_path, text))


def test_a_second_writer_of_one_run_is_refused(tmp_path):
    store = _store(tmp_path)
    with pytest.raises(DataError, match="still running"):
        RunStore.open_run(store.path)
    store.close()
    RunStore.open_run(store.path).close()


def test_what_a_killed_writer_wrote_is_checked_like_checksums(tmp_path):
    """A run killed (SIGKILL) before it could write its checksums: every append was recorded as
    it was made, so an edit, a cut or an added line is found; a torn last line is not an edit."""
    from claimlab.writer import unwritten
    store = _store(tmp_path)
    store.append(_record(store))
    store.append(_record(store, iteration=1))
    assert unwritten(store.path) == ()
    results = store.path / "results.csv"
    clean = results.read_bytes()
    results.write_bytes(clean + b"t0,C4,exp,binlog=on,on,def")        # torn: a crash mid-write
    assert unwritten(store.path) == ()
    results.write_bytes(clean.replace(b"1.0,s", b"9.0,s", 1))          # a value edited by hand
    assert unwritten(store.path) == ("results.csv",)
    results.write_bytes(clean + clean.splitlines(keepends=True)[-1])   # a line added by hand
    assert unwritten(store.path) == ("results.csv",)
    results.write_bytes(clean)
    (store.path / "events.jsonl").write_text("")
    assert unwritten(store.path) == ("events.jsonl",)


def test_a_resumed_writer_records_what_earlier_sessions_wrote(tmp_path):
    """Killed right after a resume began: the files of the earlier sessions, untouched since,
    are as recorded, not 'changed'."""
    from claimlab.writer import unwritten
    store = _store(tmp_path)
    store.append(_record(store))
    store.finish("interrupted")
    store.close()
    reopened = RunStore.open_run(store.path)
    reopened.event("resumed")
    assert unwritten(store.path) == ()
