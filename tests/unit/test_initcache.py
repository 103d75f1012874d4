"""What the cache of initialised data directories keys on, keeps, copies back and evicts."""

import os
import shutil
from pathlib import Path
from types import SimpleNamespace

from claimlab import datacache
from claimlab.servers import ServerOptions, TargetSpec, initcache
from claimlab.servers.initcache import InitCache
from conftest import written_bytes

DEFAULTS = ServerOptions()


def _server(tmp_path, installer: Path, options=DEFAULTS):
    binary = tmp_path / "mysqld"
    binary.write_text("server")
    inst = SimpleNamespace(version_text="mysqld  Ver 8.0.40", basedir=None, layout_lines=())
    flavor = SimpleNamespace(init_command=lambda b, cnf: [str(installer), f"--defaults-file={cnf}"])
    return SimpleNamespace(installation=inst, binary=binary, flavor=flavor, options=options,
                           target=TargetSpec(name="t", kind="mariadb"))


def _datadir(path: Path, size: int = 1 << 20) -> Path:
    (path / "#innodb_redo").mkdir(parents=True)
    (path / "ibdata1").write_bytes(b"\1" * size)
    (path / "auto.cnf").write_text("[auto]\nserver-uuid=1\n")
    (path / "#innodb_redo" / "#ib_redo1_tmp").write_bytes(bytes(1 << 16))
    return path


def test_the_key_covers_options_and_both_programs(tmp_path):
    installer = tmp_path / "install-db"
    installer.write_text("one")
    cache = InitCache(tmp_path / "cache")
    key = cache.key(_server(tmp_path, installer))
    assert key == cache.key(_server(tmp_path, installer))
    assert key != cache.key(_server(tmp_path, installer, ServerOptions(log_bin=True)))
    tuned = ServerOptions(innodb_buffer_pool_size="64M", innodb_flush_log_at_trx_commit=2, sync_binlog=0)
    assert key == cache.key(_server(tmp_path, installer, tuned))  # a running server's settings only
    other = tmp_path / "other" / "install-db"
    other.parent.mkdir()
    other.write_text("one")
    assert key != cache.key(_server(tmp_path, other))            # e.g. a fake installer on PATH
    installer.write_text("a newer one")
    os.utime(installer, (1, 1))
    assert key != cache.key(_server(tmp_path, installer))
    installer.unlink()
    assert cache.key(_server(tmp_path, installer)) is None


def test_a_copy_leaves_the_server_uuid_behind(tmp_path):
    cache = InitCache(tmp_path / "cache")
    assert cache.save("k", _datadir(tmp_path / "made"))
    assert not cache.save("k", _datadir(tmp_path / "made twice"))     # the first kept stays
    assert cache.restore("k", tmp_path / "copy")
    assert sorted(str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*")) == [
        "#innodb_redo", "#innodb_redo/#ib_redo1_tmp", "ibdata1"]
    assert not cache.restore("missing", tmp_path / "none") and not (tmp_path / "none").exists()



def test_a_copy_writes_the_data_and_allocates_the_rest_without_writing_it(tmp_path):
    """As a server's own fallocate leaves its redo log: the kept entry is sparse, and the copy a
    server starts on is allocated in full, with only its data written (not 64 MiB of zeros)."""
    made = tmp_path / "made"
    made.mkdir()
    with open(made / "ib_logfile0", "wb") as fh:
        fh.write(b"\1" * 8192)
        fh.seek(1 << 22)
        fh.write(b"\2" * 4096)
        fh.truncate(64 << 20)
    cache = InitCache(tmp_path / "cache")
    assert cache.save("k", made)
    kept = tmp_path / "cache" / "k" / "data" / "ib_logfile0"
    assert kept.stat().st_blocks * 512 < 1 << 20
    before = written_bytes()
    assert cache.restore("k", tmp_path / "copy")
    os.sync()
    copied = tmp_path / "copy" / "ib_logfile0"
    assert copied.read_bytes() == (made / "ib_logfile0").read_bytes()
    assert copied.stat().st_blocks * 512 >= copied.stat().st_size == 64 << 20
    assert written_bytes() - before < 4 << 20


def test_the_least_recently_used_entries_go_beyond_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(initcache, "MAX_BYTES", (7 << 20) // 2)     # three entries, not four
    cache = InitCache(tmp_path / "cache")
    for n, name in enumerate("abc"):
        cache.save(name, _datadir(tmp_path / f"made-{name}"))
        os.utime(tmp_path / "cache" / name, (n, n))
    cache.restore("a", tmp_path / "copy")                # used last: kept
    cache.save("d", _datadir(tmp_path / "made-d"))
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["a", "c", "d"]


def test_a_loaded_directory_evicted_while_it_is_copied_is_a_miss(tmp_path, monkeypatch):
    """Another process's eviction renames the entry away mid-copy: the run loads its own tables
    instead of starting on the files copied before, or failing as if the disk were full."""
    monkeypatch.setenv("CLAIMLAB_DATADIRS", str(tmp_path / "cache"))
    for n, key in enumerate(("old" * 8, "new" * 8)):
        _datadir(tmp_path / "cache" / key / "data")
        os.utime(tmp_path / "cache" / key, (n, n))
    real = shutil.copytree

    def evicted_meanwhile(src, dst, **kwargs):
        initcache.evict_least_recent(tmp_path / "cache", 0)
        return real(src, dst, **kwargs)

    monkeypatch.setattr(shutil, "copytree", evicted_meanwhile)
    home = tmp_path / "home"
    server = SimpleNamespace(home=home, datadir=home / "data", password_file=home / "root.password")
    assert not datacache.restore(server, "old" * 8)
    assert not home.joinpath("data.partial").exists() and not server.datadir.exists()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["new" * 8]
