"""Real Oracle MySQL 9.7 from Debian's archive: started from claimlab's cache, its settings read
back, every workload run once, a killed server retried, and the tarball path exercised with the
Debian build packed into MySQL's generic tarball layout. Skipped (one line) where it cannot be set up."""

import hashlib
import json
import os
import signal

import psutil
import pytest

from claimlab import accounting, datacache, params, runner
from claimlab.servers import (
    Launcher,
    ServerOptions,
    TargetSpec,
    cache_dir,
    debian,
    installation,
    tarball,
    verify_settings,
)
from claimlab.store import read_results
from conftest import pid_alive, query, written_bytes


def test_settings_read_back_from_the_server(mysql_launcher, mysql_target):
    """MySQL 8.x defaults: binlog on, utf8mb4_0900_ai_ci; `log_bin: false` becomes skip-log-bin."""
    package = debian.package_facts(cache_dir())["version"]
    with mysql_launcher.prepare(mysql_target, ServerOptions()).start() as srv:
        facts = srv.facts()
        assert facts.version == package                    # e.g. 9.7.4-2: the Debian package's
        assert facts.log_bin and facts.variables["sync_binlog"] == "1"
        assert facts.variables["collation_server"] == "utf8mb4_0900_ai_ci"
        assert facts.variables["skip_networking"] == "ON" and "mysqlx_port" not in facts.variables
        assert psutil.Process(srv.pid).name() == "mysqld"   # not ld-linux-x86-64
        assert query(srv, "SELECT CURRENT_USER(), PLUGIN_NAME FROM information_schema.PLUGINS "
                          "WHERE PLUGIN_NAME = 'caching_sha2_password'") == [
            ("root@localhost", "caching_sha2_password")]
    off = ServerOptions(log_bin=False, character_set_server="utf8mb3", collation_server="utf8mb3_general_ci")
    with mysql_launcher.prepare(mysql_target, off).start() as srv:
        facts = srv.facts()
        assert not facts.log_bin
        verify_settings(srv.options, facts, "mysql")
        assert "skip-log-bin" in srv.cnf.read_text()


def test_a_target_name_moved_to_another_server_gets_a_data_directory_of_its_own(tmp_path, mysql_target,
                                                                                  mariadbd):
    """A params file's target renamed from MariaDB to MySQL (one work directory, equal options):
    MariaDB must not start on MySQL's files ('File ./ib_logfile0 was not found'), nor MySQL on MariaDB's."""
    launcher = Launcher(tmp_path / "work")
    mysql = TargetSpec(name="default", kind="mysql-debian")
    mariadb = TargetSpec(name="default", kind="mariadb")
    for target, vendor in ((mysql, "MySQL"), (mariadb, "MariaDB"), (mysql, "MySQL")):
        with launcher.prepare(target, ServerOptions()).start() as srv:
            assert (vendor == "MariaDB") == ("MariaDB" in query(srv, "SELECT VERSION()")[0][0])
    homes = sorted(p.name for p in (tmp_path / "work").iterdir())
    assert len(homes) == 2 and all(h.startswith("default-") for h in homes)
    assert launcher.home(mysql, ServerOptions()) != launcher.home(mariadb, ServerOptions())


def test_a_cached_data_directory_keeps_the_spare_redo_files_allocated_not_written(mysql_launcher, mysql_target,
                                                                                 tmp_path, monkeypatch):
    """The 31 spare redo log files are kept sparse and copied back allocated in full without their
    zeros being written (a server missing them writes them all: 100 MB a start at the default
    capacity); the server starts on the copy and opens its tables."""
    monkeypatch.setattr(datacache, "root", lambda: tmp_path / "datadirs")
    with mysql_launcher.prepare(mysql_target, ServerOptions(), slot=7).start() as srv:
        query(srv, "CREATE DATABASE claimlab_spare")
        query(srv, "CREATE TABLE claimlab_spare.t (a INT PRIMARY KEY)")
        query(srv, "INSERT INTO claimlab_spare.t VALUES (1), (2)")
    spares = sorted((srv.datadir / "#innodb_redo").glob("#ib_redo*_tmp"))
    assert len(spares) == 31
    size = spares[0].stat().st_size
    key = datacache.key(srv, ["claimlab_spare"])
    assert datacache.save(srv, key)
    kept = list((tmp_path / "datadirs" / key / "data" / "#innodb_redo").glob("#ib_redo*_tmp"))
    assert len(kept) == 31 and sum(p.stat().st_blocks * 512 for p in kept) < size
    copy = mysql_launcher.prepare(mysql_target, ServerOptions(), slot=8)
    before = written_bytes()
    assert datacache.restore(copy, key)
    written = written_bytes() - before
    copied = list((copy.datadir / "#innodb_redo").glob("#ib_redo*_tmp"))
    assert _allocated(copied, size)
    others = sum(p.stat().st_size for p in copy.datadir.rglob("*") if p.is_file() and p not in copied)
    assert written < others + 31 * size / 8, (written, others)     # a spare file: a block of data at most
    with copy.start() as srv2:
        assert query(srv2, "SELECT COUNT(*) FROM claimlab_spare.t") == [(2,)]


def _allocated(files: list, size: int) -> bool:
    """31 spare redo files of `size` bytes, each allocated in full (not sparse)."""
    return len(files) == 31 and all(p.stat().st_blocks * 512 >= p.stat().st_size == size for p in files)


def test_binlog_counters_have_mysql_witnesses(mysql_launcher, mysql_target):
    """MySQL has no Binlog_commits: one binlog-cache use per committed insert, and one fsync of the
    binlog file per commit (sync_binlog=1, one client: no group of more than one)."""
    with mysql_launcher.prepare(mysql_target, ServerOptions()).start() as srv:
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE IF NOT EXISTS claimlab_counters")
        cur.execute("CREATE TABLE IF NOT EXISTS claimlab_counters.t (a INT PRIMARY KEY AUTO_INCREMENT)")
        meter = accounting.Meter(srv)
        meter.start()
        for _ in range(50):
            cur.execute("INSERT INTO claimlab_counters.t VALUES ()")
        costs = {m.name: m.value for m in meter.stop()}
        meter.close()
        conn.close()
    assert "status.Binlog_commits" not in costs
    assert costs["status.Binlog_cache_use"] == 50
    assert 50 <= costs["pfs.binlog_misc_ops"] <= 55
    assert costs["pfs.binlog_bytes_written"] > 50 * 20


ALL_WORKLOADS = """
claim: C2
targets:
  mariadb: {{kind: mariadb}}
  mysql: {{kind: mysql-debian, options: {{innodb_buffer_pool_size: 128M}}}}
workloads:
  ins: {{kind: proc_insert_loop, rows: 50}}
  bulk: {{kind: bulk_insert, rows: 500, batch: 50}}
  join: {{kind: join, rows: 500}}
  scan: {{kind: varchar_scan, rows: 500, charset: utf8mb4}}
  oltp: {{kind: sysbench, test: oltp_read_write, threads: 1, time: 1, table_size: 100, ps_mode: disable,
         charset: latin1}}
factors:
  collation:
    uca_ai: {{workloads: {{scan: {{collation: uca_ai}}}}}}
    uca1400: {{workloads: {{scan: {{collation: utf8mb4_uca1400_ai_ci}}}}}}
design: {{repetitions: 1, warmup: 0, iterations: {iterations}, max_attempts: 3}}
"""


def test_every_workload_runs_once_and_a_missing_collation_is_skipped_before_start(
        tmp_path, write_params, mysql_target):
    exp = params.load(write_params(ALL_WORKLOADS.format(iterations=1)), "quick")
    exp = params.with_default_target(exp, "mysql", "--target")
    outcome = runner.run(exp, data_root=tmp_path / "raw", work_root=tmp_path / "work", progress=False)
    assert outcome.status == "complete" and outcome.measurements == 5
    assert "has no UCA 14.0 collations" in outcome.skipped["collation=uca1400"]
    df = read_results(outcome.path)
    assert set(df["workload"]) == {"ins", "bulk", "join", "scan", "oltp"}
    assert set(df["target"]) == {"mysql"} and df["server_version"].str.startswith("9.").all()
    assert (df[df["metric"] == "elapsed_s"]["value"] > 0).all()
    assert (df[(df["workload"] == "oltp") & (df["metric"] == "transactions")]["value"] > 0).all()
    manifest = json.loads((outcome.path / "manifest.json").read_text())
    assert manifest["skipped_targets"]["collation=uca1400"].startswith("condition collation=uca1400")


KILLED = """
claim: C4
targets:
  mariadb: {kind: mariadb}
  mysql: {kind: mysql-debian}
workloads:
  ins: {kind: proc_insert_loop, rows: 500}
design: {repetitions: 1, warmup: 0, iterations: 30, max_attempts: 3}
"""


def test_killed_server_is_restarted_and_the_unit_retried(tmp_path, write_params, mysql_target):
    import subprocess
    import sys
    import time

    from conftest import ROOT
    path = write_params(KILLED)
    proc = subprocess.Popen([sys.executable, "-m", "claimlab.cli", "run", str(path), "--target", "mysql",
                             "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"), "--no-progress"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            run_dirs = list((tmp_path / "raw").glob("exp/*/results.csv"))
            if run_dirs and ",elapsed_s," in run_dirs[0].read_text():
                break
            time.sleep(0.05)
        run_dir = run_dirs[0].parent
        # a server alive now: the start that stored the first row may already have ended
        victim = None
        while victim is None and time.monotonic() < deadline:
            pids = [json.loads(x)["pid"] for x in (run_dir / "servers.jsonl").read_text().splitlines()]
            victim = next((p for p in reversed(pids) if pid_alive(p)), None)
            time.sleep(0.05)
        assert victim is not None, "no live server to kill"
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "attempt_failed" for e in events), events
    df = read_results(run_dir)
    assert sorted(df[df["metric"] == "elapsed_s"]["iteration"]) == list(range(30))
    servers = [json.loads(x) for x in (run_dir / "servers.jsonl").read_text().splitlines()]
    assert len(servers) == 2 and not any(pid_alive(s["pid"]) for s in servers)


@pytest.fixture(scope="module")
def tarball_layout(tmp_path_factory, mysql_target):
    """The Debian build in MySQL's generic tarball layout, as a directory and as an archive: a
    .tar.gz, as 5.7 ships (xz, as 8.0 and later ship, takes 10 s to pack; the .tar.xz names are
    tests/unit/test_mirror_archives.py's)."""
    root = tmp_path_factory.mktemp("tarball")
    directory = tarball.layout_from_debian(installation(mysql_target), root / "mysql-9.7-debian")
    version = ".".join(map(str, installation(mysql_target).flavor.version))
    archive = tarball.pack(directory, root / f"mysql-{version}-linux-glibc2.28-x86_64.tar.gz")
    return directory, archive, version


def test_tarball_layout_started_by_path(tmp_path, tarball_layout, monkeypatch):
    directory, archive, _ = tarball_layout
    _private_cache(tmp_path, monkeypatch)
    launcher = Launcher(tmp_path / "work")
    by_dir = TargetSpec(name="dir", kind="mysql-tarball", path=str(directory))
    with launcher.prepare(by_dir, ServerOptions(log_bin=False)).start() as srv:
        facts = srv.facts()
        assert not facts.log_bin and facts.variables["basedir"].rstrip("/") == str(directory)
        assert facts.variables["plugin_dir"].rstrip("/") == str(directory / "lib" / "plugin")
    by_archive = TargetSpec(name="tgz", kind="mysql-tarball", path=str(archive))
    inst = installation(by_archive)
    assert inst.basedir.parent == tmp_path / "cache" / "mysql" and inst.flavor.vendor == "mysql"
    assert installation(by_archive) == inst      # hashed and extracted once


def test_tarball_by_version_and_checksum_from_a_file_mirror(tmp_path, tarball_layout, monkeypatch):
    _, archive, version = tarball_layout
    _private_cache(tmp_path, monkeypatch)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    (tmp_path / "mirror").mkdir()
    os.link(archive, tmp_path / "mirror" / archive.name)
    (tmp_path / "mirror" / "SHA256SUMS").write_text(f"{digest}  {archive.name}\n")
    mirror = (tmp_path / "mirror").as_uri()
    wrong = TargetSpec(name="v", kind="mysql-tarball", version=version, mirror=mirror, sha256="0" * 64)
    with pytest.raises(Exception, match="sha256 is .* expected 0+: refusing it"):
        installation(wrong)
    target = TargetSpec(name="v", kind="mysql-tarball", version=version, mirror=mirror, sha256=digest)
    with Launcher(tmp_path / "work").prepare(target, ServerOptions()).start() as srv:
        assert srv.facts().log_bin
    assert installation(target).archive_sha256 == digest
    assert not (tmp_path / "cache" / "downloads").exists()     # a file:// mirror is read in place


def test_a_server_that_cannot_run_is_unavailable_with_its_reason(tmp_path, tarball_layout):
    """A mysqld whose libraries are missing (as libaio.so.1 is on newer distributions) is not
    "available" with a version guessed from its path."""
    import shutil

    from claimlab.errors import TargetUnavailable
    directory, _, _ = tarball_layout
    broken = tmp_path / "mysql-broken"
    shutil.copytree(directory, broken, symlinks=True, ignore=shutil.ignore_patterns("libaio*", "plugin"))
    with pytest.raises(TargetUnavailable, match="--version failed .*libaio"):
        installation(TargetSpec(name="broken", kind="mysql-tarball", path=str(broken)))


def _private_cache(tmp_path, monkeypatch):
    """A fresh cache for tarballs that still sees the set-up Debian unpack."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "mysql-debian").symlink_to(cache_dir() / "mysql-debian")
    monkeypatch.setenv("CLAIMLAB_CACHE", str(tmp_path / "cache"))


def test_the_archive_signature_is_really_checked(tmp_path, mysql_target):
    """The private sources list names the keyring apt must verify Debian's Release file with: a
    keyring without Debian's keys makes the update fail, so nothing unsigned is ever unpacked."""
    from claimlab.errors import TargetUnavailable
    wrong = tmp_path / "empty.gpg"
    wrong.write_bytes(b"")
    apt = debian._PrivateApt(tmp_path / "apt", keyring=wrong)
    assert f"[signed-by={wrong}]" in apt.sources.read_text()
    with pytest.raises(TargetUnavailable, match="NO_PUBKEY|not signed|signature"):
        apt.update()
