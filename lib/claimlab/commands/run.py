"""`claimlab run`: one experiment, every measurement stored as it completes."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import params as params_mod
from ..errors import ClaimlabError
from . import EXIT_ERROR, EXIT_INTERRUPTED, cluster_options, on_cluster

NAME = "run"


def add_parser(sub) -> None:
    r = sub.add_parser(NAME, help="run an experiment and store every measurement",
                       description="Run PARAMS (a name in params/ or a .yaml path). Measurements are "
                                   "appended to runs/<experiment>/<run-id>/ (git-ignored) as they complete.")
    r.add_argument("params", help="experiment name (e.g. binlog_default) or params file path")
    r.add_argument("--profile", default="quick", choices=params_mod.PROFILES,
                   help="smoke: seconds, for tests; quick: minutes (default); full: publication-sized")
    r.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted run without "
                                                      "repeating finished measurements (with --scheduler: "
                                                      "the SESSION id it printed at its start)")
    r.add_argument("--data", type=Path, metavar="DIR", help="where new runs go (default runs/)")
    r.add_argument("--work", type=Path, metavar="DIR", help="scratch space for server data "
                                                            "directories (default work/)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--target", metavar="NAME", help="the target for conditions that pick none "
                                                    "(default: design.target, else the first target)")
    cluster_options(r)


def writes_data(args) -> bool:
    return True


def main(args) -> int:
    from .. import runner
    if on_cluster(args):
        return _run_on_cluster(args)
    exp = params_mod.load(params_mod.find(args.params), args.profile)
    if args.target:   # first: the target may bring a design of its own (`design_for`)
        exp = params_mod.with_default_target(exp, args.target, "--target")
    should_stop = None
    if exp.design.sequential is not None:   # the statistics (scipy, pandas) load only when asked
        from ..campaign import should_stop as stopping
        should_stop = stopping(exp)
    try:
        outcome = runner.run(exp, data_root=args.data, work_root=args.work, resume=args.resume,
                             progress=not args.no_progress and sys.stderr.isatty(),
                             should_stop=should_stop, log=lambda line: print(line, file=sys.stderr))
    except runner.Interrupted as exc:
        run_id = getattr(exc, "run_id", "")
        if not run_id:
            raise
        again = " ".join(["claimlab run", args.params, "--profile", args.profile,
                          *(["--target", args.target] if args.target else []),
                          *(["--data", str(args.data)] if args.data else []),
                          *(["--work", str(args.work)] if args.work else []), "--resume", run_id])
        print(f"claimlab: {exc}; run {run_id} keeps what was measured. Resume with: {again}", file=sys.stderr)
        return EXIT_INTERRUPTED
    for reason in outcome.skipped.values():
        print(f"not run: {reason}")
    total = _stored_measurements(outcome.path)
    session = f" ({outcome.measurements} in this session)" if total != outcome.measurements else ""
    print(f"run {outcome.run_id}: {outcome.status}, {total} measurements stored{session} in {outcome.path}")
    print(f"next: claimlab analyze {outcome.run_id}")
    return 0


def _stored_measurements(path: Path) -> int:
    """Every measurement the run holds (a resumed run's earlier sessions included)."""
    from ..store import read_results
    results = read_results(path, accept_modified=True)
    return results.groupby(["condition", "workload", "repetition", "iteration"]).ngroups if len(results) else 0


def _run_on_cluster(args) -> int:
    from .. import cluster
    if args.work:
        raise ClaimlabError("--work: each worker measures in its own scratch space (CLAIMLAB_WORKER_DIR on "
                            "the worker), so --work does not go with --scheduler or --cluster-file")
    given, name = Path(args.params), args.params
    if given.suffix in (".yaml", ".yml") or len(given.parts) > 1:
        name = given.stem
        from ..store import project_root
        own = project_root() / "params" / f"{given.stem}.yaml"
        if given.resolve() != own.resolve():   # a job names its experiment; the checkout's file was sent
            raise ClaimlabError(f"{args.params}: a cluster job sends an experiment of params/ by name; copy "
                                f"this file to params/ under a name of its own and run that name")
    session = cluster.run(cluster.endpoint(args.scheduler, args.cluster_file), [name],
                          profile=args.profile, targets=[args.target] if args.target else None,
                          data_root=args.data, resume=args.resume, move_after=args.move_after,
                          log=lambda line: print(line, file=sys.stderr))
    for job, path in session.stored.items():
        print(f"run {path.name}: {job.experiment} on {job.target}, host {job.host}, stored in {path}")
    if session.stored:
        print(f"next: claimlab analyze {' '.join(p.name for p in session.stored.values())}")
    if session.failed:   # a script must see that a host's run is missing, not only a person
        print(f"claimlab: {cluster.failed_line(session)}", file=sys.stderr)
        return EXIT_ERROR
    return 0
