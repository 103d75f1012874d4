"""The experimental design: which conditions exist, which share a server start, and in what order.

Conditions are the cartesian product of the factors' levels. A factor whose levels set no server
option and pick no target is *within-server*: its levels (a table's collation, the client's
charset, the prepared-statement mode: session or table properties) need no server of their own.
The conditions that differ only in within-server factors form a *cell* and are measured in the
same server start, alternating in rounds: each round measures every condition of the cell once,
in an order drawn afresh from the recorded seed. Both sides of every comparison then see the same
machine state, which the slow states of these virtual CPUs (seconds long) otherwise carry into
the ratio (a paired design; Montgomery, Design and Analysis of Experiments, ch. 4, blocking).

Cells (between-server factors: server options, targets) are run in blocks: block b holds one
server start of every cell, in an order shuffled afresh for each block from the seed, so that drift
and neighbours' noise spread over all of them (randomized complete blocks, same chapter).
With `design.side_by_side` a block's cells are not run one after another but at once: one server
per cell, all started together, and the rounds alternate between the servers as they alternate
between a cell's conditions, so a comparison of two server configurations is paired round by round
too (one unit per block). It is for workloads whose noise drifts over seconds to minutes (an
fsync-bound insert loop on a shared disk), where consecutive server starts see different states.

With `design.starts_per_block: k` a block holds k starts of each cell's server, started together,
each with its own address space layout, the rounds alternating between them; each start is a
repetition of its own (block b's are b*k .. b*k+k-1), so the analysis still pairs within one
server process. It buys layouts at the cost of a warm-up, not of a start and a shutdown: where a
ratio depends on where the code landed (MySQL 9.7's unicode scan, 6-13% slower at some addresses;
Mytkowicz et al., "Producing wrong data without doing anything obviously wrong!", ASPLOS 2009),
more layouts per run narrow what one run's draw of them moves the estimate.

`plan` puts all of it together as one value before any server starts: the conditions that can
run here (names spelled for each server), the skipped ones with their reasons, the blocks and the
run's manifest. The runner executes a plan; a test can build one with no server at all.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import random
from dataclasses import dataclass, field
from typing import Callable

from . import params as params_mod
from . import provenance
from . import workloads as wl
from .errors import ConfigError, ServerGone, TargetUnavailable
from .params import Experiment, with_overrides
from .records import RunManifest
from .servers import Flavor, ServerOptions, TargetSpec, check_available, check_cpus, flavor_of
from .store import project_root


@dataclass(frozen=True)
class Condition:
    id: str                                   # "binlog=on,charset=latin1"; "default" with no factor
    levels: tuple[tuple[str, str], ...]       # (factor, level)
    target: str
    server: ServerOptions
    workloads: tuple[wl.Workload, ...]
    cell: str                                 # the between-server part of the id: one server start


@dataclass(frozen=True)
class Unit:
    """One server start (side by side: one start of each cell's server, together): every
    condition of its cells, warm-up, then the rounds."""

    seq: int
    block: int
    repetition: int                           # the first start's; start r is repetition + r
    conditions: tuple[Condition, ...]
    starts: int = 1                           # servers of each cell, started together

    @property
    def repetitions(self) -> range:
        return range(self.repetition, self.repetition + self.starts)

    @property
    def cell(self) -> str:
        return "+".join(group[0].cell for group in self.cells)

    @property
    def cells(self) -> list[tuple[Condition, ...]]:
        return cells(list(self.conditions))


def within_factors(exp: Experiment) -> tuple[str, ...]:
    """Factors whose levels neither set a server option nor pick a target."""
    return tuple(f.name for f in exp.factors
                 if all(lv.target is None and not lv.server.as_dict() for lv in f.levels))


def conditions(exp: Experiment) -> list[Condition]:
    within = set(within_factors(exp))
    out = []
    for combo in itertools.product(*(f.levels for f in exp.factors)):
        levels = tuple((f.name, lv.name) for f, lv in zip(exp.factors, combo))
        cid = ",".join(f"{f}={lv}" for f, lv in levels) or "default"
        cell = ",".join(f"{f}={lv}" for f, lv in levels if f not in within) or "default"
        targets = {lv.target for lv in combo if lv.target}
        if len(targets) > 1:
            raise ConfigError(exp.source, "factors", f"condition {cid} picks two targets: {sorted(targets)}")
        server = ServerOptions()
        owners: dict[str, str] = {}
        for f, lv in zip(exp.factors, combo):
            for key in lv.server.as_dict():
                if key in owners:
                    raise ConfigError(exp.source, f"factors.{f.name}.{lv.name}.server.{key}",
                                      f"also set by factor {owners[key]}; one factor per setting")
                owners[key] = f.name
            server = server.merged(lv.server)
        workloads = []
        for w in exp.workloads:
            overrides: dict = {}
            for f, lv in zip(exp.factors, combo):
                for wname, items in lv.workloads:
                    if wname == w.name:
                        clash = set(overrides) & {k for k, _ in items}
                        if clash:
                            raise ConfigError(exp.source, f"factors.{f.name}.{lv.name}.workloads.{wname}",
                                              f"{sorted(clash)[0]} is also set by another factor")
                        overrides.update(items)
            workloads.append(with_overrides(w, overrides, exp.source, f"workloads.{w.name}")
                             if overrides else w)
        target = targets.pop() if targets else exp.default_target
        if server != ServerOptions() and not exp.targets[target].local:
            setter = next(f"factors.{f.name}.{lv.name}.server" for f, lv in zip(exp.factors, combo)
                          if lv.server != ServerOptions())
            raise ConfigError(exp.source, setter, f"sets server options, but condition {cid} runs on "
                                                  f"external target {target}, which claimlab never reconfigures")
        out.append(Condition(cid, levels, target, server, tuple(workloads), cell))
    groups = cells(out)
    for group in groups:
        for i, w in enumerate(exp.workloads):
            try:
                joint = wl.interleaved([c.workloads[i] for c in group])
            except ValueError as exc:
                raise ConfigError(exp.source, f"workloads.{w.name}", str(exc)) from None
            together = ("design.side_by_side" if exp.design.side_by_side and len(groups) > 1 else
                        "design.starts_per_block" if exp.design.starts_per_block > 1 else None)
            if joint and together:
                raise ConfigError(exp.source, together,
                                  f"workload {w.name} interleaves its levels in one sysbench process, "
                                  "which cannot alternate with other servers; drop one of the two")
    return out


def cells(conds: list[Condition]) -> list[tuple[Condition, ...]]:
    """Conditions grouped by cell, in the order the cells first appear."""
    grouped: dict[str, list[Condition]] = {}
    for c in conds:
        grouped.setdefault(c.cell, []).append(c)
    return [tuple(group) for group in grouped.values()]


# -- servers-helper: names resolved per server flavour (roles such as `uca_ai`) --------------
_NAME_FIELDS = ("charset", "collation", "schema_charset", "schema_collation")


def resolve_conditions(conds: list[Condition], flavors: dict[str, Flavor]
                       ) -> tuple[list[Condition], dict[str, str]]:
    """Every charset/collation name or role in the conditions spelled for the server of its
    target (`Flavor.resolve`), before any server starts. Returns the conditions that can run and,
    for each one that cannot, why (condition id -> reason)."""
    kept, skipped = [], {}
    for cond in conds:
        flavor = flavors[cond.target]
        server, reason = flavor.resolve_options(cond.server)
        workloads = []
        for w in cond.workloads:
            changes = {}
            for name in _NAME_FIELDS:
                value = getattr(w, name, None)
                if value is not None and reason is None:
                    changes[name], why = flavor.resolve(value)
                    reason = reason or (why and f"workloads.{w.name}.{name}: {why}")
            workloads.append(dataclasses.replace(w, **changes) if changes and reason is None else w)
        if reason:
            skipped[cond.id] = f"condition {cond.id} on target {cond.target}: {reason}"
        else:
            kept.append(dataclasses.replace(cond, server=server, workloads=tuple(workloads)))
    return kept, skipped


def schedule(conds: list[Condition], blocks: int, seed: int, side_by_side: bool = False,
             starts: int = 1) -> list[Unit]:
    """Every block's order comes from the same seeded stream: a resumed run sees the same plan.
    Side by side, a block is one unit holding every cell (their rounds' order is `round_order`'s).
    `starts`: servers of each cell per unit (block b's units hold repetitions b*starts on)."""
    rng = random.Random(seed)
    units: list[Unit] = []
    for block in range(blocks):
        order = cells(conds)
        rng.shuffle(order)
        if side_by_side:
            order = [tuple(c for group in order for c in group)]
        units += [Unit(seq=len(units) + i, block=block, repetition=block * starts, conditions=group,
                       starts=starts)
                  for i, group in enumerate(order)]
    return units


def round_order(unit: Unit, round_index: int, seed: int) -> list[tuple[int, Condition]]:
    """The order of a unit's measurements in one round, (start, condition) each (a warm-up
    round is round -1 - k): drawn from the seed, so a resumed unit measures what is missing in
    the order first planned (with one start, the order of the designs before `starts`)."""
    order = [(r, c) for r in range(unit.starts) for c in unit.conditions]
    random.Random(unit_seed(seed, unit.seq, round_index + 1_000)).shuffle(order)
    return order


def unit_seed(seed: int, seq: int, iteration: int) -> int:
    """A reproducible seed for one measurement (sysbench's --rand-seed must be > 0)."""
    return (seed * 1_000_003 + seq * 1009 + iteration) % 2_147_483_647 + 1


# -- the plan: everything decided before a server starts -------------------------------------

def probe(target: TargetSpec) -> Flavor:
    """What a target runs, asked of this machine without starting a server (an external one is
    connected to): TargetUnavailable (or ServerGone) when it cannot run here."""
    check_available(target)
    return flavor_of(target)


def runnable_conditions(exp: Experiment, conds: list[Condition],
                        probe: Callable[[TargetSpec], Flavor] = probe
                        ) -> tuple[list[Condition], dict[str, str]]:
    """The conditions that can run here, and why the others cannot (by target or condition).
    Levels naming a role or a spelling are resolved per server before any starts; a level a
    server lacks is skipped with its reason (e.g. 0900 collations on MariaDB)."""
    flavors, skipped = {}, {}
    for name in sorted({c.target for c in conds}):
        try:
            flavors[name] = probe(exp.targets[name])
        except (TargetUnavailable, ServerGone) as exc:
            skipped[name] = str(exc)
    runnable = [c for c in conds if c.target in flavors]
    if runnable:
        runnable, unresolvable = resolve_conditions(runnable, flavors)
        skipped = skipped | unresolvable
    if not runnable:
        raise TargetUnavailable("; ".join(skipped.values()))
    return runnable, skipped


@dataclass(frozen=True)
class Plan:
    """One run, decided: what the runner executes and the manifest records."""

    experiment: Experiment
    declared: tuple[Condition, ...]          # every combination of levels, as the params file says
    conditions: tuple[Condition, ...]        # those that run here, names spelled for their server
    skipped: dict[str, str]                  # target or condition id -> why it does not run here
    units: tuple[Unit, ...]                  # server starts, in blocks, in the order they run
    blocks: int                              # the number of blocks (a sequential design's cap)
    first_look: int                          # the first block a sequential rule may stop before
    manifest: RunManifest = field(repr=False)

    @property
    def measurements(self) -> int:
        """What the plan measures if it runs to the end (a sequential design usually stops before)."""
        return sum(len(u.conditions) for u in self.units) * len(self.experiment.workloads) \
            * self.experiment.design.iterations

    def external_lines(self) -> list[str]:
        """What the run will do to servers claimlab does not own, said before it starts."""
        exp, lines = self.experiment, []
        for name in sorted({c.target for c in self.conditions if not exp.targets[c.target].local}):
            schemas = sorted({w.schema() for c in self.conditions if c.target == name for w in c.workloads})
            lines.append(f"target {name} (external): will create, use and finally drop schemas "
                         f"{', '.join(schemas)}; nothing else is touched and no global variable is changed")
        return lines


def plan(experiment: Experiment | str | os.PathLike, profile: str | None = None, *,
         probe: Callable[[TargetSpec], Flavor] = probe) -> Plan:
    """The plan of a run of `experiment` (loaded, or a params name or path read with `profile`,
    default quick). `probe` says what each target runs here, or raises TargetUnavailable: by
    default it asks the machine, which starts no server."""
    if isinstance(experiment, Experiment):
        exp = experiment
        if profile is not None and profile != exp.profile:
            raise ValueError(f"{exp.name} is loaded with profile {exp.profile}, not {profile}")
    else:
        exp = params_mod.load(params_mod.find(str(experiment)), profile or "quick")
    declared = conditions(exp)
    check_cpus(exp.design.cpus, [exp.targets[name] for name in sorted({c.target for c in declared})], exp.source)
    runnable, skipped = runnable_conditions(exp, declared, probe)
    design = exp.design
    # a sequential rule counts server starts; with `starts_per_block` k a block holds k of each cell
    k = design.starts_per_block
    blocks = (design.sequential.max_blocks if design.sequential else design.repetitions) // k
    first_look = design.sequential.min_blocks // k if design.sequential else 1
    units = schedule(runnable, blocks, design.seed, design.side_by_side, k)
    return Plan(exp, tuple(declared), tuple(runnable), skipped, tuple(units), blocks, first_look,
                _manifest(exp, declared, units, skipped))


def _manifest(exp: Experiment, conds: list[Condition], units: list[Unit], skipped: dict[str, str]) -> RunManifest:
    return RunManifest.new(
        experiment=exp.name, claim=exp.claim, profile=exp.profile, factors=[f.name for f in exp.factors],
        params_file=exp.source, params=exp.document, seed=exp.design.seed, design=_design_dict(exp),
        targets={n: t.public() for n, t in exp.targets.items()}, default_target=exp.default_target,
        conditions=tuple({"id": c.id, "cell": c.cell, "target": c.target, "levels": dict(c.levels),
                          "server": c.server.as_dict(),
                          "workloads": {w.name: w.describe() for w in c.workloads}} for c in conds),
        skipped_targets=skipped,
        plan=tuple({"seq": u.seq, "block": u.block, "cell": u.cell,
                    "conditions": [c.id for c in u.conditions]} for u in units),
        provenance=provenance.collect(project_root(), provenance.server_programs(
            {n: exp.targets[n] for n in {c.target for c in conds}}, skipped)))


def _design_dict(exp: Experiment) -> dict:
    d = exp.design
    out = {k: getattr(d, k) for k in ("repetitions", "warmup", "iterations", "seed", "fresh_datadir",
                                       "max_attempts", "target", "side_by_side", "starts_per_block",
                                       "place_binary", "cpus")}
    out["sequential"] = None if d.sequential is None else vars(d.sequential)
    out["fast_rounds"] = None if d.fast_rounds is None else vars(d.fast_rounds)
    out["timed_rounds"] = None if d.timed_rounds is None else vars(d.timed_rounds)
    out["within_factors"] = list(within_factors(exp))
    return out
