"""The run order: randomized complete blocks from a recorded seed."""

from collections import Counter

from claimlab import params
from claimlab.design import conditions, round_order, schedule, unit_seed, within_factors

THREE = """
claim: C2
targets: {default: {kind: mariadb}}
workloads: {scan: {kind: varchar_scan, rows: 10}}
factors:
  collation:
    a: {workloads: {scan: {collation: utf8mb4_general_ci}}}
    b: {workloads: {scan: {collation: utf8mb4_unicode_ci}}}
    c: {workloads: {scan: {collation: utf8mb4_bin}}}
  other:
    x: {}
    y: {}
"""


BETWEEN = """
claim: C4
targets: {default: {kind: mariadb}, other: {kind: mariadb}}
workloads: {scan: {kind: varchar_scan, rows: 10}}
factors:
  binlog:
    "off": {server: {log_bin: false}}
    "on": {server: {log_bin: true}}
    elsewhere: {target: other}
  collation:
    a: {workloads: {scan: {collation: utf8mb4_general_ci}}}
    b: {workloads: {scan: {collation: utf8mb4_unicode_ci}}}
"""


def test_session_factors_share_a_server_start(write_params):
    """Levels that set no server option and pick no target run in one server start (a cell)."""
    exp = params.load(write_params(THREE))
    assert within_factors(exp) == ("collation", "other")
    units = schedule(conditions(exp), blocks=4, seed=1)
    assert [u.seq for u in units] == [0, 1, 2, 3] and [u.block for u in units] == [0, 1, 2, 3]
    assert all(len(u.conditions) == 6 and u.cell == "default" for u in units)


def test_server_factors_make_blocks_of_cells(write_params):
    exp = params.load(write_params(BETWEEN))
    assert within_factors(exp) == ("collation",)
    conds = conditions(exp)
    units = schedule(conds, blocks=8, seed=1)
    assert [u.seq for u in units] == list(range(24))
    for block in range(8):
        cells = [u.cell for u in units if u.block == block]
        assert Counter(cells) == Counter({"binlog=off": 1, "binlog=on": 1, "binlog=elsewhere": 1})
    for u in units:   # every unit holds both collations of its own cell, nothing else
        assert sorted(c.id for c in u.conditions) == [f"{u.cell},collation=a", f"{u.cell},collation=b"]
        assert len({(c.target, c.server) for c in u.conditions}) == 1
    orders = {tuple(u.cell for u in units if u.block == b) for b in range(8)}
    assert len(orders) > 1, "blocks should not all share one order"


def test_rounds_alternate_in_a_recorded_random_order(write_params):
    exp = params.load(write_params(THREE))
    unit = schedule(conditions(exp), blocks=1, seed=1)[0]
    rounds = [[c.id for c in round_order(unit, r, 5)] for r in range(20)]
    assert all(sorted(r) == sorted(c.id for c in unit.conditions) for r in rounds)
    assert len({tuple(r) for r in rounds}) > 10           # orders vary from round to round
    firsts = Counter(r[0] for r in rounds)
    assert len(firsts) >= 3                               # no condition always goes first
    assert rounds == [[c.id for c in round_order(unit, r, 5)] for r in range(20)]   # reproducible
    assert rounds != [[c.id for c in round_order(unit, r, 6)] for r in range(20)]


def test_schedule_is_reproducible_from_seed(write_params):
    conds = conditions(params.load(write_params(BETWEEN)))
    ids = lambda s: [u.cell for u in schedule(conds, 5, s)]  # noqa: E731
    assert ids(7) == ids(7)
    assert ids(7) != ids(8)


def test_levels_override_workload_parameters(write_params):
    conds = {c.id: c for c in conditions(params.load(write_params(THREE)))}
    assert conds["collation=b,other=x"].workloads[0].collation == "utf8mb4_unicode_ci"
    assert conds["collation=b,other=x"].workloads[0].schema() != conds["collation=a,other=x"].workloads[0].schema()
    assert conds["collation=a,other=x"].workloads[0].schema() == conds["collation=a,other=y"].workloads[0].schema()


def test_unit_seed_positive_and_distinct():
    seeds = {unit_seed(20261122, seq, it) for seq in range(50) for it in range(5)}
    assert len(seeds) == 250 and min(seeds) > 0
