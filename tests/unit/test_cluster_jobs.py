"""The cluster client's bookkeeping that needs no cluster: which worker is which kind of host, the
key of a moved job, what `--resume` sends again after a move, and `--move-after` refusals. The
cluster itself is tested for real in tests/integration/test_cluster.py."""

from __future__ import annotations

import pytest

from claimlab import cli, cluster
from claimlab.errors import DataError
from claimlab.journal import Job, Journal


def test_a_workers_kind_is_its_kind_resource_and_a_worker_without_the_host_resource_is_no_host():
    workers = {"tcp://10.0.0.2:1": {"name": "bench-a", "host": "10.0.0.2", "resources": {"host": 1, "kind-epyc": 1}},
               "tcp://10.0.0.3:1": {"name": "bench-b", "host": "10.0.0.3", "resources": {"host": 1}},
               "tcp://10.0.0.4:1": {"name": "spare", "host": "10.0.0.4", "resources": {"kind-epyc": 1}}}
    assert cluster.offering(workers) == {"bench-a": ("10.0.0.2", "epyc"), "bench-b": ("10.0.0.3", "")}


def test_a_moved_job_has_a_key_of_its_own_beside_its_new_hosts_own_job():
    own = Job("s1", "binlog_default", "mariadb", "bench-b", "smoke")
    moved = Job("s1", "binlog_default", "mariadb", "bench-b", "smoke", moved_from="bench-a")
    assert len({own.key, moved.key, Job("s1", "binlog_default", "mariadb", "bench-a", "smoke").key}) == 3


def test_resume_sends_a_moved_job_under_its_new_key_and_not_the_old_one(tmp_path):
    journal = Journal(tmp_path, "s1")
    jobs = {h: Job("s1", "binlog_default", "mariadb", h, "smoke") for h in ("bench-a", "bench-b", "bench-c")}
    for job in jobs.values():
        journal.write("submitted", job, kind="epyc")
    journal.write("interrupted", jobs["bench-a"], reason="the host's worker left mid-run")
    journal.write("moved", jobs["bench-a"], to="bench-c", new_key="k", kind="epyc")
    journal.write("stored", jobs["bench-b"], run_id="r1")
    moved = Job("s1", "binlog_default", "mariadb", "bench-c", "smoke", moved_from="bench-a")
    assert journal.unfinished(journal.read()) == [jobs["bench-c"], moved]
    # moved once more, from bench-c: still the job meant for bench-a, under a key of its own
    journal.write("moved", moved, to="bench-b", new_key="k2", kind="epyc")
    again = Job("s1", "binlog_default", "mariadb", "bench-b", "smoke", moved_from="bench-a")
    assert journal.unfinished(journal.read()) == [jobs["bench-c"], again] and again.key != jobs["bench-b"].key
    journal.write("stored", again, run_id="r2")
    journal.write("failed", jobs["bench-c"], reason="servers did not start")
    assert journal.unfinished(journal.read()) == []


@pytest.mark.parametrize("args, words", [
    (["--move-after", "5"], "--move-after: it moves jobs between cluster hosts"),
    (["--move-after", "-1", "--scheduler", "tcp://127.0.0.1:9"], "--move-after -1: expected the seconds"),
    (["--move-after", "nan", "--scheduler", "tcp://127.0.0.1:9"], "--move-after nan: expected the seconds"),
])
def test_move_after_is_refused_in_one_line_without_a_cluster_or_below_zero(args, words, capsys):
    assert cli.main(["run", "binlog_default", "--profile", "smoke", *args]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err


@pytest.mark.parametrize("line, words", [
    ('{"event": "submitted", "experiment": "binlog_default", "target": "mariadb", "profile": "smoke", "key": "k"}',
     "entry 2 lacks host;"),
    ('{"event": "moved", "experiment": "binlog_default", "target": "mariadb", "host": "bench-a", '
     '"profile": "smoke", "key": "k"}', "entry 2 lacks to;"),
    ('{"event": "stored"}', "entry 2 lacks experiment, target, host, profile, key;"),
    ('{"event": "tampered"}', "entry 2 is no event of a session journal;"),
    ('["submitted"]', "entry 2 is no event of a session journal;"),
])
def test_a_damaged_journal_entry_is_named_in_one_line(tmp_path, line, words):
    journal = Journal(tmp_path, "s1")
    journal.write("submitted", Job("s1", "binlog_default", "mariadb", "bench-a", "smoke"), kind="epyc")
    with journal.path.open("a") as f:
        f.write(line + "\n")
    with pytest.raises(DataError) as caught:
        journal.read()
    message = str(caught.value)
    assert message.startswith(f"{journal.path}: {words}") and "\n" not in message
