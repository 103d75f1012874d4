"""Params files: one YAML file per experiment, declared once and validated at load.

    claim: C4                      # the claim in data/claims.yaml this experiment tests
    description: ...
    targets:                       # where servers come from (see servers.TargetSpec)
      default: {kind: mariadb, options: {innodb_flush_log_at_trx_commit: 1}}
    workloads:                     # what is measured in every repetition (see workloads.KINDS)
      insert_loop: {kind: proc_insert_loop, rows: 1000}
    factors:                       # levels set server options, workload parameters or the target
      binlog:
        "off": {server: {log_bin: false}}
        "on":  {server: {log_bin: true, sync_binlog: 1}}
    design: {repetitions: 5, warmup: 1, iterations: 3, seed: 20261122}
    levels_for:                    # per default target, the levels its runs keep (default: all)
      mariadb: {binlog: ["on"]}    # e.g. levels pinned to other targets run with one target only
    profiles:                      # smoke | quick | full override design, workloads and levels
      smoke: {design: {repetitions: 2}, workloads: {insert_loop: {rows: 100}}}
      # also `levels: {binlog: ["on"]}` (the levels kept), `measure: [insert_loop]` (the
      # workloads run; default all) and `design_for: {mysql: {repetitions: 4}}` (the design of
      # runs on that target, over the profile's: a server whose restart costs more gets fewer,
      # longer blocks). `design.starts_per_block: 2` starts two servers of each configuration per
      # block together (two code layouts for one start-up's wait; design.py)

The experiment's name is the file's stem. Unknown keys anywhere are errors.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, create_model, model_validator

from . import workloads as wl
from .errors import ConfigError
from .records import RESERVED_COLUMNS
from .schema import LevelName, Model, Name, Text, built, check_name, fail, number_text, read_yaml, show, validate
from .servers import ServerOptions, TargetSpec
from .stopping import FastRounds, StopRule, TimedRounds
from .target_params import ServerOptionsIn, target

PROFILES = ("smoke", "quick", "full")

@dataclass(frozen=True)
class Level:
    name: str
    target: str | None
    server: ServerOptions
    workloads: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]  # workload -> parameter overrides


@dataclass(frozen=True)
class Factor:
    name: str
    levels: tuple[Level, ...]


@dataclass(frozen=True)
class Design:
    repetitions: int = 3          # server processes per condition (the upper level of the data)
    warmup: int = 1               # unrecorded iterations after each start
    iterations: int = 3           # recorded iterations per repetition
    seed: int = 20261122
    fresh_datadir: bool = False   # re-initialise the data directory for every repetition
    max_attempts: int = 3         # tries per repetition when the server dies or a workload fails
    target: str | None = None     # the target when no factor picks one
    sequential: StopRule | None = None   # ask the statistics after each block (stats.should_stop)
    side_by_side: bool = False    # a block's cells run in servers started together, rounds alternating
    starts_per_block: int = 1     # servers of each cell per block, started together (own code layouts)
    place_binary: bool = True     # each block's servers run a fresh copy of their binary (servers.placement)
    fast_rounds: FastRounds | None = None   # rounds added to a start short of fast-state values
    timed_rounds: TimedRounds | None = None   # rounds added to a start that measured little time
    cpus: tuple[int, ...] | None = None   # the vCPUs its servers and their load generator share (None: all)


# The servers `make report` runs every claim on, where each can run here: MariaDB and MySQL 9.7
# from the OS's archives, MySQL 5.7 and 8.0 from tarballs (a mirror's, servers.tarball).
REPORT_TARGETS = ("mariadb", "mysql", "mysql57", "mysql80")


@dataclass(frozen=True)
class Experiment:
    """A params file resolved for one profile: everything the runner needs, nothing secret."""

    source: str
    name: str
    claim: str
    description: str
    profile: str
    targets: dict[str, TargetSpec]
    workloads: tuple[wl.Workload, ...]
    factors: tuple[Factor, ...]
    design: Design
    document: dict  # the file as loaded, for the manifest
    # the design of runs whose default target is the key: the profile's, or its `design_for`
    target_designs: dict[str, Design] = field(default_factory=dict)
    # the factors of runs whose default target is the key, where `levels_for` restricts them
    target_factors: dict[str, tuple[Factor, ...]] = field(default_factory=dict)

    @property
    def default_target(self) -> str:
        return self.design.target or next(iter(self.targets))


# --------------------------------------------------------------------------- workloads

# Upper bounds of every integer workload parameter: a count in the billions is a typo, and would
# otherwise end in a MemoryError or a load that never finishes, after a server was started.
WORKLOAD_LIMITS = {"rows": 10_000_000, "batch": 100_000, "threads": 1024, "time": 86_400, "tables": 100,
                   "table_size": 100_000_000, "report_interval": 3600}


def _workload_model(cls: type[wl.Workload]) -> type[Model]:
    hints = typing.get_type_hints(cls)
    params: dict[str, Any] = {"kind": (typing.Literal[cls.kind], ...)}
    for fld in fields(cls):
        if fld.name == "name":
            continue
        kind = hints[fld.name]
        if kind is int:
            kind = Annotated[int, Field(ge=1, le=WORKLOAD_LIMITS[fld.name])]
        params[fld.name] = (kind, fld.default)

    def check(self):
        built(lambda: cls(name="check", **self.model_dump(exclude={"kind"})))
        return self

    return create_model(f"{cls.__name__}Params", __base__=Model, __module__=__name__,
                        __validators__={"check": model_validator(mode="after")(check)}, **params)


WORKLOAD_MODELS = {kind: _workload_model(cls) for kind, cls in wl.KINDS.items()}


def workload(name: str, data: Any, source: str, where: str) -> wl.Workload:
    """A workload from its mapping: `kind` picks the class, every other key is one of its parameters.
    Its name is part of its schema's (`Workload.schema`), which must fit MySQL's identifier limit:
    a longer one would pass here and fail mid-run, at the first load."""
    if len(name) > wl.MAX_NAME:
        raise ConfigError(source, where, f"a workload name may have at most {wl.MAX_NAME} characters "
                                         f"(its schema's name, claimlab_<name>_<hash>, must fit MySQL's "
                                         f"{wl.MAX_SCHEMA}); this one has {len(name)}")
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(data, dict) and kind not in WORKLOAD_MODELS:
        if kind is None:
            raise ConfigError(source, f"{where}.kind", f"is required (one of {', '.join(WORKLOAD_MODELS)})")
        raise ConfigError(source, f"{where}.kind", f"must be one of {', '.join(WORKLOAD_MODELS)}; got {show(kind)}")
    model = validate(WORKLOAD_MODELS.get(kind, Model), data, source, where)
    return wl.KINDS[kind](name=name, **model.model_dump(exclude={"kind"}))


def with_overrides(base: wl.Workload, overrides: Any, source: str, where: str) -> wl.Workload:
    """The same workload with some parameters changed (by a factor level or a profile)."""
    if not isinstance(overrides, dict):
        raise ConfigError(source, where, f"expected a mapping, got {show(overrides)}")
    if "kind" in overrides:
        raise ConfigError(source, f"{where}.kind", "a level or profile cannot change a workload's kind")
    return workload(base.name, base.describe() | overrides, source, where)


# --------------------------------------------------------------------------- the params file

class _RuleIn(Model):
    """A design's rule as the file gives it: the record's own checks run at load, placed on the
    field they name (`_record`)."""

    rule: ClassVar[type]

    @model_validator(mode="after")
    def _valid(self):
        built(self.record)
        return self

    def record(self):
        return self.rule(**self.model_dump())


class StopRuleIn(_RuleIn):
    rule: ClassVar[type] = StopRule
    target_rel_width: Annotated[float, Field(gt=0)] = StopRule.target_rel_width
    min_blocks: int = StopRule.min_blocks
    max_blocks: int = StopRule.max_blocks
    alpha: float = StopRule.alpha
    precise: list[Name] = []


class FastRoundsIn(_RuleIn):
    rule: ClassVar[type] = FastRounds
    metric: Name
    fastest: typing.Literal["min", "max"] = FastRounds.fastest
    count: Annotated[int, Field(ge=1, le=1000)] = FastRounds.count
    max_iterations: Annotated[int, Field(ge=1, le=1000)] = FastRounds.max_iterations


class TimedRoundsIn(_RuleIn):
    rule: ClassVar[type] = TimedRounds
    seconds: Annotated[float, Field(gt=0, le=3600)]
    max_iterations: Annotated[int, Field(ge=2, le=1000)] = TimedRounds.max_iterations


def _off_is_none(value: Any) -> Any:
    return None if value is False else value


class DesignIn(Model):
    """Design fields a file sets; unset ones keep the base (the defaults, or the file's own design
    under a profile). Bounds keep a typo from planning a run of years."""

    repetitions: Annotated[int, Field(ge=1, le=1000)] | None = None
    warmup: Annotated[int, Field(ge=0, le=100)] | None = None
    iterations: Annotated[int, Field(ge=1, le=1000)] | None = None
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = None
    fresh_datadir: bool | None = None
    max_attempts: Annotated[int, Field(ge=1, le=10)] | None = None
    target: Name | None = None
    sequential: Annotated[StopRuleIn | None, BeforeValidator(_off_is_none)] = None
    side_by_side: bool | None = None
    starts_per_block: Annotated[int, Field(ge=1, le=4)] | None = None
    place_binary: bool | None = None
    fast_rounds: Annotated[FastRoundsIn | None, BeforeValidator(_off_is_none)] = None
    timed_rounds: Annotated[TimedRoundsIn | None, BeforeValidator(_off_is_none)] = None
    cpus: Annotated[list[Annotated[int, Field(ge=0, le=4095)]], Field(min_length=1)] | None = None

    def applied(self, base: Design, targets: dict, source: str, where: str) -> Design:
        rules = ("sequential", "fast_rounds", "timed_rounds")
        values = {k: v for k, v in self.model_dump(exclude_unset=True).items() if k not in rules}
        for name in rules:
            if name in self.model_fields_set:
                rule = getattr(self, name)
                values[name] = rule.record() if rule else None
        if self.target is not None and self.target not in targets:
            raise ConfigError(source, f"{where}.target", f"no target named {show(self.target)}")
        if values.get("cpus") is not None:
            if len(set(values["cpus"])) != len(values["cpus"]):
                raise ConfigError(source, f"{where}.cpus", f"{values['cpus']} names a vCPU twice")
            values["cpus"] = tuple(sorted(values["cpus"]))
        design = replace(base, **values)
        k = design.starts_per_block
        rule = design.sequential
        if k > 1 and rule is not None:
            # the rule counts server starts (the analysis' blocks); the runner looks after whole blocks of k
            for name in ("min_blocks", "max_blocks"):
                if getattr(rule, name) % k:
                    raise ConfigError(source, f"{where}.sequential.{name}",
                                      f"{getattr(rule, name)} server starts do not fill blocks of {k} "
                                      f"(starts_per_block); use a multiple of {k}")
        for name in ("fast_rounds", "timed_rounds"):
            rounds = getattr(design, name)
            if rounds is not None and rounds.max_iterations <= design.iterations:
                raise ConfigError(source, f"{where}.{name}.max_iterations",
                                  f"{rounds.max_iterations} adds no round to {design.iterations} iterations; "
                                  f"set it above `iterations`, or {name} off")
        if design.repetitions % k:
            raise ConfigError(source, f"{where}.repetitions",
                              f"{design.repetitions} server starts do not fill blocks of {k} "
                              f"(starts_per_block); use a multiple of {k}")
        return design


def _empty_level(value: Any) -> Any:
    return {} if value is None else value


class LevelIn(Model):
    target: Name | None = None
    server: ServerOptionsIn = ServerOptionsIn()
    workloads: dict[Name, dict[str, Any]] = {}


class ProfileIn(Model):
    design: DesignIn = DesignIn()
    workloads: dict[Name, dict[str, Any]] = {}
    measure: list[Name] | None = None          # the workloads this profile runs (default: all)
    design_for: dict[Name, DesignIn] = {}      # per default target, over `design`
    levels: dict[Name, list[Annotated[str, BeforeValidator(number_text)]]] = {}


class ProfilesIn(Model):
    unknown: ClassVar[str] = "unknown profile"
    smoke: ProfileIn | None = None
    quick: ProfileIn | None = None
    full: ProfileIn | None = None


class ParamsFile(Model):
    claim: Text
    description: str = ""
    targets: dict[Name, dict[str, Any]]
    workloads: dict[Name, dict[str, Any]]
    factors: dict[Name, dict[LevelName, Annotated[LevelIn, BeforeValidator(_empty_level)]]] = {}
    design: DesignIn = DesignIn()
    levels_for: dict[Name, dict[Name, list[Annotated[str, BeforeValidator(number_text)]]]] = {}
    profiles: ProfilesIn = ProfilesIn()

    @model_validator(mode="after")
    def _valid(self):
        for key in ("targets", "workloads"):
            if not getattr(self, key):
                raise fail(f"declare at least one {key[:-1]}", key)
        for name, levels in self.factors.items():
            if name in RESERVED_COLUMNS:
                raise fail(f"{show(name)} is a results column; name the factor otherwise", f"factors.{name}")
            if not levels:
                raise fail("a factor needs at least one level", f"factors.{name}")
        return self


def load(path: str | Path, profile: str = "quick") -> Experiment:
    path = Path(path)
    source = str(path)
    if profile not in PROFILES:
        raise ConfigError(source, "profile", f"must be one of {', '.join(PROFILES)}; got {show(profile)}")
    document = read_yaml(path)
    doc = validate(ParamsFile, document, source)
    name = check_name(path.stem, source, "(file name)")
    targets = {tname: target(tname, tdata, source, f"targets.{tname}") for tname, tdata in doc.targets.items()}
    workloads = {wname: workload(wname, wdata, source, f"workloads.{wname}")
                 for wname, wdata in doc.workloads.items()}
    factors = [_factor(fname, levels, targets, workloads, source) for fname, levels in doc.factors.items()]
    design = doc.design.applied(Design(), targets, source, "design")
    prof = getattr(doc.profiles, profile)
    target_designs = {}
    if prof is not None:
        where = f"profiles.{profile}"
        design = prof.design.applied(design, targets, source, f"{where}.design")
        for wname, overrides in prof.workloads.items():
            if wname not in workloads:
                raise ConfigError(source, f"{where}.workloads.{wname}", "no such workload")
            workloads[wname] = with_overrides(workloads[wname], overrides, source, f"{where}.workloads.{wname}")
        factors = _restrict_levels(prof.levels, factors, source, f"{where}.levels")
        if prof.measure is not None:
            workloads = _restrict_workloads(prof.measure, workloads, source, f"{where}.measure")
        for tname, over in prof.design_for.items():
            at = f"{where}.design_for.{tname}"
            if tname not in targets:
                raise ConfigError(source, at, f"no target named {show(tname)}")
            if over.target is not None:
                raise ConfigError(source, f"{at}.target", "a target's own design cannot pick another target")
            target_designs[tname] = over.applied(design, targets, source, at)
    overridden = set(target_designs)
    target_designs = {tname: target_designs.get(tname, design) for tname in targets}
    # every target's factors, so that binding another default target never keeps a restriction
    target_factors = {tname: tuple(factors) for tname in targets}
    for tname, keep in doc.levels_for.items():
        at = f"levels_for.{tname}"
        if tname not in targets:
            raise ConfigError(source, at, f"no target named {show(tname)}")
        declared = [_factor(f, levels, targets, workloads, source) for f, levels in doc.factors.items()]
        _restrict_levels(keep, declared, source, at)     # every name declared (a profile may drop some)
        kept = _restrict_levels({f: [lv for lv in names if any(x.name == lv for fac in factors
                                                                 if fac.name == f for x in fac.levels)]
                                 for f, names in keep.items()}, factors, source, at)
        if any(not fac.levels for fac in kept):
            raise ConfigError(source, at, f"keeps no level of a factor in profile {profile}")
        target_factors[tname] = tuple(kept)
        overridden.add(tname)
    experiment = Experiment(source=source, name=name, claim=doc.claim, description=doc.description,
                            profile=profile, targets=targets, workloads=tuple(workloads.values()),
                            factors=tuple(factors), design=design, document=document,
                            target_designs=target_designs, target_factors=target_factors)
    if experiment.default_target in overridden:
        experiment = with_default_target(experiment, experiment.default_target, source)
    return experiment   # combinations of levels are checked by design.conditions (validate, run)


def with_default_target(exp: Experiment, name: str, source: str) -> Experiment:
    """The experiment with `name` as the target of every condition that picks none, and the
    profile's design for that target (`design_for`) if it declares one."""
    if name not in exp.targets:
        raise ConfigError(source, "", f"{exp.source} declares no target {name!r} "
                                      f"(it has: {', '.join(exp.targets)})")
    return replace(exp, design=replace(exp.target_designs.get(name, exp.design), target=name),
                   factors=exp.target_factors.get(name, exp.factors))


def _factor(name: str, levels: dict[str, LevelIn], targets: dict, workloads: dict, source: str) -> Factor:
    out = []
    for lname, level in levels.items():
        where = f"factors.{name}.{lname}"
        if level.target is not None and level.target not in targets:
            raise ConfigError(source, f"{where}.target", f"no target named {show(level.target)}")
        overrides = []
        for wname, values in level.workloads.items():
            if wname not in workloads:
                raise ConfigError(source, f"{where}.workloads.{wname}", "no such workload")
            with_overrides(workloads[wname], values, source, f"{where}.workloads.{wname}")   # validate now
            overrides.append((wname, tuple(sorted(values.items()))))
        out.append(Level(lname, level.target, level.server.record(), tuple(overrides)))
    return Factor(name, tuple(out))


def _restrict_workloads(keep: list[str], workloads: dict, source: str, where: str) -> dict:
    for wname in keep:
        if wname not in workloads:
            raise ConfigError(source, where, f"no workload named {show(wname)}")
    if not keep:
        raise ConfigError(source, where, "a profile must measure at least one workload")
    return {wname: w for wname, w in workloads.items() if wname in keep}


def _restrict_levels(keep: dict[str, list[str]], factors: list[Factor], source: str, where: str) -> list[Factor]:
    by_name = {fac.name: fac for fac in factors}
    for fname, names in keep.items():
        if fname not in by_name:
            raise ConfigError(source, f"{where}.{fname}", "no such factor")
        known = {lv.name for lv in by_name[fname].levels}
        for lname in names:
            if lname not in known:
                raise ConfigError(source, f"{where}.{fname}", f"no level named {show(lname)}")
        by_name[fname] = Factor(fname, tuple(lv for lv in by_name[fname].levels if lv.name in names))
    return [by_name[fac.name] for fac in factors]


def find(name_or_path: str, params_dir: Path | None = None, what: str = "params file") -> Path:
    """`binlog_default` or `params/binlog_default.yaml`: the same file. An unknown name lists the
    names there are."""
    path = Path(name_or_path)
    if path.exists() and not path.is_file() and not path.is_dir():
        raise ConfigError(str(path), "", f"is not a regular file (a FIFO, socket or device); name a {what}")
    if path.is_dir():   # else read as a name: "params/params.yaml: no such params file"
        held = sorted(p.name for p in path.glob("*.yaml"))
        raise ConfigError(str(path), "", f"is a folder, not a {what}; name "
                          + (f"one of its files ({', '.join(held)})" if held else f"a {what} (it holds none)"))
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(str(path), "", f"no such {what}")
        return path
    directory = params_dir or Path("params")
    candidate = directory / f"{name_or_path}.yaml"
    if not candidate.is_file():
        there = sorted(p.stem for p in directory.glob("*.yaml"))
        listed = f" (there are: {', '.join(there)})" if there else f" ({directory} holds none)"
        raise ConfigError(str(candidate), "", f"no such {what}{listed}")
    return candidate
