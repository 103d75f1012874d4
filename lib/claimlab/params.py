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
    profiles:                      # smoke | quick | full override design, workloads and levels
      smoke: {design: {repetitions: 2}, workloads: {insert_loop: {rows: 100}}}

The experiment's name is the file's stem. Unknown keys anywhere are errors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from . import workloads as wl
from .errors import ConfigError
from .schema import LEVEL_RE, NAME_RE, Fields, check_name
from .servers import ServerOptions, TargetSpec
from .stopping import StopRule

PROFILES = ("smoke", "quick", "full")
_DESIGN_KEYS = ("repetitions", "warmup", "iterations", "seed", "fresh_datadir", "max_attempts",
                "sequential", "target")


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

    @property
    def default_target(self) -> str:
        return self.design.target or next(iter(self.targets))


def read_yaml(path: Path) -> Any:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(str(path), where, f"malformed YAML: {problem}") from None


def load(path: str | Path, profile: str = "quick") -> Experiment:
    path = Path(path)
    source = str(path)
    if profile not in PROFILES:
        raise ConfigError(source, "profile", f"must be one of {', '.join(PROFILES)}; got {profile!r}")
    document = read_yaml(path)
    top = Fields(document, source)
    name = check_name(path.stem, source, "(file name)")
    claim = top.require("claim", str)
    description = top.get("description", str, "")

    targets = {}
    for tname, tdata in top.require("targets", dict).items():
        check_name(tname, source, f"targets.{tname}")
        targets[tname] = TargetSpec.from_fields(tname, Fields(tdata, source, f"targets.{tname}"))
    if not targets:
        raise top.error("targets", "declare at least one target")

    workloads = {}
    for wname, wdata in top.require("workloads", dict).items():
        check_name(wname, source, f"workloads.{wname}", NAME_RE)
        workloads[wname] = wl.build(wname, Fields(wdata, source, f"workloads.{wname}"))
    if not workloads:
        raise top.error("workloads", "declare at least one workload")

    factors = [_factor(fname, Fields(fdata, source, f"factors.{fname}"), targets, workloads)
               for fname, fdata in top.get("factors", dict, {}).items()]
    design = design_from_fields(top.sub("design"), Design(), targets)

    profiles = top.sub("profiles")
    for pname in profiles.data:
        if pname not in PROFILES:
            raise profiles.error(pname, f"unknown profile (allowed: {', '.join(PROFILES)})")
    if profiles.has(profile):
        prof = profiles.sub(profile)
        design = design_from_fields(prof.sub("design"), design, targets)
        overrides = prof.sub("workloads")
        for wname in overrides.data:
            if wname not in workloads:
                raise overrides.error(wname, "no such workload")
            workloads[wname] = wl.with_overrides(workloads[wname], overrides.sub(wname))
        factors = _restrict_levels(prof.sub("levels"), factors)
        prof.done()
    profiles.entries()
    top.done()

    experiment = Experiment(source=source, name=name, claim=claim, description=description,
                            profile=profile, targets=targets, workloads=tuple(workloads.values()),
                            factors=tuple(factors), design=design, document=document)
    from .design import conditions  # validates every combination of levels now, not mid-run
    conditions(experiment)
    return experiment


def with_default_target(exp: Experiment, name: str, source: str) -> Experiment:
    """The experiment with `name` as the target of every condition that picks none."""
    if name not in exp.targets:
        raise ConfigError(source, "", f"{exp.source} declares no target {name!r} "
                                      f"(it has: {', '.join(exp.targets)})")
    return replace(exp, design=replace(exp.design, target=name))


def _factor(name: str, f: Fields, targets: dict, workloads: dict) -> Factor:
    check_name(name, f.source, f.path)
    if name in ("target", "workload", "condition", "metric", "value", "unit", "repetition",
                "iteration", "claim", "run_id", "seq"):
        raise ConfigError(f.source, f.path, f"{name!r} is a results column; name the factor otherwise")
    levels = []
    for lname, ldata in f.entries():
        lname = str(lname)
        check_name(lname, f.source, f"{f.path}.{lname}", LEVEL_RE)
        lf = Fields(ldata if ldata is not None else {}, f.source, f"{f.path}.{lname}")
        target = lf.get("target", str)
        if target is not None and target not in targets:
            raise lf.error("target", f"no target named {target!r}")
        server = ServerOptions.from_fields(lf.sub("server"))
        overrides = lf.sub("workloads")
        wo = []
        for wname, _ in overrides.entries():
            if wname not in workloads:
                raise overrides.error(wname, "no such workload")
            sub = overrides.sub(wname)
            wl.with_overrides(workloads[wname], sub)   # validate now
            wo.append((wname, tuple(sorted(sub.data.items()))))
        lf.done()
        levels.append(Level(lname, target, server, tuple(wo)))
    if len(levels) < 1:
        raise ConfigError(f.source, f.path, "a factor needs at least one level")
    return Factor(name, tuple(levels))


def design_from_fields(f: Fields, base: Design, targets: dict) -> Design:
    values = {}
    for key in ("repetitions", "iterations", "max_attempts"):
        if f.has(key):
            values[key] = f.positive_int(key)
    if f.has("warmup"):
        values["warmup"] = f.positive_int("warmup", minimum=0)
    if f.has("seed"):
        values["seed"] = f.positive_int("seed", minimum=0)
    if f.has("fresh_datadir"):
        values["fresh_datadir"] = f.get("fresh_datadir", bool)
    if f.has("target"):
        target = f.get("target", str)
        if target not in targets:
            raise f.error("target", f"no target named {target!r}")
        values["target"] = target
    if f.has("sequential"):
        if f.data["sequential"] in (None, False):
            f.get("sequential", bool)
            values["sequential"] = None
        else:
            s = f.sub("sequential")
            given = {name: s.get(name, (int, float) if field.type == "float" else int)
                     for name, field in StopRule.__dataclass_fields__.items()}
            s.done()
            try:
                values["sequential"] = StopRule(**{k: v for k, v in given.items() if v is not None})
            except ValueError as exc:   # the rule's own checks, e.g. "alpha must lie in (0, 0.5)"
                field = str(exc).split()[0]
                raise (s.error(field, str(exc)) if field in given else f.error("sequential", str(exc))) from None
    f.done()
    return replace(base, **values)


def _restrict_levels(f: Fields, factors: list[Factor]) -> list[Factor]:
    by_name = {fac.name: fac for fac in factors}
    for fname in f.data:
        if fname not in by_name:
            raise f.error(fname, "no such factor")
        keep = f.get(fname, list)
        known = {lv.name for lv in by_name[fname].levels}
        for lname in keep:
            if str(lname) not in known:
                raise f.error(fname, f"no level named {lname!r}")
        by_name[fname] = Factor(fname, tuple(lv for lv in by_name[fname].levels
                                             if lv.name in {str(x) for x in keep}))
    f.done()
    return [by_name[fac.name] for fac in factors]


def find(name_or_path: str, params_dir: Path | None = None, what: str = "params file") -> Path:
    """`binlog_default` or `params/binlog_default.yaml`: the same file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(str(path), "", f"no such {what}")
        return path
    candidate = (params_dir or Path("params")) / f"{name_or_path}.yaml"
    if not candidate.is_file():
        raise ConfigError(str(candidate), "", f"no such {what}")
    return candidate
