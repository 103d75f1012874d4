"""The run order: randomized complete blocks from a recorded seed."""

from collections import Counter

from claimlab import params
from claimlab.design import conditions, schedule, unit_seed

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


def test_every_block_holds_each_condition_once(write_params):
    conds = conditions(params.load(write_params(THREE)))
    assert len(conds) == 6
    units = schedule(conds, blocks=8, seed=1)
    assert [u.seq for u in units] == list(range(48))
    for block in range(8):
        ids = [u.condition.id for u in units if u.block == block]
        assert Counter(ids) == Counter(c.id for c in conds)
    orders = {tuple(u.condition.id for u in units if u.block == b) for b in range(8)}
    assert len(orders) > 1, "blocks should not all share one order"


def test_schedule_is_reproducible_from_seed(write_params):
    conds = conditions(params.load(write_params(THREE)))
    ids = lambda s: [u.condition.id for u in schedule(conds, 5, s)]  # noqa: E731
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
