"""The configuration diff on real MariaDB: a difference planted through options is found and flagged."""

from __future__ import annotations

from claimlab import variables
from claimlab.servers import ServerOptions


def test_diff_finds_planted_differences(launcher, default_target):
    base = ServerOptions(innodb_buffer_pool_size="64M")
    planted = base.merged(ServerOptions(log_bin=True, sync_binlog=1, extra=(("max_connections", "77"),)))
    facts = {}
    for label, options in (("plain", base), ("planted", planted)):
        server = launcher.prepare(default_target, options)
        try:
            server.start()
            facts[label] = server.facts()
        finally:
            server.stop()
    result = variables.diff(facts["plain"], facts["planted"], "plain", "planted")
    flagged = result.flagged.set_index("variable")
    assert {"log_bin", "sync_binlog", "max_connections"} <= set(flagged.index)
    assert flagged.loc["log_bin", "group"] == "binlog & replication"
    assert flagged.loc["max_connections", "value_b"] == "77"
    assert "fsync" in flagged.loc["sync_binlog", "why"]
    assert "port" not in set(result.table["variable"])          # volatile: differs every start
    same = variables.diff(facts["plain"], facts["plain"], "a", "b")
    assert same.differences.empty and same.lines() == ["no differences"]
    assert any(line.startswith("! log_bin") for line in result.lines())
