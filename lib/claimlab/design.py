"""The experimental design: which conditions exist, and in what order they run.

Conditions are the cartesian product of the factors' levels. Repetitions run in blocks: block b
holds repetition b of every condition, in an order shuffled afresh for each block from the recorded
seed, so that drift and neighbours' noise spread over all conditions instead of biasing the ones
that happened to run last (randomized complete blocks; Montgomery, Design and Analysis of
Experiments, ch. 4).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from dataclasses import dataclass

from . import workloads as wl
from .errors import ConfigError
from .params import Experiment
from .schema import Fields
from .servers import Flavor, ServerOptions


@dataclass(frozen=True)
class Condition:
    id: str                                   # "binlog=on,charset=latin1"; "default" with no factor
    levels: tuple[tuple[str, str], ...]       # (factor, level)
    target: str
    server: ServerOptions
    workloads: tuple[wl.Workload, ...]

    def level(self, factor: str) -> str:
        return dict(self.levels)[factor]


@dataclass(frozen=True)
class Unit:
    """One repetition of one condition: a fresh server process, warm-up, then the iterations."""

    seq: int
    block: int
    repetition: int
    condition: Condition


def conditions(exp: Experiment) -> list[Condition]:
    out = []
    for combo in itertools.product(*(f.levels for f in exp.factors)):
        levels = tuple((f.name, lv.name) for f, lv in zip(exp.factors, combo))
        cid = ",".join(f"{f}={lv}" for f, lv in levels) or "default"
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
            workloads.append(wl.with_overrides(w, Fields(overrides, exp.source, f"workloads.{w.name}"))
                             if overrides else w)
        target = targets.pop() if targets else exp.default_target
        if server != ServerOptions() and exp.targets[target].kind == "external":
            setter = next(f"factors.{f.name}.{lv.name}.server" for f, lv in zip(exp.factors, combo)
                          if lv.server != ServerOptions())
            raise ConfigError(exp.source, setter, f"sets server options, but condition {cid} runs on "
                                                  f"external target {target}, which claimlab never reconfigures")
        out.append(Condition(cid, levels, target, server, tuple(workloads)))
    return out


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


def schedule(conds: list[Condition], blocks: int, seed: int) -> list[Unit]:
    """Every block's order comes from the same seeded stream: a resumed run sees the same plan."""
    rng = random.Random(seed)
    units: list[Unit] = []
    for block in range(blocks):
        order = list(conds)
        rng.shuffle(order)
        units += [Unit(seq=len(units) + i, block=block, repetition=block, condition=c)
                  for i, c in enumerate(order)]
    return units


def unit_seed(seed: int, seq: int, iteration: int) -> int:
    """A reproducible seed for one measurement (sysbench's --rand-seed must be > 0)."""
    return (seed * 1_000_003 + seq * 1009 + iteration) % 2_147_483_647 + 1
