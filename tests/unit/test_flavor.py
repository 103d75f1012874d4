"""Version differences live in one place: the option spellings per server flavor."""

import pytest

from claimlab.servers import Flavor, MariaDB, MySQL, ServerOptions, tarball_urls

OFF, ON = ServerOptions(log_bin=False), ServerOptions(log_bin=True, sync_binlog=1)


def test_binlog_off_needs_skip_log_bin_on_mysql_8():
    assert "skip-log-bin" in MySQL((8, 0, 40)).option_lines(OFF)
    assert "skip-log-bin" in MySQL((8, 4, 3)).option_lines(OFF)
    assert not any("log" in x for x in MySQL((5, 7, 44)).option_lines(OFF))
    assert not any("log-bin" in x for x in MariaDB((10, 11, 19)).option_lines(OFF))


def test_binlog_on_sets_server_id():
    for flavor in (MySQL((5, 7, 44)), MySQL((8, 0, 40)), MariaDB((10, 11, 0))):
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


MYSQL97, MYSQL57, MYSQL8029 = MySQL((9, 7, 4)), MySQL((5, 7, 44)), MySQL((8, 0, 29))
MARIADB1011, MARIADB105 = MariaDB((10, 11, 14)), MariaDB((10, 5, 9))


def test_role_uca_ai_is_spelled_per_server():
    assert MYSQL97.resolve("uca_ai") == ("utf8mb4_0900_ai_ci", None)
    assert MARIADB1011.resolve("uca_ai") == ("utf8mb4_uca1400_ai_ci", None)
    for flavor in (MYSQL57, MARIADB105):
        name, reason = flavor.resolve("uca_ai")
        assert name is None and "no UCA 9.0/14.0" in reason


def test_names_a_server_lacks_are_refused_with_a_reason_before_start():
    assert MARIADB1011.resolve("utf8mb4_0900_ai_ci")[0] is None
    assert MariaDB((11, 4, 5)).resolve("utf8mb4_0900_ai_ci") == ("utf8mb4_0900_ai_ci", None)
    assert "MySQL's analogue is role uca_ai" in MYSQL97.resolve("utf8mb4_uca1400_ai_ci")[1]
    assert MYSQL57.resolve("utf8mb4_0900_ai_ci")[0] is None
    assert MYSQL97.resolve("latin1_swedish_ci") == ("latin1_swedish_ci", None)


def test_utf8mb3_collations_keep_their_old_names_where_servers_need_them():
    assert MYSQL57.resolve("utf8mb3_general_ci") == ("utf8_general_ci", None)
    assert MYSQL8029.resolve("utf8mb3_general_ci") == ("utf8_general_ci", None)
    assert MYSQL97.resolve("utf8mb3_general_ci") == ("utf8mb3_general_ci", None)
    assert MARIADB105.resolve("utf8mb3_general_ci") == ("utf8_general_ci", None)
    assert Flavor.same_name("utf8mb3", "utf8") and Flavor.same_name("utf8mb3_general_ci", "UTF8_GENERAL_CI")
    assert not Flavor.same_name("utf8mb4_general_ci", "utf8mb3_general_ci")


def test_resolving_options_fills_the_charset_of_a_role_collation():
    opts, reason = MYSQL97.resolve_options(ServerOptions(collation_server="uca_ai"))
    assert reason is None
    assert (opts.character_set_server, opts.collation_server) == ("utf8mb4", "utf8mb4_0900_ai_ci")
    assert MARIADB105.resolve_options(ServerOptions(collation_server="uca_ai"))[0] is None


def test_counters_per_flavour():
    assert "Binlog_commits" in MARIADB1011.status_counters()
    assert "Binlog_commits" not in MYSQL97.status_counters()
    assert "Binlog_cache_use" in MYSQL97.status_counters() and MYSQL97.witness_queries()
    assert not MARIADB1011.witness_queries()


def test_flavor_from_what_servers_say():
    assert Flavor.from_version_text("5.5.5-10.11.14-MariaDB-0+deb12u2") == MARIADB1011
    assert Flavor.from_version_text("9.7.4-2") == MYSQL97
    assert Flavor.from_version_text("/usr/sbin/mariadbd  Ver 10.11.14-MariaDB-0+deb12u2 for debian") == MARIADB1011


def test_mariadb_10_8_has_no_log_fsync_counter():
    assert "Innodb_os_log_fsyncs" not in MARIADB1011.status_counters()
    assert "Innodb_os_log_fsyncs" in MARIADB105.status_counters()
    assert "Innodb_os_log_fsyncs" in MYSQL97.status_counters()


def test_valgrind_settings_per_flavour():
    """MariaDB caps the pool's reserved maximum (it cannot reserve the default under valgrind);
    MySQL has no such option and would refuse to start with it. Both use simulated AIO."""
    mariadb = MariaDB((10, 11, 14)).valgrind_options(ServerOptions(innodb_buffer_pool_size="512M"))
    assert mariadb.innodb_buffer_pool_size == "512M"
    assert dict(mariadb.extra) == {"innodb-buffer-pool-size-max": "512M", "skip-innodb-use-native-aio": "ON"}
    mysql = MySQL((9, 7, 4)).valgrind_options(ServerOptions(log_bin=False))
    assert mysql.innodb_buffer_pool_size == "128M" and mysql.log_bin is False
    assert dict(mysql.extra) == {"innodb-use-native-aio": "OFF"}
    assert "innodb-use-native-aio=OFF" in MySQL((9, 7, 4)).option_lines(mysql)


def test_every_kind_a_params_file_may_name_is_a_class_saying_whether_claimlab_runs_it():
    from claimlab.servers import KINDS, TargetSpec, kind_of
    from claimlab.servers.kinds import External, TargetKind

    assert all(isinstance(kind_of(TargetSpec(name="t", kind=k)), TargetKind) for k in KINDS)
    assert [k for k in KINDS if not TargetSpec(name="t", kind=k).local] == ["external"]
    assert isinstance(kind_of(TargetSpec(name="t", kind="external")), External)
    with pytest.raises(ValueError, match="no installation"):
        kind_of(TargetSpec(name="t", kind="external")).installation(TargetSpec(name="t", kind="external"))


def test_the_product_is_the_flavours_class_not_a_name_to_compare():
    assert isinstance(Flavor.from_version_text("10.11.14-MariaDB"), MariaDB)
    assert isinstance(Flavor.from_version_text("9.7.4"), MySQL)
    assert MySQL((9, 7, 4)) != MariaDB((9, 7, 4))
    assert str(MariaDB((10, 11, 14))) == "MariaDB 10.11.14" and MySQL((9, 7, 4)).vendor == "mysql"
    assert MySQL((9, 7, 4)).slow_shutdown and not MariaDB((10, 11, 14)).slow_shutdown
