"""The curated variable list and the diff of two ServerFacts (no server needed)."""

from __future__ import annotations

import pytest

from claimlab import variables
from claimlab.servers import ServerFacts


def facts(version="10.11.6-MariaDB", **values) -> ServerFacts:
    base = {"log_bin": "OFF", "sync_binlog": "0", "port": "3306", "autocommit": "ON", "wait_timeout": "28800"}
    merged = base | values
    return ServerFacts(version=version, variables=merged, log_bin=merged["log_bin"] == "ON")


def test_every_curated_variable_has_a_known_group_and_a_reason():
    for name, (group, why) in variables.CURATED.items():
        assert group in variables.GROUPS, name
        assert len(why) > 10, name


def test_uncurated_variables_are_grouped_by_prefix():
    assert variables.group_of("innodb_spin_wait_delay") == "InnoDB"
    assert variables.group_of("character_set_system") == "charset & collation"
    assert variables.group_of("net_buffer_size") == "buffers"
    assert variables.group_of("wait_timeout") == "other"


def test_diff_flags_curated_differences_only_and_ignores_volatile_ones():
    d = variables.diff(facts(), facts(log_bin="ON", sync_binlog="1", port="4000", wait_timeout="10"),
                       "off", "on")
    assert set(d.differences["variable"]) == {"log_bin", "sync_binlog", "wait_timeout"}
    assert set(d.flagged["variable"]) == {"log_bin", "sync_binlog"}
    assert list(d.view().columns[2:4]) == ["off", "on"]


def test_on_and_one_are_the_same_setting():
    d = variables.diff(facts(autocommit="ON"), facts(autocommit="1"))
    assert d.differences.empty


def test_a_version_difference_is_flagged():
    d = variables.diff(facts(), facts(version="8.0.40"))
    assert list(d.flagged["variable"]) == ["version"]


def test_paths_and_identities_are_not_differences():
    d = variables.diff(facts(server_uid="x", tmp_table_dir="/a/b"), facts(server_uid="y", tmp_table_dir="/c/d"))
    assert d.differences.empty


def test_labels_must_differ():
    with pytest.raises(ValueError):
        variables.diff(facts(), facts(), "x", "x")


def test_lines_show_a_differing_version_in_full():
    d = variables.diff(facts(version="10.11.19-MariaDB-0+deb12u1"),
                       facts(version="10.11.19-MariaDB-0+deb12u1-log", log_bin="ON"), "off", "on")
    text = "\n".join(d.lines())
    assert "10.11.19-MariaDB-0+deb12u1-log" in text and "…" not in text
    header, *rest = d.lines()
    version = next(line for line in rest if "version" in line)
    assert header.index(" on ") + 1 == version.index("10.11.19-MariaDB-0+deb12u1-log")   # aligned
