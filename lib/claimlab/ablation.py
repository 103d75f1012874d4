"""Ablation: which settings explain why one configuration is slower than another.

Given a slow and a fast option set on one target and a workload, every option that differs is
switched to the fast side's value one at a time (what each option does alone), and cumulatively in
a chosen order (a waterfall from slow to fast whose steps add up to the whole gap). All of these
configurations are conditions of one ordinary claimlab experiment (factor `step`), so they run in
randomized complete blocks on fresh server processes, with every measurement stored like any run.

What each option explains is read from the stored run by `attribution`: in log space, the share
of an option is log(after / before) / log(fast / slow), so cumulative shares sum to exactly 1.
Intervals are `stats.ratio_interval` for ratios and, for shares, an expanded percentile bootstrap
over the same hierarchical resampling (`stats.share_interval`).

An ablation file (params/ablation/NAME.yaml):

    description: ...
    targets: {mariadb: {kind: mariadb}, mysql: {kind: mysql-debian}}   # servers.TargetSpec; one is
                                                  # chosen per run (default the first); its options stay fixed
    workloads: {insert_loop: {kind: proc_insert_loop, rows: 1000}}   # exactly one
    slow: {log_bin: true, sync_binlog: 1}         # servers.ServerOptions; unset = server default
    fast: {log_bin: false}
    order: [log_bin, sync_binlog]                 # cumulative order (default: as listed)
    metric: elapsed_s
    design: {repetitions: 4, warmup: 1, iterations: 3, seed: 1}
    profiles: {smoke: {design: {...}, workload: {rows: 100}}}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import model_validator

from . import params as params_mod
from . import workloads as wl
from .errors import ConfigError, DataError
from .params import Design, Experiment, Factor, Level
from .schema import LEVEL_RE, NAME_RE, Model, Name, check_name, fail, read_yaml, show, validate
from .servers import ServerOptions, TargetSpec
from .target_params import ServerOptionsIn
from .target_params import target as target_spec

FACTOR = "step"
OPTION_FIELDS = tuple(name for name in ServerOptions.__dataclass_fields__ if name != "extra")


def option_values(options: ServerOptions) -> dict[str, Any]:
    """Every option a set pins, typed fields and `extra` alike (absent = the server's default)."""
    return {k: v for k, v in options.as_dict().items() if k != "extra"} | dict(options.extra)


def toggles(slow: ServerOptions, fast: ServerOptions) -> tuple[str, ...]:
    """The options whose value differs between the two sets, in a stable order."""
    a, b = option_values(slow), option_values(fast)
    return tuple(sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))


def switched(slow: ServerOptions, fast: ServerOptions, names) -> ServerOptions:
    """`slow` with the named options set to `fast`'s values (unset on the fast side = unset)."""
    values = {name: getattr(slow, name) for name in OPTION_FIELDS}
    extra, fast_extra = dict(slow.extra), dict(fast.extra)
    for name in names:
        if name in OPTION_FIELDS:
            values[name] = getattr(fast, name)
        elif name in fast_extra:
            extra[name] = fast_extra[name]
        else:
            extra.pop(name, None)
    return ServerOptions(**values, extra=tuple(sorted(extra.items())))


@dataclass(frozen=True)
class Step:
    """One configuration of the ablation and the condition (level of `step`) that measures it."""

    name: str                 # slow | fast | only-<option> | upto-<option>
    kind: str                 # slow | fast | one | cumulative
    switched: tuple[str, ...]
    options: ServerOptions
    condition: str            # the level that runs these options (equal sets run once)


@dataclass(frozen=True)
class Ablation:
    name: str
    target: TargetSpec
    workload: wl.Workload
    slow: ServerOptions
    fast: ServerOptions
    order: tuple[str, ...] = ()
    metric: str = "elapsed_s"
    design: Design = Design()
    source: str = "(ablation)"
    description: str = ""
    profile: str = "quick"
    document: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not NAME_RE.match(self.name):
            raise ValueError(f"name: {self.name!r} is not a valid name")
        if not self.target.local:
            raise ValueError("target: an ablation reconfigures its server; an external target cannot be")
        diff = toggles(self.slow, self.fast)
        if not diff:
            raise ValueError("fast: the slow and fast option sets are the same; nothing to ablate")
        pinned = set(diff) & set(option_values(self.target.options))
        if pinned:
            raise ValueError(f"target: its options pin {sorted(pinned)[0]}, which the ablation switches; "
                             "move it to slow/fast")
        unknown = [o for o in self.order if o not in diff]
        if unknown:
            raise ValueError(f"order: {unknown[0]!r} does not differ between slow and fast "
                             f"(differences: {', '.join(diff)})")
        if len(set(self.order)) != len(self.order):
            raise ValueError("order: lists an option twice")
        object.__setattr__(self, "order", tuple(self.order) + tuple(o for o in diff if o not in self.order))
        if self.design.repetitions < 2:
            raise ValueError("design.repetitions: intervals need two or more server restarts per step")
        for step in self.steps():
            if not LEVEL_RE.match(step.name):
                raise ValueError(f"order: option name {step.switched[-1]!r} is too long for a step name")

    def steps(self) -> list[Step]:
        """slow, one step per option alone, the cumulative path in `order`, fast; equal option
        sets share one condition (the first cumulative step is the first option alone)."""
        planned = [("slow", "slow", ())]
        planned += [(f"only-{o}", "one", (o,)) for o in self.order]
        planned += [(f"upto-{o}", "cumulative", self.order[: i + 1]) for i, o in enumerate(self.order)]
        planned.append(("fast", "fast", self.order))
        by_key: dict[str, str] = {}
        out = []
        for kind_first in ("slow", "fast", "one", "cumulative"):
            for name, kind, names in planned:
                if kind != kind_first:
                    continue
                options = self.fast if kind == "fast" else switched(self.slow, self.fast, names)
                condition = by_key.setdefault(options.key(), name)
                out.append(Step(name, kind, tuple(names), options, condition))
        return out

    def conditions(self) -> dict[str, ServerOptions]:
        return {s.condition: s.options for s in self.steps() if s.condition == s.name}

    def experiment(self) -> Experiment:
        """The ablation as an ordinary experiment: one factor whose levels are the configurations."""
        levels = tuple(Level(name, None, options, ()) for name, options in self.conditions().items())
        return Experiment(source=self.source, name=self.name, claim="ablation",
                          description=self.description, profile=self.profile,
                          targets={self.target.name: self.target}, workloads=(self.workload,),
                          factors=(Factor(FACTOR, levels),), design=self.design,
                          document=self.document or {"ablation": self.name})


class _AblationProfile(Model):
    design: params_mod.DesignIn = params_mod.DesignIn()
    workload: dict[str, Any] = {}


class _AblationProfiles(params_mod.ProfilesIn):
    smoke: _AblationProfile | None = None
    quick: _AblationProfile | None = None
    full: _AblationProfile | None = None


class AblationFile(Model):
    description: str = ""
    targets: dict[Name, dict[str, Any]] = {"mariadb": {"kind": "mariadb"}}
    workloads: dict[Name, dict[str, Any]]
    slow: ServerOptionsIn
    fast: ServerOptionsIn
    order: list[str] = []
    metric: Name = "elapsed_s"
    design: params_mod.DesignIn = params_mod.DesignIn()
    profiles: _AblationProfiles = _AblationProfiles()

    @model_validator(mode="after")
    def _one_workload(self):
        if len(self.workloads) != 1:
            raise fail("an ablation measures exactly one workload", "workloads")
        return self


def load(path: str | Path, profile: str = "quick", target_name: str | None = None) -> Ablation:
    """An ablation file, validated: unknown keys and impossible plans are errors naming the field.
    `target_name` picks one of its targets (default: the first)."""
    path = Path(path)
    source = str(path)
    if profile not in params_mod.PROFILES:
        raise ConfigError(source, "profile", f"must be one of {', '.join(params_mod.PROFILES)}")
    return _of_document(read_yaml(path), check_name(path.stem, source, "(file name)"), source, profile, target_name)


def of_run(run_dir: Path) -> Ablation:
    """The ablation a stored run measured, from its manifest (the file's document, profile and
    target as they were), so that a later edit of the file cannot mislabel an old run's steps."""
    from .store import read_manifest
    m = read_manifest(run_dir)
    source = f"{run_dir.name} ({m.get('params_file') or 'manifest'})"
    if m.get("claim") != "ablation" or not isinstance(m.get("params"), dict):
        raise DataError(f"{run_dir}: run of {m.get('experiment')!r} is not an ablation run")
    return _of_document(m["params"], check_name(m["experiment"], source, "experiment"), source, m["profile"],
                        m.get("default_target"))


def _of_document(document: dict, name: str, source: str, profile: str, target_name: str | None) -> Ablation:
    doc = validate(AblationFile, document, source)
    targets = {tname: target_spec(tname, tdata, source, f"targets.{tname}")
               for tname, tdata in doc.targets.items()}
    if target_name is not None and target_name not in targets:
        raise ConfigError(source, "targets", f"no target named {show(target_name)} (it has: {', '.join(targets)})")
    target = targets[target_name or next(iter(targets))]
    (wname, wdata), = doc.workloads.items()
    workload = params_mod.workload(wname, wdata, source, f"workloads.{wname}")
    targets = {target.name: target}   # the one this ablation runs on
    design = doc.design.applied(Design(), targets, source, "design")
    prof = getattr(doc.profiles, profile)
    if prof is not None:
        design = prof.design.applied(design, targets, source, f"profiles.{profile}.design")
        if prof.workload:
            workload = params_mod.with_overrides(workload, prof.workload, source, f"profiles.{profile}.workload")
    try:
        return Ablation(name=name, target=target, workload=workload, slow=doc.slow.record(),
                        fast=doc.fast.record(), order=tuple(doc.order), metric=doc.metric, design=design,
                        source=source, description=doc.description, profile=profile, document=document)
    except ValueError as exc:
        field_name, _, message = str(exc).partition(": ")
        raise ConfigError(source, field_name, message) from None


def find(name_or_path: str, root: Path | None = None) -> Path:
    """`binlog_hunt` or a path: files live in params/ablation/."""
    return params_mod.find(name_or_path, (root or Path("params")) / "ablation", "ablation file")


def condition_id(step: str) -> str:
    """The stored condition of a step (`slow` -> `step=slow`), as in results.csv and servers.jsonl."""
    return f"{FACTOR}={step}"


def run(ablation: Ablation, *, data_root: Path | None = None, work_root: Path | None = None,
        progress: bool = False):
    """Measure every configuration (runner.run; runs/<name>/<run-id>/ like any run)."""
    from . import runner
    exp = ablation.experiment()   # a fixed design: ablations declare no sequential rule
    return runner.run(exp, data_root=data_root, work_root=work_root, progress=progress)


def stored_run(ablation: Ablation, run_id: str | None = None, *, data_root: Path | None = None) -> Path:
    """The run an investigation reads: `run_id` if given, else the newest complete stored run of
    this ablation. Notebooks read stored runs only: measuring is `claimlab ablate`'s."""
    from .store import find_run
    if run_id:
        return find_run(run_id, data_root)
    newest = newest_run(ablation.name, data_root)
    if newest is None:
        raise DataError(f"no complete stored run of ablation {ablation.name!r}: run `claimlab ablate "
                        f"{ablation.name}` first")
    return newest


def newest_run(name: str, data_root: Path | None = None) -> Path | None:
    """The newest complete stored run of the ablation `name` (under `data_root`, else runs/ then
    data/raw), None when there is none: a report then says it was not run."""
    from .store import list_runs
    stored = [r for r in list_runs(data_root) if r["experiment"] == name and r["status"] == "complete"]
    return Path(max(stored, key=lambda r: r["created_at"] or "")["path"]) if stored else None
