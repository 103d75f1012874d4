"""Every workload, loaded and measured on real MariaDB."""

import re
from pathlib import Path

import pytest

from claimlab import workloads as wl
from claimlab.errors import WorkloadError
from claimlab.servers import ServerOptions
from conftest import query


def _measure(workload, server, n=2):
    workload.prepare(server)
    with workload.session(server, seed=7) as measure:
        return [measure() for _ in range(n)]


def _metrics(m):
    return {x.name: x.value for x in m.metrics}


def test_proc_insert_loop(server):
    runs = _measure(wl.ProcInsertLoop(name="ins", rows=50), server)
    for m in runs:
        values = _metrics(m)
        assert values["elapsed_s"] > 0 and values["roundtrip_s"] > 0
    db = wl.ProcInsertLoop(name="ins").schema()
    assert query(server, "SELECT COUNT(*), MIN(id), MAX(id), SUM(a = b AND b = id) FROM t", db) == [
        (50, 1, 50, 50)]
    assert {row[2] for row in query(server, "SHOW INDEX FROM t", db)} == {"PRIMARY", "a", "b"}


@pytest.mark.parametrize("charset, collation", [
    ("latin1", "latin1_swedish_ci"), ("utf8mb3", "utf8mb3_general_ci"),
    ("utf8mb4", "utf8mb4_general_ci"), ("utf8mb4", "utf8mb4_unicode_ci"),
    ("utf8mb4", "utf8mb4_uca1400_ai_ci")])
def test_varchar_scan_in_each_collation(server, charset, collation):
    w = wl.VarcharScan(name="scan", rows=500, charset=charset, collation=collation)
    assert all(_metrics(m)["elapsed_s"] > 0 for m in _measure(w, server))
    assert query(server, "SELECT COLLATION_NAME, CHARACTER_MAXIMUM_LENGTH FROM information_schema.columns "
                         "WHERE table_schema = DATABASE() AND table_name = 't_scan'", w.schema()) == [
        (collation, 50)]


def test_unknown_collation_is_a_workload_error(server):
    with pytest.raises(WorkloadError, match="utf8mb4_0900_ai_ci"):
        wl.VarcharScan(name="scan", rows=10, collation="utf8mb4_0900_ai_ci").prepare(server)


def test_bulk_insert_and_join(server):
    assert _measure(wl.BulkInsert(name="bulk", rows=250, batch=100), server)
    assert _measure(wl.Join(name="join", rows=300), server)
    assert query(server, "SELECT COUNT(*) FROM t_bulk", wl.BulkInsert(name="bulk").schema()) == [(250,)]


def test_prepare_is_idempotent(server):
    w = wl.Join(name="join", rows=100)
    w.prepare(server)
    first = query(server, "SELECT loaded_at FROM claimlab_loaded", w.schema())
    w.prepare(server)
    assert query(server, "SELECT loaded_at FROM claimlab_loaded", w.schema()) == first


def test_sysbench_sets_names_and_reports(launcher, default_target, tmp_path):
    log = tmp_path / "general.log"
    options = ServerOptions(extra=(("general_log", "1"), ("general_log_file", str(log))))
    with launcher.prepare(default_target, options).start() as srv:
        # time=2: with time=1 sysbench may end before its first 1 s interval line is printed
        w = wl.Sysbench(name="oltp", test="oltp_point_select", table_size=200, time=2, threads=2,
                        ps_mode="disable", charset="latin1", schema_charset="utf8mb4")
        (m,) = _measure(w, srv, n=1)
        values = _metrics(m)
        assert values["tps"] > 0 and values["qps"] >= values["tps"]
        assert m.intervals and m.intervals[0]["threads"] == 2
        assert query(srv, "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.schemata "
                          "WHERE schema_name = DATABASE()", w.schema()) == [("utf8mb4",)]
    text = Path(log).read_text()
    # Each of the two threads ran SET NAMES before its first query.
    assert len(re.findall(r"Query\tSET NAMES latin1\n", text)) == 2
    assert srv.password not in text   # not even the lock-down statement is logged


def test_sysbench_without_charset_sends_no_set_names(launcher, default_target, tmp_path):
    log = tmp_path / "general.log"
    options = ServerOptions(extra=(("general_log", "1"), ("general_log_file", str(log))))
    with launcher.prepare(default_target, options).start() as srv:
        _measure(wl.Sysbench(name="oltp", table_size=100, time=1, ps_mode="auto"), srv, n=1)
    # claimlab's own connections set names quoted ('utf8mb4'); the wrapper's would be bare.
    assert not re.findall(r"Query\tSET NAMES [a-z]", Path(log).read_text())


def test_join_plan_is_primary_key_lookups_even_after_restart(launcher, default_target):
    """A restart once flipped this join to a block-nested-loop scan (800x slower): pin the plan."""
    w = wl.Join(name="join", rows=2000)
    for _ in range(2):
        with launcher.prepare(default_target, ServerOptions()).start() as srv:
            w.prepare(srv)
            plan = query(srv, "EXPLAIN " + w.QUERY, w.schema())
            inner = [row for row in plan if row[2] == "i"][0]
            assert inner[3] == "eq_ref" and inner[5] == "PRIMARY", plan


def test_sysbench_takes_a_password_with_spaces_commas_and_a_hash(server, monkeypatch):
    """Before: sysbench's config-file reader cut an unquoted password at '#', a space or ',' (and a
    lone quote stopped its reading of the file): refused, after claimlab's own check had passed."""
    from claimlab.servers import ExternalServer, TargetSpec
    password = "Zq#9 x=y,'z"
    query(server, "CREATE USER 'pw_user'@'localhost' IDENTIFIED BY 'Zq#9 x=y,\\'z'")
    query(server, "GRANT ALL ON *.* TO 'pw_user'@'localhost'")
    monkeypatch.setenv("CLAIMLAB_TEST_HASH_PW", password)
    theirs = ExternalServer(TargetSpec(name="theirs", kind="external", socket=server.connect_args()["unix_socket"],
                                       user="pw_user", password_env="CLAIMLAB_TEST_HASH_PW"))
    (m,) = _measure(wl.Sysbench(name="oltp", test="oltp_point_select", table_size=100, time=1), theirs, n=1)
    assert _metrics(m)["tps"] > 0
    with pytest.raises(WorkloadError, match="mysql-password: sysbench's config file cannot carry") as err:
        wl._config_line("mysql-password", "both ' and \" quotes")
    assert "quotes\"" not in str(err.value)      # the value itself is never shown
