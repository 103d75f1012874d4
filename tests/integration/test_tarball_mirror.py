"""MySQL 5.7.23 and 8.0.40 from a mirror of MySQL tarballs (CLAIMLAB_MYSQL_MIRROR; the Makefile
sets it where a mirror sits beside the clone), started for real: their defaults read back, the
binlog switch that works on 8.0 and the spellings that do not, and mysql-connector-python 9.x,
which its vendor tests against 8.0 and later only, against 5.7. Skipped (one line) where no
mirror is given."""

import os

import mysql.connector
import pytest

from claimlab.servers import Launcher, ServerOptions, installation
from conftest import module_scratch, query


@pytest.fixture(scope="module")
def mirror_launcher(request, tmp_path_factory):
    with module_scratch(request, tmp_path_factory, "mirror-work") as work:
        yield Launcher(work)


def test_57_starts_with_its_own_defaults(mirror_launcher, mysql57):
    inst = installation(mysql57)
    assert inst.origin == "source build" and len(inst.archive_sha256) == 64
    with mirror_launcher.prepare(mysql57, ServerOptions(log_bin=False)).start() as srv:
        facts = srv.facts()
        assert facts.version.startswith("5.7.23") and not facts.log_bin
        assert facts.variables["character_set_server"] == "latin1"
        assert facts.variables["basedir"].rstrip("/") == str(inst.basedir)


def test_80_logs_by_default_and_only_skip_log_bin_turns_it_off(mirror_launcher, mysql80):
    """Yangsh888's post: in 8.0 `log_bin=OFF` or `log_bin=0` in an option file leaves the binlog on (the
    value becomes the binlog's base name); `skip-log-bin` turns it off."""
    with mirror_launcher.prepare(mysql80, ServerOptions()).start() as srv:
        facts = srv.facts()
        assert facts.version.startswith("8.0.40") and facts.log_bin
        assert facts.variables["sync_binlog"] == "1"
        assert facts.variables["transaction_write_set_extraction"] == "XXHASH64"
        assert facts.variables["collation_server"] == "utf8mb4_0900_ai_ci"
    with mirror_launcher.prepare(mysql80, ServerOptions(log_bin=False)).start() as srv:
        assert not srv.facts().log_bin
    for spelling in ("OFF", "0"):
        with mirror_launcher.prepare(mysql80, ServerOptions(extra=(("log_bin", spelling),))).start() as srv:
            facts = srv.facts()
            assert facts.log_bin, f"log_bin={spelling} turned the binlog off"
            assert os.path.basename(facts.variables["log_bin_basename"]) == spelling


@pytest.mark.parametrize("use_pure", [False, True], ids=["c-extension", "pure-python"])
def test_the_connector_works_against_57(mirror_launcher, mysql57, use_pure):
    """What claimlab asks of the connector, on 5.7: a utf8mb4 session (5.7 has no 0900 collation,
    so the collation is always named), text and prepared statements, and a 4-byte character."""
    if not use_pure:
        pytest.importorskip("_mysql_connector")
    with mirror_launcher.prepare(mysql57, ServerOptions(log_bin=False)).start() as srv:
        conn = srv.connect(use_pure=use_pure)
        try:
            assert type(conn).__module__.endswith("connection_cext") != use_pure
            cur = conn.cursor()
            cur.execute("SELECT @@character_set_client, @@collation_connection")
            assert cur.fetchone() == ("utf8mb4", "utf8mb4_general_ci")
            cur.execute("CREATE DATABASE IF NOT EXISTS conn57")
            cur.execute("CREATE TABLE IF NOT EXISTS conn57.t (id int PRIMARY KEY, s varchar(10)) "
                        "CHARSET utf8mb4")
            cur.execute("DELETE FROM conn57.t")
            cur.executemany("INSERT INTO conn57.t VALUES (%s, %s)", [(1, "a\U0001F600"), (2, "b")])
            prepared = conn.cursor(prepared=True)
            prepared.execute("SELECT s FROM conn57.t WHERE id = ?", (1,))
            assert prepared.fetchall() == [("a\U0001F600",)]
            prepared.close()
        finally:
            conn.close()
        assert query(srv, "SELECT COUNT(*) FROM conn57.t") == [(2,)]


def test_a_57_server_refuses_names_only_8_0_has(mirror_launcher, mysql57):
    """The connector must never guess a collation against 5.7: one named from 8.0 is an error
    from the server, not a silent fallback."""
    with mirror_launcher.prepare(mysql57, ServerOptions(log_bin=False)).start() as srv:
        with pytest.raises(mysql.connector.Error, match="Unknown collation"):
            query(srv, "SELECT 'a' COLLATE utf8mb4_0900_ai_ci")
