"""Real MariaDB: every server option claimlab sets is read back from the server itself."""

import os
import subprocess

import pytest

from claimlab.errors import ServerStartError, SettingsMismatch
from claimlab.servers import ServerOptions, verify_settings
from conftest import pid_alive, query


@pytest.mark.parametrize("options, expected", [
    (ServerOptions(log_bin=True, sync_binlog=1), {"log_bin": "ON", "sync_binlog": "1"}),
    (ServerOptions(log_bin=False), {"log_bin": "OFF"}),
    (ServerOptions(innodb_flush_log_at_trx_commit=2, innodb_buffer_pool_size="96M"),
     {"innodb_flush_log_at_trx_commit": "2", "innodb_buffer_pool_size": str(96 * 1024 * 1024)}),
    (ServerOptions(character_set_server="utf8mb4", collation_server="utf8mb4_unicode_ci"),
     {"character_set_server": "utf8mb4", "collation_server": "utf8mb4_unicode_ci"}),
    (ServerOptions(log_bin=True, binlog_format="STATEMENT"), {"log_bin": "ON", "binlog_format": "STATEMENT"}),
    (ServerOptions(extra=(("max_connections", "77"),)), {"max_connections": "77"}),
], ids=["binlog-on", "binlog-off", "flush-and-pool", "charset", "binlog-format", "extra"])
def test_server_reports_each_option(launcher, default_target, options, expected):
    with launcher.prepare(default_target, options).start() as srv:
        facts = srv.facts()
        for name, value in expected.items():
            assert facts.variables[name] == value, name
        verify_settings(srv.options, facts, "default")
        assert facts.log_bin == (expected.get("log_bin", "OFF") == "ON")
        assert facts.variables["skip_networking"] == "ON"   # Unix socket only
        pid = srv.pid
    assert not pid_alive(pid)


def test_locked_down_root_and_no_anonymous_accounts(server):
    assert query(server, "SELECT User, Host FROM mysql.user WHERE User IN ('', 'root')") == [
        ("root", "localhost")]
    assert server.password and os.stat(server.password_file).st_mode & 0o077 == 0


def test_restart_reuses_data_directory(launcher, default_target):
    srv = launcher.prepare(default_target, ServerOptions())
    with srv.start():
        query(srv, "CREATE DATABASE claimlab_keep")
    with launcher.prepare(default_target, ServerOptions()).start() as again:
        assert query(again, "SHOW DATABASES LIKE 'claimlab_keep'") == [("claimlab_keep",)]


def test_refused_option_fails_with_error_log_tail(launcher, default_target):
    srv = launcher.prepare(default_target, ServerOptions(extra=(("no_such_option", "1"),)))
    with pytest.raises(ServerStartError) as err:
        srv.start()
    assert "no_such_option" in str(err.value) or "unknown variable" in str(err.value)
    assert srv.proc is None or srv.proc.poll() is not None


@pytest.fixture
def small_fs(tmp_path):
    """A 40 MiB file system: too small for MariaDB's 96 MiB redo log."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40M", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_a_full_disk_is_named_as_the_cause(small_fs, mariadbd, default_target):
    """CI once failed with only MariaDB's last words ('Unknown/unsupported storage engine:
    InnoDB'); the cause, error 28, comes first in the log, and the free space is what to act on."""
    from claimlab.servers import Launcher
    with pytest.raises(ServerStartError) as err:
        Launcher(small_fs / "work").prepare(default_target, ServerOptions()).start()
    message = str(err.value)
    assert "error 28" in message and "storage engine: InnoDB" in message
    assert "MiB free on the file system of" in message and "--work" in message


def test_settings_that_did_not_take_are_caught(server):
    facts = server.facts()
    with pytest.raises(SettingsMismatch, match="log_bin requested ON, server reports OFF"):
        verify_settings(ServerOptions(log_bin=True), facts, "default")


def test_each_server_has_a_private_tmpdir(launcher, default_target):
    """A starting server deletes every `#sql*` file in its tmpdir: sharing /tmp with another
    claimlab's bootstrap once cut that bootstrap's system schema short."""
    with launcher.prepare(default_target, ServerOptions()).start() as a, \
            launcher.prepare(default_target, ServerOptions(extra=(("max_connections", "50"),))).start() as b:
        dirs = [query(s, "SELECT @@tmpdir")[0][0] for s in (a, b)]
    assert dirs[0] != dirs[1]
    assert all(d.startswith(str(launcher.workdir)) for d in dirs)


def test_failed_initialisation_leaves_no_data_directory(launcher, default_target, tmp_path, monkeypatch):
    """A half-made system schema must never be started as if it were whole (retries and resumes
    reuse data directories)."""
    fake = tmp_path / "bin" / "mariadb-install-db"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nfor a in \"$@\"; do case $a in --datadir=*) d=${a#--datadir=};; esac; done\n"
                    "mkdir -p \"$d/mysql\" && touch \"$d/mysql/db.frm\"\necho 'ERROR: 1051 planted' >&2\nexit 1\n")
    fake.chmod(0o755)
    srv = launcher.prepare(default_target, ServerOptions())
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    with pytest.raises(ServerStartError, match="initialising .* failed: ERROR: 1051 planted"):
        srv.start()
    assert not srv.datadir.exists() and not (srv.home / "data.partial").exists()
    monkeypatch.undo()
    with srv.start():        # the real installer: a whole system schema this time
        assert query(srv, "SELECT COUNT(*) FROM mysql.func") == [(0,)]
