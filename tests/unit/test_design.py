"""The run order: randomized complete blocks from a recorded seed."""

import random
from collections import Counter

import pytest

from claimlab import design, params
from claimlab.design import conditions, round_order, schedule, unit_seed, within_factors
from claimlab.errors import ConfigError, TargetUnavailable
from claimlab.servers import MariaDB, MySQL
from conftest import ROOT

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


def test_side_by_side_puts_every_cell_of_a_block_in_one_unit(write_params):
    """Side by side, a block is one unit: every cell's server starts together and the rounds
    alternate over all conditions, so server-level comparisons are paired round by round."""
    exp = params.load(write_params(BETWEEN + "design: {side_by_side: true}\n"))
    assert exp.design.side_by_side
    conds = conditions(exp)
    units = schedule(conds, blocks=4, seed=1, side_by_side=True)
    assert [u.block for u in units] == [0, 1, 2, 3] and [u.seq for u in units] == [0, 1, 2, 3]
    for u in units:
        assert sorted(c.id for c in u.conditions) == sorted(c.id for c in conds)
        assert sorted(group[0].cell for group in u.cells) == ["binlog=elsewhere", "binlog=off", "binlog=on"]
        assert sorted(u.cell.split("+")) == ["binlog=elsewhere", "binlog=off", "binlog=on"]
    # a round mixes the cells, in orders that vary
    rounds = {tuple(c.cell for _, c in round_order(units[0], r, 3)) for r in range(10)}
    assert len(rounds) > 3
    # the blocks follow the same seeded stream as one-at-a-time runs: the cells' order per block
    one_at_a_time = schedule(conds, blocks=4, seed=1)
    assert [units[b].cell for b in range(4)] == \
        ["+".join(u.cell for u in one_at_a_time if u.block == b) for b in range(4)]


INTERLEAVED = """
claim: C1
targets: {a: {kind: mariadb}}
workloads:
  oltp: {kind: sysbench, test: oltp_read_write, interleave: true}
factors:
  charset:
    latin1: {workloads: {oltp: {charset: latin1}}}
    utf8mb4: {workloads: {oltp: {charset: utf8mb4}}}
"""


@pytest.mark.parametrize("extra, field", [
    ('  binlog:\n    "off": {server: {log_bin: false}}\n    "on": {server: {log_bin: true}}\n'
     "design: {side_by_side: true}\n", "design.side_by_side"),
    ("design: {repetitions: 2, starts_per_block: 2}\n", "design.starts_per_block"),
], ids=["side_by_side", "starts_per_block"])
def test_servers_together_refuse_a_workload_that_interleaves_in_one_process(write_params, extra, field):
    """One sysbench process measuring every level cannot alternate with another server: side by
    side cells and several starts per block both refuse it, naming their own field."""
    with pytest.raises(ConfigError, match=rf"{field}.*interleaves"):
        conditions(params.load(write_params(INTERLEAVED + extra)))



def test_rounds_alternate_in_a_recorded_random_order(write_params):
    exp = params.load(write_params(THREE))
    unit = schedule(conditions(exp), blocks=1, seed=1)[0]
    rounds = [[c.id for _, c in round_order(unit, r, 5)] for r in range(20)]
    assert all(sorted(r) == sorted(c.id for c in unit.conditions) for r in rounds)
    assert len({tuple(r) for r in rounds}) > 10           # orders vary from round to round
    firsts = Counter(r[0] for r in rounds)
    assert len(firsts) >= 3                               # no condition always goes first
    assert rounds == [[c.id for _, c in round_order(unit, r, 5)] for r in range(20)]   # reproducible
    assert rounds != [[c.id for _, c in round_order(unit, r, 6)] for r in range(20)]
    # the orders runs made before `starts` planned (a resumed one measures in its first order)
    for r in range(20):
        before = list(unit.conditions)
        random.Random(unit_seed(5, unit.seq, r + 1_000)).shuffle(before)
        assert rounds[r] == [c.id for c in before]


def test_starts_per_block_puts_several_servers_of_a_cell_in_one_unit(write_params):
    """Two starts per block: each unit holds two servers of its cell, each a repetition of its
    own, and the rounds alternate over every (start, condition)."""
    exp = params.load(write_params(BETWEEN + "design: {repetitions: 6, starts_per_block: 2}\n"))
    conds = conditions(exp)
    units = schedule(conds, blocks=3, seed=1, starts=2)
    assert len(units) == 9 and {u.starts for u in units} == {2}
    for block in range(3):
        assert {tuple(u.repetitions) for u in units if u.block == block} == {(2 * block, 2 * block + 1)}
    # the blocks' cell orders are the one-start schedule's
    assert [u.cell for u in units] == [u.cell for u in schedule(conds, blocks=3, seed=1)]
    rounds = [round_order(units[0], r, 3) for r in range(10)]
    for order in rounds:
        assert sorted((r, c.id) for r, c in order) == sorted((r, c.id) for r in (0, 1) for c in units[0].conditions)
    assert len({tuple(r for r, _ in order) for order in rounds}) > 3    # the starts interleave, not in turn


@pytest.mark.parametrize("design, field, message", [
    ("{repetitions: 5, starts_per_block: 2}", "design.repetitions", "do not fill blocks of 2"),
    ("{repetitions: 4, starts_per_block: 2, sequential: {min_blocks: 3, max_blocks: 6}}",
     "design.sequential.min_blocks", "3 server starts do not fill blocks of 2"),
    ("{repetitions: 4, starts_per_block: 2, sequential: {min_blocks: 2, max_blocks: 5}}",
     "design.sequential.max_blocks", "5 server starts do not fill blocks of 2"),
    ("{starts_per_block: 5}", "design.starts_per_block", "must be <= 4"),
])
def test_starts_per_block_refuses_what_it_cannot_plan(write_params, design, field, message):
    with pytest.raises(ConfigError, match=f"{field}.*{message}"):
        params.load(write_params(BETWEEN + f"design: {design}\n"))


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


PLANNED = """
claim: C2
targets: {maria: {kind: mariadb}, my: {kind: mysql-debian}, gone: {kind: mariadb}}
workloads: {scan: {kind: varchar_scan, rows: 10}}
factors:
  server:
    maria: {target: maria}
    my: {target: my}
    gone: {target: gone}
  collation:
    general: {workloads: {scan: {collation: utf8mb4_general_ci}}}
    uca: {workloads: {scan: {collation: uca_ai}}}
    c0900: {workloads: {scan: {collation: utf8mb4_0900_ai_ci}}}
design: {repetitions: 3, seed: 7}
"""


def _machine(target):
    """What this test's machine runs: MariaDB 10.11 and MySQL 9.7; target `gone` is not here."""
    if target.name == "gone":
        raise TargetUnavailable(f"target {target.name}: mariadbd not found")
    return MariaDB((10, 11, 19)) if target.kind == "mariadb" else MySQL((9, 7, 4))


def test_a_plan_is_decided_before_any_server_starts(write_params):
    planned = design.plan(params.load(write_params(PLANNED)), probe=_machine)
    assert len(planned.declared) == 9
    assert planned.skipped.keys() == {"gone", "server=maria,collation=c0900"}
    assert "mariadbd not found" in planned.skipped["gone"] and "0900" in planned.skipped["server=maria,collation=c0900"]
    spelled = {c.id: c.workloads[0].collation for c in planned.conditions}
    assert spelled == {"server=maria,collation=general": "utf8mb4_general_ci",
                       "server=maria,collation=uca": "utf8mb4_uca1400_ai_ci",
                       "server=my,collation=general": "utf8mb4_general_ci",
                       "server=my,collation=uca": "utf8mb4_0900_ai_ci",
                       "server=my,collation=c0900": "utf8mb4_0900_ai_ci"}
    assert planned.blocks == 3 and len(planned.units) == 3 * 2     # a block: one start per server
    assert Counter(u.block for u in planned.units) == {0: 2, 1: 2, 2: 2}
    assert planned.measurements == 3 * 5 * planned.experiment.design.iterations
    m = planned.manifest
    assert m.status == "running" and m.seed == 7 and m.skipped_targets == planned.skipped
    assert [c["id"] for c in m.conditions] == [c.id for c in planned.declared]
    assert [p["conditions"] for p in m.plan] == [[c.id for c in u.conditions] for u in planned.units]
    again = design.plan(params.load(write_params(PLANNED)), probe=_machine)
    assert again.units == planned.units and again.manifest.run_id != m.run_id   # same order, a new run


def test_a_plan_of_a_params_name_reads_it_with_the_profile(monkeypatch):
    monkeypatch.chdir(ROOT)
    smoke = design.plan("collation_cost", "smoke", probe=_machine)
    assert smoke.experiment.profile == "smoke" and smoke.manifest.profile == "smoke"
    assert design.plan("collation_cost", probe=_machine).experiment.profile == "quick"
    with pytest.raises(ValueError, match="profile smoke, not full"):
        design.plan(smoke.experiment, "full", probe=_machine)


def test_a_plan_with_nothing_to_run_here_says_why(write_params):
    exp = params.load(write_params(PLANNED.replace("maria: {kind: mariadb}", "maria: {kind: mariadb, binary: /x}")))
    nothing = lambda target: (_ for _ in ()).throw(TargetUnavailable(f"target {target.name}: absent"))  # noqa: E731
    with pytest.raises(TargetUnavailable, match="target gone: absent; target maria: absent; target my: absent"):
        design.plan(exp, probe=nothing)
