"""Version differences live in one place: the option spellings per server flavor."""

from claimlab.servers import Flavor, ServerOptions, tarball_url

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


def test_tarball_urls():
    assert tarball_url("5.7.44").endswith("/mysql-5.7/mysql-5.7.44-linux-glibc2.12-x86_64.tar.gz")
    assert tarball_url("8.0.40").endswith("/mysql-8.0/mysql-8.0.40-linux-glibc2.28-x86_64.tar.xz")


def test_only_claimlab_schemas_can_be_dropped():
    import pytest

    from claimlab.servers import ExternalServer, TargetSpec
    server = ExternalServer(TargetSpec(name="theirs", kind="external", host="127.0.0.1", port=9))
    for name in ("mysql", "production", "claimlab", "claimlab_x`; DROP DATABASE mysql; --", "CLAIMLAB_x"):
        with pytest.raises(ValueError, match="not a claimlab schema"):
            server.drop_schema(name)   # refused before any connection is attempted
