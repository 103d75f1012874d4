"""Version differences live in one place: the option spellings per server flavor."""

from claimlab.servers import Flavor, ServerOptions, tarball_urls

OFF, ON = ServerOptions(log_bin=False), ServerOptions(log_bin=True, sync_binlog=1)


def test_binlog_off_needs_skip_log_bin_on_mysql_8():
    assert "skip-log-bin" in Flavor("mysql", (8, 0, 40)).option_lines(OFF)
    assert "skip-log-bin" in Flavor("mysql", (8, 4, 3)).option_lines(OFF)
    assert not any("log" in x for x in Flavor("mysql", (5, 7, 44)).option_lines(OFF))
    assert not any("log-bin" in x for x in Flavor("mariadb", (10, 11, 19)).option_lines(OFF))


def test_binlog_on_sets_server_id():
    for flavor in (Flavor("mysql", (5, 7, 44)), Flavor("mysql", (8, 0, 40)), Flavor("mariadb", (10, 11, 0))):
        lines = flavor.option_lines(ON)
        assert "log-bin=binlog" in lines and "server-id=1" in lines and "sync-binlog=1" in lines


def test_merged_options_and_extra():
    base = ServerOptions(innodb_buffer_pool_size="64M", extra=(("max_connections", "50"),))
    merged = base.merged(ServerOptions(log_bin=True, extra=(("max_connections", "77"),)))
    assert merged.log_bin is True and merged.innodb_buffer_pool_size == "64M"
    assert dict(merged.extra) == {"max_connections": "77"}
    assert merged.key() != base.key()


def test_tarball_urls_try_each_layout_mysql_used():
    """5.7 exists only as glibc2.12 .tar.gz; 8.0 as glibc2.28, 2.17 or (early) 2.12 .tar.xz; current
    releases live under Downloads/, older ones under archives/."""
    assert tarball_urls("5.7.44") == [
        "https://cdn.mysql.com/Downloads/MySQL-5.7/mysql-5.7.44-linux-glibc2.12-x86_64.tar.gz",
        "https://cdn.mysql.com/archives/mysql-5.7/mysql-5.7.44-linux-glibc2.12-x86_64.tar.gz"]
    urls = tarball_urls("8.0.40")
    assert [u.rsplit("-linux-", 1)[1] for u in urls[::2]] == [
        "glibc2.28-x86_64.tar.xz", "glibc2.17-x86_64.tar.xz", "glibc2.12-x86_64.tar.xz"]
    assert not any("glibc2.12" in u for u in tarball_urls("8.4.3"))
    assert tarball_urls("9.7.4", "file:///srv/mirror/") == [
        "file:///srv/mirror/mysql-9.7.4-linux-glibc2.28-x86_64.tar.xz",
        "file:///srv/mirror/mysql-9.7.4-linux-glibc2.17-x86_64.tar.xz"]


def test_only_claimlab_schemas_can_be_dropped():
    import pytest

    from claimlab.servers import ExternalServer, TargetSpec
    server = ExternalServer(TargetSpec(name="theirs", kind="external", host="127.0.0.1", port=9))
    for name in ("mysql", "production", "claimlab", "claimlab_x`; DROP DATABASE mysql; --", "CLAIMLAB_x"):
        with pytest.raises(ValueError, match="not a claimlab schema"):
            server.drop_schema(name)   # refused before any connection is attempted
