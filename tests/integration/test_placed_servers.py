"""Every block's servers run a fresh copy of their binary (servers.placement), on real MariaDB and
MySQL 9.7: the process runs the copy, each start records its own draw, the cached data
directories are still found by the binary's identity, and a host without a usable tmpfs runs
the servers from their binaries and says so."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from claimlab import datacache, params, runner
from claimlab.servers import placement
from claimlab.store import read_jsonl, read_results
from conftest import C2_TWO_COLLATIONS, pid_alive

EXP = C2_TWO_COLLATIONS + """design: {{repetitions: 3, warmup: 1, iterations: 2{extra}}}
"""


def _run(tmp_path, write_params, kind: str, extra: str = "", watch=None):
    exp = params.load(write_params(EXP.format(kind=kind, extra=extra), name="collation_cost"))
    return runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False, log=watch)


def _exe_of_running_servers(monkeypatch) -> list[str]:
    """What /proc says each server runs, read while the run measures (first row of each unit)."""
    seen: list[str] = []
    append = runner.RunStore.append

    def spy(self, record):
        starts = read_jsonl(self.path / "servers.jsonl")
        pid = [s["pid"] for s in starts if s["seq"] == record.seq][-1]
        seen.append(os.readlink(f"/proc/{pid}/exe"))
        return append(self, record)

    monkeypatch.setattr(runner.RunStore, "append", spy)
    return seen


@pytest.mark.parametrize("kind", ["mariadb", "mysql-debian"])
def test_each_block_starts_a_fresh_copy_of_the_binary(kind, tmp_path, write_params, request, monkeypatch):
    request.getfixturevalue("mysql_target" if kind == "mysql-debian" else "mariadbd")
    monkeypatch.setattr(datacache, "root", lambda: tmp_path / "datadirs")
    monkeypatch.setattr(datacache, "MIN_LOAD_S", 0.0)        # the tiny loads are kept all the same
    monkeypatch.setenv(placement.ENV, str(tmp_path / "shm"))
    (tmp_path / "shm").mkdir()
    seen = _exe_of_running_servers(monkeypatch)
    outcome = _run(tmp_path, write_params, kind)
    assert outcome.status == "complete" and outcome.measurements == 3 * 2 * 2
    starts = pd.DataFrame(read_jsonl(outcome.path / "servers.jsonl"))
    draws = pd.DataFrame(list(starts["placement"]))
    assert len(starts) == 3 and draws["seed"].nunique() == 3
    # each start's copy was drawn for it (ahead of its unit, from the unit's first attempt)
    assert draws["seed"].tolist() == [placement.seed_of(f"{outcome.run_id}/{seq}/{attempt}/0")
                                      for seq, attempt in zip(starts["seq"], starts["attempt"])]
    assert (draws["pages"] > 1000).all() and (draws["seconds"] >= 0).all()
    binary = {"mariadb": "mariadbd", "mysql-debian": "mysqld"}[kind]
    assert seen and all(exe.startswith(str(tmp_path / "shm" / placement.PREFIX)) and exe.endswith(binary)
                        for exe in seen), seen
    # a MySQL start after the first finds the load it saved: the cache keys on the binary, not the copy
    if kind == "mysql-debian":
        assert starts["datadir_from_cache"].tolist()[-1]
    units = [e for e in read_jsonl(outcome.path / "events.jsonl") if e["event"] == "unit_done"]
    assert all("place_s" in u["phases"] for u in units)
    assert not list((tmp_path / "shm").iterdir()), "the run left copies behind"
    assert not any(pid_alive(pid) for pid in starts["pid"])
    assert not read_results(outcome.path).empty


def test_without_a_usable_tmpfs_servers_start_from_their_binary(tmp_path, write_params, mariadbd, monkeypatch):
    monkeypatch.setenv(placement.ENV, str(tmp_path / "missing"))
    said = []
    outcome = _run(tmp_path, write_params, "mariadb", watch=said.append)
    assert outcome.status == "complete"
    events = [e for e in read_jsonl(outcome.path / "events.jsonl") if e["event"] == "placement_unavailable"]
    assert events and events[0]["reason"] == f"{tmp_path / 'missing'} does not exist"
    assert said == [f"servers start from their binaries, not a fresh copy per block: {tmp_path / 'missing'} "
                    "does not exist"]
    assert all(s["placement"] is None for s in read_jsonl(outcome.path / "servers.jsonl"))


def test_place_binary_false_runs_the_binary_itself(tmp_path, write_params, mariadbd, monkeypatch):
    monkeypatch.setenv(placement.ENV, str(tmp_path / "shm"))
    (tmp_path / "shm").mkdir()
    seen = _exe_of_running_servers(monkeypatch)
    outcome = _run(tmp_path, write_params, "mariadb", extra=", place_binary: false")
    assert outcome.status == "complete"
    assert set(seen) == {os.path.realpath(mariadbd)}
    assert all(s["placement"] is None for s in read_jsonl(outcome.path / "servers.jsonl"))
