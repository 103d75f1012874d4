"""The run phase of `claimlab report`: every claim measured on every chosen target, in the
command's own process, before any notebook runs.

Measuring apart from reporting (as pyperf runs, stores and compares apart): a run started here is
stopped here, so an interrupt (Ctrl-C, SIGTERM) stops its servers through the runner's own
clean-up, with no notebook kernel in between to pass the signal on to; the render phase
(`report.render`) then reads stored run ids only and never starts a server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from . import params as params_mod
from .errors import ClaimlabError, DataError, Interrupted
from .report import CLAIM_ABLATIONS, INVESTIGATIONS, NOTEBOOKS, published_runs
from .store import list_runs, project_root


@dataclass
class Runs:
    """What the render phase reads: run ids per claim experiment, the ablation run of each
    investigation (None: none stored and none made, the investigation is left out), and of each
    claim report's own ablation (report.CLAIM_ABLATIONS; None: the report says it was not run)."""

    claims: dict[str, list[str]] = field(default_factory=dict)
    investigations: dict[str, str | None] = field(default_factory=dict)
    ablations: dict[str, str | None] = field(default_factory=dict)

    def all_ids(self) -> list[str]:
        return [run_id for ids in self.claims.values() for run_id in ids]


@dataclass(frozen=True)
class Step:
    """One run to make: an experiment bound to one target (or an investigation's ablation)."""

    experiment: str
    target: str
    exp: object               # params.Experiment or ablation.Ablation
    investigation: str = ""   # the investigation's name when this step runs its ablation


def plan(experiments: Iterable[str] | None, profile: str, targets: Iterable[str], *,
         data_dir: Path | None = None, investigations: bool = True, log=print) -> list[Step]:
    """Every run the campaign will make, before any server starts: targets that cannot run here
    are logged with the reason and left out; an unknown experiment or target is an error now,
    not after minutes of measuring."""
    root = project_root()
    names = _only(experiments)
    targets = list(targets)
    exps = {name: params_mod.load(params_mod.find(name, root / "params"), profile) for name in names}
    check_targets(exps, targets)
    steps = [Step(name, one.default_target, one) for name, exp in exps.items()
             for one in per_target(name, exp, targets, log)]
    if investigations and experiments is None:
        from . import ablation
        for name, (_, ablation_name) in INVESTIGATIONS.items():
            # An investigation runs many configurations: a full campaign runs it anew; a shorter
            # one re-analyses its newest stored run (the shipped one in a clone), and runs it at
            # the smoke size only where none is stored.
            if profile == "full" or not _stored_ablation(ablation_name, data_dir):
                size = profile if profile == "full" else "smoke"
                abl = ablation.load(ablation.find(ablation_name, root / "params"), size)
                steps.append(Step(ablation_name, abl.target.name, abl, investigation=name))
    return steps


def measure(experiments: Iterable[str] | None = None, *, profile: str = "quick",
            targets: Iterable[str] = params_mod.REPORT_TARGETS, data_dir: Path | None = None,
            cpu_evidence: bool = False, investigations: bool = True, progress: bool = True,
            log=print) -> Runs:
    """Run every step of `plan` in turn and return the run ids to render. Progress goes to
    `log`, one line per run with the time left estimated from the runs so far; CPU evidence
    (perf, callgrind: minutes a server) is collected here after each run when `cpu_evidence`.
    An interrupt stops the current run's servers (the runner's clean-up) and raises Interrupted
    with `resume`: the command that finishes the cut run, and the one that renders every run."""
    from . import ablation, evidence, runner
    steps = plan(experiments, profile, targets, data_dir=data_dir, investigations=investigations, log=log)
    claim_steps = [s for s in steps if not s.investigation]
    if not claim_steps:
        raise ClaimlabError(f"none of the targets {', '.join(targets)} can run here")
    began = time.monotonic()
    try:
        made = [p for p in preload_all(claim_steps, log) if not p.found]
    except (Interrupted, KeyboardInterrupt) as exc:
        out = Interrupted(str(exc) or "interrupted")
        out.advice = ("no run had started: nothing was measured (the tables finished loading stay in the "
                      "cache); run the same command again",)
        raise out from exc
    if made:
        from .preload import summary
        log(f"set-up: loaded the tables in {time.monotonic() - began:.0f} s: {summary(made)}")
    runs = Runs(claims={s.experiment: [] for s in claim_steps},
                ablations=_claim_ablations({s.experiment for s in claim_steps}, data_dir))
    for name, (_, ablation_name) in INVESTIGATIONS.items():
        if investigations and experiments is None:
            runs.investigations[name] = _newest_ablation(ablation_name, data_dir)
    durations: list[float] = []
    for i, step in enumerate(steps, start=1):
        log(f"run {i} of {len(steps)}: {step.experiment} on {step.target} ({step.exp.profile} profile)"
            + _eta(durations, len(steps) - i + 1))
        started, since = time.monotonic(), _now()
        try:
            if step.investigation:
                outcome = ablation.run(step.exp, data_root=data_dir, progress=progress)
                runs.investigations[step.investigation] = outcome.run_id
            else:
                outcome = runner.run(step.exp, data_root=data_dir, progress=progress,
                                     should_stop=should_stop(step.exp))
                runs.claims[step.experiment].append(outcome.run_id)
            if cpu_evidence:
                for run_dir in evidence.missing([outcome.path]):
                    log(f"{step.experiment} on {step.target}: collecting CPU evidence (perf, callgrind)")
                    evidence.collect(step.experiment, run_dir)
        except (Interrupted, KeyboardInterrupt) as exc:
            cut = getattr(exc, "run_id", None) or _cut_run(step.experiment, data_dir, since)
            raise _interrupted(exc, step, cut, runs, data_dir) from exc
        durations.append(time.monotonic() - started)
        log(f"{step.experiment} on {step.target}: run {outcome.run_id} done in {durations[-1]:.0f} s")
    return runs


def preload_all(steps: list[Step], log=print) -> list:
    """Every claim step's tables loaded into the data-directory cache before the first run:
    set-up, done once per machine and timed apart from the runs (`claimlab.preload`)."""
    from .preload import preload
    done = []
    for step in steps:
        done += preload(step.exp, log=log)
    return done


def stored(run_ids: list[str] | None, data_dir: Path | None = None,
           experiments: Iterable[str] | None = None) -> Runs:
    """The runs a render with no run phase reads (`claimlab report --from-data [RUN_ID ...]`):
    the named runs grouped by experiment, or the published runs of data/published_runs.json;
    investigations read their newest stored ablation run."""
    from .store import find_run, read_manifest
    wanted = set(_only(experiments))
    runs = Runs()
    if run_ids:
        for given in run_ids:
            path = find_run(given, data_dir)
            run_id = _by_id(given, path, data_dir)
            _check_verified(path)
            experiment = read_manifest(path)["experiment"]
            if experiment not in NOTEBOOKS:
                raise ClaimlabError(f"--from-data: {run_id} is a run of {experiment!r}, which has no claim "
                                    f"report (the reports are of: {', '.join(NOTEBOOKS)})")
            if experiment not in wanted:   # rendering it anyway would ignore --only without a word
                raise ClaimlabError(f"--from-data: {run_id} is a run of {experiment!r}, which --only leaves "
                                    f"out (--only {' '.join(sorted(wanted))}); name its runs or drop one of the two")
            runs.claims.setdefault(experiment, []).append(run_id)
    else:
        shipped = published_runs()
        runs.claims = {name: ids for name, ids in shipped.items() if name in wanted}
        for run_id in (i for ids in runs.claims.values() for i in ids):
            _check_verified(find_run(run_id, data_dir))
    if experiments is None:
        runs.investigations = {name: _newest_ablation(ablation_name, data_dir)
                               for name, (_, ablation_name) in INVESTIGATIONS.items()}
    runs.ablations = _claim_ablations(runs.claims, data_dir)
    return runs


def _by_id(given: str, path: Path, data_dir: Path | None) -> str:
    """A run named by its folder is passed on by id, as the notebooks take runs: found by that id
    where the render looks (--data, else runs/ and data/raw), or refused in one line."""
    from .store import find_run
    if given == path.name:
        return given
    try:
        same = find_run(path.name, data_dir).resolve() == path.resolve()
    except DataError:
        same = False
    if not same:
        raise ClaimlabError(f"--from-data {given}: reports read runs by id from one store; this run lies "
                            f"outside {data_dir or 'runs/ and data/raw'}: add --data {path.parent.parent}")
    return path.name


def _only(experiments: Iterable[str] | None) -> list[str]:
    names = list(experiments or NOTEBOOKS)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown:
        raise ClaimlabError(f"--only: no claim report for {', '.join(map(repr, unknown))}; "
                            f"the experiments are: {', '.join(NOTEBOOKS)}")
    return names


def _check_verified(path: Path) -> None:
    """A run edited after it ended is refused before any notebook starts: inside one it was a
    notebook's traceback, advising an option `report` does not have."""
    from .store import run_state
    state = run_state(path)
    if state.refused:
        raise DataError(f"--from-data: {path}: {state.note}; the reports render verified runs only "
                        f"(`claimlab analyze {path.name} --accept-modified` reads it)")


def _claim_ablations(experiments: Iterable[str], data_dir: Path | None) -> dict[str, str | None]:
    """The newest stored run of each rendered claim's own ablation: a claim report shows it, and
    measuring it is `claimlab ablate`'s (C3's toggles restart MySQL 8.0.40 thirty times at the
    smoke size, more than a quick report can spend)."""
    return {name: _newest_ablation(CLAIM_ABLATIONS[name], data_dir) for name in experiments if name in CLAIM_ABLATIONS}


def _eta(durations: list[float], left: int) -> str:
    """The time the runs left should take, from the mean of the runs so far (runs of one
    campaign differ by minutes, so this is a rough figure and is said to be one)."""
    if not durations:
        return ""
    seconds = sum(durations) / len(durations) * left
    return f"; about {_minutes(seconds)} left"


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _now() -> str:
    from .records import now
    return now()


def _stored_ablation(ablation_name: str, data_dir: Path | None) -> bool:
    return _newest_ablation(ablation_name, data_dir) is not None


def _newest_ablation(ablation_name: str, data_dir: Path | None) -> str | None:
    """The newest complete stored run of an ablation where the notebooks will look."""
    from .ablation import newest_run
    newest = newest_run(ablation_name, data_dir)
    return newest.name if newest else None


def _cut_run(experiment: str, data_dir: Path | None, since: str) -> str | None:
    """The run of `experiment` a signal cut short, made since `since` (an interrupt can land
    before the runner names its run on the exception)."""
    from .store import runs_root
    cut = [r for r in list_runs(data_dir or runs_root())
           if r["experiment"] == experiment and r["status"] == "interrupted" and (r["created_at"] or "") >= since]
    return max(cut, key=lambda r: r["created_at"] or "")["run_id"] if cut else None


def _interrupted(exc: BaseException, step: Step, cut: str | None, runs: Runs, data_dir: Path | None) -> Interrupted:
    """The campaign's Interrupted, its `advice` what stands and what to type next; the cut run's
    own id is not set on it, so the command prints these exact commands rather than its generic
    hint."""
    data = f" --data {data_dir}" if data_dir else ""
    out = Interrupted(str(exc) or "interrupted")
    done = (f"the runs before it are complete: render them with: claimlab report --from-data "
            f"{' '.join(runs.all_ids())}{data}") if runs.all_ids() else "nothing was measured before it"
    if step.investigation:               # an ablation cannot be resumed: a new report runs it again
        out.advice = (f"the {step.investigation} investigation was cut (the next claimlab report runs it "
                      f"again); {done}",)
    elif cut:
        render = f"claimlab report --from-data {' '.join([*runs.all_ids(), cut])}{data}"
        out.advice = (f"{cut} keeps what was measured; resume with: claimlab run {step.experiment} --profile "
                      f"{step.exp.profile} --target {step.target}{data} --resume {cut} && {render}",)
    else:                                # cut before its run stored anything
        out.advice = (f"{step.experiment} on {step.target} had not started measuring; {done}",)
    return out


def chosen_targets(exp: params_mod.Experiment, targets: Iterable[str]) -> list[str]:
    """The targets of `targets` that `exp` declares, or its default when it declares none of
    them (a params file of your own may name other targets). A target a factor's level names is
    a level of the design, measured in the runs on the others, not a server to run it all on."""
    pinned = {lv.target for factors in (exp.factors, *exp.target_factors.values())
              for fac in factors for lv in fac.levels if lv.target}
    return [t for t in targets if t in exp.targets and t not in pinned] or [exp.default_target]


def check_targets(exps: dict[str, params_mod.Experiment], targets: Iterable[str], option: str = "--targets") -> None:
    """A target that no params file declares is a mistyped name, not a request for the files'
    defaults (which a build would otherwise run while saying it ran the name asked for)."""
    declared = sorted({t for exp in exps.values() for t in exp.targets})
    unknown = [t for t in targets if t not in declared]
    if unknown:
        raise ClaimlabError(f"{option}: no params file ({', '.join(sorted(exps))}) declares "
                            f"{' or '.join(map(repr, unknown))}; they declare: {', '.join(declared)}")


def per_target(experiment: str, exp: params_mod.Experiment, targets: Iterable[str], log=print):
    """`exp` bound to each of its `chosen_targets` that can run here, in turn; the others are
    logged with the reason."""
    from .servers import check_available
    for target in chosen_targets(exp, targets):
        try:
            check_available(exp.targets[target])
        except Interrupted:   # a signal while `--version` ran is the user's, not the target's
            raise
        except ClaimlabError as exc:
            log(f"{experiment}: target {target} not run: {exc}")
            continue
        yield params_mod.with_default_target(exp, target, experiment)


def should_stop(exp):
    """`stats.stopping_for` of the claim `exp` tests, read from data/claims.yaml (None for a fixed
    design, whose statistics then need not load): what every command that runs an experiment
    hands the runner."""
    if exp.design.sequential is None:
        return None
    from . import stats
    from .claims import load_claims
    from .store import project_root
    return stats.stopping_for(exp, load_claims(project_root() / "data" / "claims.yaml")[exp.claim])
