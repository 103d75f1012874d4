"""Initialised data directories kept and copied (servers.initcache), on real MariaDB and MySQL."""

import os
import shutil

from claimlab.servers import Launcher, ServerOptions, TargetSpec
from claimlab.servers.initcache import InitCache
from conftest import query

POOL = ServerOptions(innodb_buffer_pool_size="64M")


def _launcher(work, cache) -> Launcher:
    launcher = Launcher(work)
    launcher.initialised = InitCache(cache)
    return launcher


def test_a_configuration_is_initialised_once_and_copied_after(tmp_path, monkeypatch, mariadbd):
    """Two work directories, two buffer pool sizes: the installer runs once. A configuration that
    can change what it makes (another server character set) is initialised on its own. The kept
    directory is sparse; the copy a server starts on is not."""
    real = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    counted = tmp_path / "bin" / "mariadb-install-db"
    counted.parent.mkdir()
    counted.write_text(f'#!/bin/sh\necho run >> {tmp_path / "runs"}\nexec {real} "$@"\n')
    counted.chmod(0o755)
    monkeypatch.setenv("PATH", f"{counted.parent}:{os.environ['PATH']}")
    target = TargetSpec(name="default", kind="mariadb")
    configurations = (("a", POOL), ("b", POOL), ("b", ServerOptions(innodb_buffer_pool_size="96M")),
                      ("b", ServerOptions(character_set_server="utf8mb4")))
    servers = [_launcher(tmp_path / work, tmp_path / "initialised").prepare(target, options)
               for work, options in configurations]
    for srv in servers:
        with srv.start():
            assert query(srv, "SELECT COUNT(*) FROM mysql.func") == [(0,)]
            assert query(srv, "SELECT COUNT(*) FROM mysql.user WHERE User = ''") == [(0,)]   # locked down
    assert (tmp_path / "runs").read_text().splitlines() == ["run", "run"]
    (entry,) = [p for p in (tmp_path / "initialised").iterdir()
                if p.name == servers[0].initialised.key(servers[0])]
    kept, copied = entry / "data" / "ib_logfile0", servers[1].datadir / "ib_logfile0"
    assert kept.stat().st_blocks * 512 < kept.stat().st_size / 4
    assert copied.stat().st_blocks * 512 >= copied.stat().st_size == kept.stat().st_size


def test_a_copied_mysql_directory_gets_its_own_server_uuid(tmp_path, mysql_target):
    """auto.cnf stays behind: two servers started from one initialisation are two servers."""
    launcher = _launcher(tmp_path / "work", tmp_path / "initialised")
    uuids, logs = [], []
    for slot in (1, 2):
        with launcher.prepare(mysql_target, POOL, slot=slot).start() as srv:
            uuids.append(query(srv, "SELECT @@server_uuid")[0][0])
        logs.append(srv.error_log.read_text())
    assert uuids[0] != uuids[1]
    assert ["created with an empty password" in log for log in logs] == [True, False]
