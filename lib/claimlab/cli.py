"""The `claimlab` command line. Every ClaimlabError becomes one line and a non-zero exit."""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

from . import params as params_mod
from .errors import ClaimlabError, TargetUnavailable

EXIT_ERROR, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 1, 130, 141   # 128 + the signal, as a shell reports it
READ_HELP = "where stored runs live (default: runs/, then the shipped data/raw)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="claimlab",
        description="Re-test published MySQL performance claims on real servers, with repeated "
                    "runs and honest statistics.",
        epilog="Start with `claimlab targets`, then `claimlab run binlog_default --profile smoke`.")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run an experiment and store every measurement",
                       description="Run PARAMS (a name in params/ or a .yaml path). Measurements are "
                                   "appended to runs/<experiment>/<run-id>/ (git-ignored) as they complete.")
    r.add_argument("params", help="experiment name (e.g. binlog_default) or params file path")
    r.add_argument("--profile", default="quick", choices=params_mod.PROFILES,
                   help="smoke: seconds, for tests; quick: minutes (default); full: publication-sized")
    r.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted run without "
                                                      "repeating finished measurements")
    r.add_argument("--data", type=Path, metavar="DIR", help="where new runs go (default runs/)")
    r.add_argument("--work", type=Path, metavar="DIR", help="scratch space for server data "
                                                            "directories (default work/)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--target", metavar="NAME", help="the target for conditions that pick none "
                                                    "(default: design.target, else the first target)")
    _cluster_options(r)

    pp = sub.add_parser("prepare", help="load the experiments' tables into the data-directory cache",
                        description="Initialise and load every cell's data directory of PARAMS (default: every "
                                    "file in params/) for each target that can run here, and keep it in the "
                                    "cache (CLAIMLAB_DATADIRS, default ~/.cache/claimlab/datadirs) so that runs "
                                    "start from a copy. `claimlab report` does this before its runs. Directories "
                                    "already cached are left alone.")
    pp.add_argument("params", nargs="*", help="names or paths (default: every file in params/)")
    pp.add_argument("--profile", default="quick", choices=params_mod.PROFILES,
                    help="the profile whose tables to load (default quick)")
    pp.add_argument("--target", nargs="+", metavar="NAME", dest="targets",
                    help="only these targets (default: every target a file declares)")
    pp.add_argument("--work", type=Path, metavar="DIR", help="scratch space (default work/)")

    v = sub.add_parser("validate", help="check params files without running anything",
                       description="Load every profile of each params file and report the first error.")
    v.add_argument("params", nargs="*", help="names or paths (default: every file in params/)")

    t = sub.add_parser("targets", help="what servers are available here, and why not",
                       description="For each target in the params files, say what would run or "
                                   "exactly what is missing.")
    t.add_argument("params", nargs="*", help="names or paths (default: every file in params/)")

    sm = sub.add_parser("setup-mysql", help="fetch Oracle MySQL from Debian's archive into the cache",
                        description="Download mysql-server-core and every package it needs from Debian "
                                    "sid with this host's apt tools (private lists; signatures verified "
                                    "with debian-archive-keyring), unpack them into the cache "
                                    "(CLAIMLAB_CACHE, default ~/.cache/claimlab) for `mysql-debian` "
                                    "targets. A no-op when the newest version is already there.")
    sm.add_argument("--if-possible", action="store_true",
                    help="on a host that cannot (not Debian/Ubuntu, no network), say why and exit 0")

    ls = sub.add_parser("runs", help="list stored runs")
    ls.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)

    a = sub.add_parser("analyze", help="effects, intervals and verdicts for stored runs",
                       description="Analyse stored runs (no server needed) and print one line per "
                                   "claim; runs of one claim are analysed together, runs as the top "
                                   "level, with their between-run spread; --table writes the tidy "
                                   "table as CSV.")
    a.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    a.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)
    a.add_argument("--table", type=Path, metavar="CSV", help="write the full table here")
    a.add_argument("--exclude-contention", action="store_true",
                   help="leave out measurements flagged as taken under contention")
    a.add_argument("--normal-only", action="store_true",
                   help="use only measurements the speed witness saw in the normal state")
    a.add_argument("--accept-modified", action="store_true",
                   help="analyse data whose checksums no longer match its manifest")
    rep = sub.add_parser("report", help="the main job: run every claim and render reports/",
                         description="Run every claim on each target that can run here (or, with "
                                     "--from-data, take stored runs), then execute the notebooks over "
                                     "those runs with papermill and render single-file HTML and "
                                     "reports/index.html.")
    rep.add_argument("--profile", default="quick", choices=params_mod.PROFILES,
                     help="profile for the runs (default quick)")
    rep.add_argument("--from-data", nargs="*", metavar="RUN_ID",
                     help="render stored runs (none named: the published runs); no server is started")
    rep.add_argument("--only", nargs="+", metavar="EXPERIMENT", help="only these experiments")
    rep.add_argument("--targets", nargs="+", metavar="TARGET", default=["mariadb", "mysql"],
                     help="servers to run each claim on, those available here (default: mariadb mysql)")
    rep.add_argument("--cpu-evidence", action="store_true",
                     help="also profile new runs with perf and callgrind (C2-C4; a few minutes a "
                          "server); the shipped runs carry theirs, which --from-data shows")
    rep.add_argument("--show-code", action="store_true", help="include the code cells in the HTML")
    rep.add_argument("--out", type=Path, metavar="DIR", help="output directory (default reports/)")
    rep.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)
    rep.add_argument("--figures", type=Path, metavar="DIR", help="where figures go (default figures/)")
    _cluster_options(rep)

    im = sub.add_parser("import", help="append a run made elsewhere to the store, checksums checked",
                        description="Check a run directory or .tar.gz archive (every file against its "
                                    "manifest's checksums) and move it into the store in one step.")
    im.add_argument("source", type=Path, metavar="DIR|ARCHIVE")
    im.add_argument("--data", type=Path, metavar="DIR", help="where runs go (default runs/)")

    d = sub.add_parser("diff", help="effective server variables of two configurations, side by side",
                       description="Start two servers (targets from the params files, each with optional "
                                   "extra options), read back SHOW GLOBAL VARIABLES and print the "
                                   "differences grouped, flagging the performance-relevant ones with why. "
                                   "With --ablation, compare an ablation file's slow and fast sets.")
    d.add_argument("targets", nargs="*", metavar="TARGET", help="two target names from params/*.yaml "
                                                               "(the same name twice with --set-a/--set-b)")
    d.add_argument("--set-a", action="append", default=[], metavar="OPTION=VALUE",
                   help="a server option for the first server (repeatable), e.g. log_bin=true")
    d.add_argument("--set-b", action="append", default=[], metavar="OPTION=VALUE",
                   help="a server option for the second server (repeatable)")
    d.add_argument("--ablation", metavar="NAME", help="compare slow and fast of params/ablation/NAME.yaml")
    d.add_argument("--all", action="store_true", help="list every variable, not only differences")
    d.add_argument("--work", type=Path, metavar="DIR", help="scratch space for data directories "
                                                            "(default: a temporary directory)")

    ab = sub.add_parser("ablate", help="switch each slow-vs-fast difference and attribute the gap",
                        description="Run params/ablation/NAME.yaml (or a path): every differing option "
                                    "switched to the fast value alone and cumulatively, interleaved and "
                                    "repeated; prints each option's share of the gap with its interval.")
    ab.add_argument("ablation", help="ablation name in params/ablation/ or a path")
    ab.add_argument("--profile", default="quick", choices=params_mod.PROFILES, help="smoke | quick | full")
    ab.add_argument("--data", type=Path, metavar="DIR", help="where new runs go (default runs/)")
    ab.add_argument("--work", type=Path, metavar="DIR", help="scratch space (default work/)")
    ab.add_argument("--table", type=Path, metavar="CSV", help="write the attribution table here")
    ab.add_argument("--no-progress", action="store_true", help="no progress bar")
    ab.add_argument("--target", metavar="NAME", help="which of the file's targets (default: the first)")

    pb = sub.add_parser("publish", help="ship runs in data/raw, their tables packed as Parquet",
                        description="Copy each complete, verified run from runs/ into data/raw/<experiment>/ "
                                    "with its large tables stored as zstd Parquet (read back and compared "
                                    "before the CSV goes); a run already in data/raw is packed in place.")
    pb.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    pb.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)
    pb.add_argument("--mark-published", action="store_true",
                    help="also list each run in data/published_runs.json (the runs the reports read)")

    pr = sub.add_parser("profile", help="flame graphs and instruction counts per condition",
                        description="For each condition of an ablation (slow, fast) or a claim "
                                    "experiment, sample the server with perf during the measured phase "
                                    "(flame graph SVG, differential, top functions) and count one "
                                    "statement's instructions under callgrind.")
    pr.add_argument("params", help="ablation name (params/ablation/) or experiment name (params/)")
    pr.add_argument("--profile", default="smoke", choices=params_mod.PROFILES,
                    help="sizes the workload (default smoke)")
    pr.add_argument("--target", metavar="NAME",
                    help="an experiment's target to profile (default: design.target, else its first)")
    pr.add_argument("--out", type=Path, default=Path("profiles"), metavar="DIR",
                    help="where SVGs, folded stacks and tables go (default profiles/)")
    pr.add_argument("--iterations", type=int, default=5, help="measured iterations sampled (default 5)")
    pr.add_argument("--no-perf", action="store_true", help="skip sampling")
    pr.add_argument("--no-callgrind", action="store_true", help="skip instruction counts")
    pr.add_argument("--work", type=Path, metavar="DIR", help="scratch space (default: a temporary directory)")
    return p


def _cluster_options(p: argparse.ArgumentParser) -> None:
    c = p.add_mutually_exclusive_group()
    c.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler (e.g. tcp://host:8786): each "
                   "experiment runs on every worker host offering the resource host=1 (docs/cluster.md)")
    c.add_argument("--cluster-file", type=Path, metavar="FILE", help="a YAML file naming the scheduler "
                   "(scheduler: ADDRESS) and, optionally, its TLS files")


def _on_cluster(args) -> bool:
    return bool(getattr(args, "scheduler", None) or getattr(args, "cluster_file", None))


def cmd_run_cluster(args) -> int:
    from . import cluster
    if args.work:
        raise ClaimlabError("--work: each worker measures in its own scratch space (CLAIMLAB_WORKER_DIR on "
                            "the worker), so --work does not go with --scheduler or --cluster-file")
    session = cluster.run(cluster.endpoint(args.scheduler, args.cluster_file), [args.params],
                          profile=args.profile, targets=[args.target] if args.target else None,
                          data_root=args.data, resume=args.resume, log=lambda line: print(line, file=sys.stderr))
    for job, path in session.stored.items():
        print(f"run {path.name}: {job.experiment} on {job.target}, host {job.host}, stored in {path}")
    if session.stored:
        print(f"next: claimlab analyze {' '.join(p.name for p in session.stored.values())}")
    return EXIT_ERROR if session.failed and not session.stored else 0


def cmd_import(args) -> int:
    from .cluster import import_run
    path, new = import_run(args.source, args.data)
    print(f"run {path.name} {'imported into' if new else 'already stored in'} {path}")
    return 0


def _params_paths(names: list[str]) -> list[Path]:
    if names:
        return [params_mod.find(n) for n in names]
    root = Path("params")
    paths = sorted(root.glob("*.yaml"))
    if not paths:
        raise ClaimlabError("no params files in ./params; run from the claimlab checkout or name one")
    return paths


def cmd_run(args) -> int:
    from . import runner
    if _on_cluster(args):
        return cmd_run_cluster(args)
    exp = params_mod.load(params_mod.find(args.params), args.profile)
    if args.target:   # first: the target may bring a design of its own (`design_for`)
        exp = params_mod.with_default_target(exp, args.target, "--target")
    should_stop = None
    if exp.design.sequential is not None:   # the statistics (scipy, pandas) load only when asked
        from . import stats
        should_stop = stats.stopping_for(exp)
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
    from .store import read_results
    results = read_results(path, accept_modified=True)
    return results.groupby(["condition", "workload", "repetition", "iteration"]).ngroups if len(results) else 0


def _claim_for(claim_id: str):
    from .claims import load_claims
    from .store import project_root
    claims = load_claims(project_root() / "data" / "claims.yaml")
    if claim_id not in claims:
        raise ClaimlabError(f"data/claims.yaml has no claim {claim_id!r}")
    return claims[claim_id]


def cmd_validate(args) -> int:
    """Params files load with every profile, ablation files (in an `ablation` directory) likewise,
    and a `claims.yaml` as the claims; with no names: params/, params/ablation/ and data/claims.yaml."""
    if args.params:
        paths = [_validate_path(name) for name in args.params]
    else:
        paths = _params_paths([]) + sorted(Path("params", "ablation").glob("*.yaml"))
        paths += [p for p in [Path("data", "claims.yaml")] if p.is_file()]
    for path in paths:
        if path.name == "claims.yaml":
            from .claims import load_claims
            load_claims(path)
        elif path.parent.name == "ablation":
            from . import ablation  # imported only when needed: it loads the statistics and plots
            for profile in params_mod.PROFILES:
                ablation.load(path, profile)
        else:
            from .design import conditions
            for profile in params_mod.PROFILES:
                exp = params_mod.load(path, profile)
                conditions(exp)   # every combination of levels, too
                for target, design in exp.target_designs.items():
                    if design.sequential is not None and design.sequential.precise:   # the claim's comparisons
                        from .stats.sequential import stopping_for  # only then: it loads the statistics
                        stopping_for(params_mod.with_default_target(exp, target, str(path)))
        print(f"ok: {path}")
    return 0


def cmd_prepare(args) -> int:
    from .preload import preload
    from .report import check_targets, per_target

    def say(line: str) -> None:
        print(f"prepare: {line}", file=sys.stderr)

    exps = {path.stem: params_mod.load(path, args.profile) for path in _params_paths(args.params)}
    if args.targets:
        check_targets(exps, args.targets, "--target")
    for name, exp in exps.items():
        for one in per_target(name, exp, args.targets or list(exp.targets), say):
            for p in preload(one, work_root=args.work, log=say):
                print(f"{p.experiment} {p.target} {p.cell}: {p.outcome()}")
    return 0


def _validate_path(name: str) -> Path:
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return params_mod.find(name)
    params_dir = Path("params")
    if not (params_dir / f"{name}.yaml").is_file() and (params_dir / "ablation" / f"{name}.yaml").is_file():
        return params_dir / "ablation" / f"{name}.yaml"
    return params_mod.find(name)


def cmd_targets(args) -> int:
    from .servers import check_available
    from .workloads import sysbench_binary
    seen = set()
    worst = 0
    for path in _params_paths(args.params):
        exp = params_mod.load(path, "quick")
        for name, spec in exp.targets.items():
            key = repr(spec.public())
            if key in seen:
                continue
            seen.add(key)
            try:
                print(f"available    {name:<10} {spec.kind:<14} {check_available(spec, download=False)}"
                      f"  ({path.name})")
            except (TargetUnavailable, ClaimlabError) as exc:
                print(f"unavailable  {name:<10} {spec.kind:<14} {exc}  ({path.name})")
    try:
        print(f"available    sysbench   {sysbench_binary()}")
    except ClaimlabError as exc:
        print(f"unavailable  sysbench   {exc}")
        worst = 1
    return worst


def cmd_setup_mysql(args) -> int:
    from .servers import cache_dir, debian
    try:
        debian.setup(cache_dir(), log=lambda line: print(f"setup-mysql: {line}", file=sys.stderr))
    except TargetUnavailable as exc:
        if not args.if_possible:
            raise
        print(f"setup-mysql: skipped: {exc}; MySQL targets will be reported unavailable")
    return 0


def cmd_runs(args) -> int:
    from .store import list_runs
    runs = list_runs(args.data)
    if not runs:
        print("no stored runs; start one with `claimlab run binlog_default --profile smoke`")
    rows = [(r["run_id"], r["experiment"], r["claim"] or "", r["profile"], r["status"], r["host"], str(r["path"]))
            for r in runs]
    if rows:
        header = ("RUN", "EXPERIMENT", "CLAIM", "PROFILE", "STATUS", "HOST", "PATH")
        widths = [max(len(x) for x in column) for column in zip(header, *rows)]
        for row in (header, *rows):
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0


def cmd_analyze(args) -> int:
    import pandas as pd

    from . import stats
    from .narrative import edge_lines, slow_hour_lines
    from .report import analyze_runs
    analyses = analyze_runs(args.run_ids, args.data, accept_modified=args.accept_modified,
                            include_contention=not args.exclude_contention, normal_only=args.normal_only)
    for a in analyses:
        for note in a.notes:
            print(f"note: {note}")
        print(stats.summary_line(a.table, a.claim))
        for line in slow_hour_lines(a.table.to_dict("records")):
            print(f"  slow hour: {line}")
        for line in edge_lines(a.table.to_dict("records")):
            print(f"  near an edge: {line}")
        if len(a.run_id.split()) > 1:
            spread, levels = stats.between_runs(a.results, a.claim)
            levels = levels.groupby(["comparison", "target"])
            for row in spread.itertuples(index=False):
                runs = levels.get_group((row.comparison, row.target))
                corr = "" if math.isnan(row.baseline_corr) else \
                    f", its correlation with the estimate {row.baseline_corr:.2f}"
                print(f"  {row.comparison} [{row.target}] runs {_per_run(runs, 'estimate')}; between-run sd "
                      f"{row.between_run_sd:.3g}, within-run sd {row.within_run_sd:.3g}, "
                      f"p(runs differ) {row.p_runs_differ:.3g}; baseline ({row.baseline}) "
                      f"{_per_run(runs, 'baseline_level')}{corr}")
        if args.exclude_contention:
            for line in _contention_lines(a.results, a.table):
                print(f"  {line}")
    if args.table:
        pd.concat([a.table for a in analyses]).to_csv(args.table, index=False)
        print(f"table written to {args.table}")
    return 0


def _per_run(runs, column: str) -> str:
    """`run: value, ...` for one comparison's runs (`stats.run_levels`), four significant digits."""
    from .narrative import number
    return ", ".join(f"{run}: {number(value, 4)}" for run, value in zip(runs["run_id"], runs[column]))


def _contention_lines(results, table) -> list[str]:
    """What --exclude-contention left out, and why a comparison then had nothing to compare."""
    keys = ["condition", "workload", "repetition", "iteration"]
    busy = results[results["contention"].astype(bool)]
    lines = [f"--exclude-contention left out {busy.groupby(keys).ngroups if len(busy) else 0} of "
             f"{results.groupby(keys).ngroups if len(results) else 0} measurements ({len(busy)} of "
             f"{len(results)} rows): taken while the machine was busy with other work (contention flag)"]
    for row in table[table["verdict"] == "not_tested"].itertuples(index=False):
        why = str(row.verdict_note).split(";")[0] or "no measurements left on one side"
        lines.append(f"{row.comparison}: not tested because {why}")
    return lines


def cmd_publish(args) -> int:
    from .pack import mark_published, publish
    from .store import load_manifest
    for run_id in args.run_ids:
        dest = publish(run_id, args.data)
        manifest = load_manifest(dest)
        sizes = ", ".join(f"{name} {t['csv_bytes'] / 1e6:.2f} MB -> {t['file']} "
                          f"{(dest / t['file']).stat().st_size / 1e6:.2f} MB"
                          for name, t in manifest.extra["packed"]["tables"].items())
        print(f"published {manifest.run_id}: {dest} ({sizes})")
        if args.mark_published and mark_published(manifest.experiment, manifest.run_id):
            print(f"listed {manifest.run_id} in data/published_runs.json under {manifest.experiment}")
    return 0


def cmd_report(args) -> int:
    import time

    from . import campaign, report

    def log(msg: str) -> None:
        print(f"report: {msg}", file=sys.stderr)

    started = time.time()
    if _on_cluster(args) and args.from_data is None:   # the run phase on the cluster's hosts
        from . import cluster
        args.from_data = cluster.report_runs(cluster.endpoint(args.scheduler, args.cluster_file), args.only,
                                             profile=args.profile, targets=args.targets, data_root=args.data,
                                             log=log)
    if args.from_data is None:   # the run phase, here in the command: an interrupt stops its servers
        runs = campaign.measure(args.only, profile=args.profile, targets=args.targets, data_dir=args.data,
                                cpu_evidence=args.cpu_evidence, log=log)
    else:                        # stored runs only: the named ones, or the published ones
        runs = campaign.stored(args.from_data, data_dir=args.data, experiments=args.only)
    index = report.render(runs, out_dir=args.out, show_code=args.show_code, data_dir=args.data,
                          figures_dir=args.figures, log=log)
    print(f"reports written; open {index}")
    if _on_cluster(args):
        from . import cluster
        per_host, pooled = cluster.host_tables(runs.all_ids(), args.data)
        per_host.to_csv(index.parent / "hosts.csv", index=False)
        pooled.to_csv(index.parent / "hosts_pooled.csv", index=False)
        print("\n".join(cluster.host_lines(per_host, pooled)))
    rows = report.verdict_rows(index.parent, since=started)
    if rows:
        from .narrative import edge_lines, slow_hour_lines, verdict_lines
        print("\n".join(verdict_lines(rows)))
        for line in slow_hour_lines(rows):
            print(f"slow hour: {line}")
        for line in edge_lines(rows):
            print(f"near an edge: {line}")
    return 0


def _option_sets(pairs: list[str], source: str):
    """`--set-a log_bin=true --set-a max_connections=50`: typed options where ServerOptions has a
    field, `extra` otherwise; validated like a params file."""
    import yaml

    from .params import ServerOptionsIn, server_options
    known = set(ServerOptionsIn.model_fields) - {"extra"}
    values: dict = {"extra": {}}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ClaimlabError(f"{source}: expected OPTION=VALUE, got {pair!r}")
        try:
            parsed = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            raise ClaimlabError(f"{source}: {key}: cannot read the value {value[:60]!r}; quote it") from None
        if key in known:
            values[key] = parsed
        else:
            values["extra"][key] = parsed
    return server_options(values, source)


def _find_target(name: str):
    for path in _params_paths([]):
        exp = params_mod.load(path, "quick")
        if name in exp.targets:
            return exp.targets[name]
    raise ClaimlabError(f"no params file in params/ declares a target named {name!r}")


def cmd_diff(args) -> int:
    import tempfile

    from . import ablation, variables
    from .servers import Launcher
    if args.ablation:
        abl = ablation.load(ablation.find(args.ablation), "smoke")
        sides = [("slow", abl.target, abl.slow), ("fast", abl.target, abl.fast)]
    else:
        if len(args.targets) != 2:
            raise ClaimlabError("diff: name two targets (or --ablation NAME)")
        a, b = args.targets
        label_a, label_b = (a, b) if a != b else (f"{a}[a]", f"{b}[b]")
        sides = [(label_a, _find_target(a), _option_sets(args.set_a, "--set-a")),
                 (label_b, _find_target(b), _option_sets(args.set_b, "--set-b"))]
    facts = []
    with tempfile.TemporaryDirectory(prefix="claimlab-diff-", dir=args.work) as work:
        launcher = Launcher(Path(work))
        for _, target, options in sides:
            server = launcher.prepare(target, options)
            try:
                server.start()
                facts.append(server.facts())
            finally:
                server.stop()
    result = variables.diff(facts[0], facts[1], sides[0][0], sides[1][0])
    print("\n".join(result.lines(everything=args.all)))
    print(f"{len(result.differences)} differences, {len(result.flagged)} flagged")
    return 0


def cmd_ablate(args) -> int:
    from . import ablation
    from .store import read_results
    abl = ablation.load(ablation.find(args.ablation), args.profile, args.target)
    outcome = ablation.run(abl, data_root=args.data, work_root=args.work,
                           progress=not args.no_progress and sys.stderr.isatty())
    table = ablation.attribute(read_results(outcome.path), abl)
    for r in table.itertuples(index=False):
        print(f"{r.kind:<10} {r.option:<28} ratio {r.ratio:6.3f} [{r.ratio_lo:.3f}, {r.ratio_hi:.3f}]  "
              f"share {r.share:6.1%} [{r.share_lo:.1%}, {r.share_hi:.1%}]")
    if table["note"].iloc[0]:
        print(f"note: {table['note'].iloc[0]}")
    print(f"largest alone: {ablation.largest(table)}; run {outcome.run_id} in {outcome.path}")
    if args.table:
        table.to_csv(args.table, index=False)
        print(f"table written to {args.table}")
    return 0


def cmd_profile(args) -> int:
    import tempfile

    import pandas as pd

    from . import profiling
    from .servers import Launcher
    conditions = profiling.conditions_of(args.params, args.profile, target=args.target)
    args.out.mkdir(parents=True, exist_ok=True)
    profiles, counts, tables = [], [], {}
    skipped = profiling.flamegraph_skip()   # without Rust (no inferno): one line, the rest runs
    with tempfile.TemporaryDirectory(prefix="claimlab-profile-", dir=args.work) as work:
        launcher = Launcher(Path(work))
        for c in conditions:
            if not args.no_perf:
                if c.target.name not in tables:
                    tables[c.target.name] = profiling.names_for(c.target)
                prof = profiling.profile_condition(launcher, c.target, c.options, c.workload, c.name,
                                                   args.out, iterations=args.iterations,
                                                   names=tables[c.target.name])
                profiles.append(prof)
                drawn = "" if skipped else f", flame graph {profiling.flamegraph(prof, args.out / f'{c.name}.svg')}"
                print(f"{c.name}: {prof.samples} samples{drawn}")
            if not args.no_callgrind:
                ic = profiling.count_instructions(launcher, c.target, c.options, c.workload, c.name,
                                                  Path(work) / "callgrind")
                counts.append(ic)
                print(f"{c.name}: {ic.own_per_row:,.0f} instructions per row in the statement's thread "
                      f"(spread {ic.own_spread:.3%}), {ic.per_row:,.0f} in all threads "
                      f"(spread {ic.relative_spread:.3%}) over {len(ic.counts)} runs")
    if skipped and profiles:
        print(skipped)
    elif len(profiles) >= 2:
        print(f"differential: {profiling.differential(profiles[0], profiles[1], args.out / 'differential.svg')}")
    if profiles:
        top = pd.concat([p.top_functions() for p in profiles])
        top.to_csv(args.out / "top_functions.csv", index=False)
        pd.concat([p.unnamed() for p in profiles]).to_csv(args.out / "unnamed.csv", index=False)
        print(top[["condition", "function", "self_share", "total_share"]].to_string(index=False))
    if counts:
        pd.DataFrame([ic.summary() for ic in counts]).to_csv(args.out / "instructions.csv", index=False)
        pd.concat([ic.top for ic in counts]).to_csv(args.out / "instructions_top.csv", index=False)
    print(f"written to {args.out}")
    return 0


COMMANDS = {"report": cmd_report, "run": cmd_run, "validate": cmd_validate, "targets": cmd_targets, "runs": cmd_runs,
            "analyze": cmd_analyze, "diff": cmd_diff, "ablate": cmd_ablate, "profile": cmd_profile,
            "setup-mysql": cmd_setup_mysql, "prepare": cmd_prepare, "publish": cmd_publish, "import": cmd_import}
# Commands that may start servers: each first stops the servers a killed claimlab left behind
# (`run` and `prepare` do so themselves, under the lock that claims their work directory).
STARTS_SERVERS = ("report", "diff", "ablate", "profile")


def _reap_orphans(args) -> None:
    from .servers import reap
    from .store import project_root
    reaped = reap(getattr(args, "work", None) or project_root() / "work")
    if reaped:
        print(f"claimlab: stopped {len(reaped)} server(s) left by a killed claimlab: pids "
              f"{', '.join(map(str, reaped))}", file=sys.stderr)


def _check_writable(args) -> None:
    """Every directory a command will write to, checked before anything starts and without
    making it: a mistyped or read-only path is one line now, not a traceback after minutes of
    measuring. What is checked is the nearest part of the path that exists, by making and
    removing a directory there (permission bits do not tell for root or special file systems)."""
    # --data is written where new runs go: `run`, `ablate`, and a `report` that measures (with
    # --from-data it is only read, and may be a reviewer's read-only copy)
    writes_data = args.command in ("run", "ablate", "import") or (args.command == "report" and args.from_data is None)
    names = ("work", "out", "figures") + (("data",) if writes_data else ())
    dirs = [(f"--{name}", getattr(args, name)) for name in names if getattr(args, name, None) is not None]
    if getattr(args, "table", None) is not None:
        dirs.append(("--table", args.table.parent))
    for option, path in dirs:
        existing = path
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            raise ClaimlabError(f"{option} {path}: {existing} is not a directory")
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".claimlab-check-", dir=existing))
        except OSError as exc:
            raise ClaimlabError(f"{option} {path}: cannot write in {existing} ({exc.strerror})") from None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        _check_writable(args)
        if args.command in STARTS_SERVERS:
            _reap_orphans(args)
            from .runner import signals_raise
            with signals_raise():    # SIGTERM, like Ctrl-C, unwinds: the servers are stopped
                return COMMANDS[args.command](args)
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("claimlab: interrupted; resume with --resume RUN_ID (see `claimlab runs`)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader stopped reading (`claimlab analyze ... | head`): no traceback, and none at exit
        # when Python flushes stdout (the Python docs' "Note on SIGPIPE")
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except ClaimlabError as exc:
        if args.debug:
            raise
        from .errors import Interrupted
        message = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"claimlab: error: {message}", file=sys.stderr)
        if isinstance(exc, Interrupted):
            run_id = getattr(exc, "run_id", "")
            resume = getattr(exc, "resume", None)
            if run_id:
                print(f"claimlab: run {run_id} keeps what was measured; resume with `claimlab run ... "
                      f"--resume {run_id}` (see `claimlab runs`)", file=sys.stderr)
            elif resume:
                for cut, command in resume:
                    print(f"claimlab: {cut} keeps what was measured; resume with: {command}", file=sys.stderr)
            else:
                print("claimlab: what was measured is kept; `claimlab runs` lists the interrupted runs, and "
                      "`claimlab run EXPERIMENT --resume RUN_ID` completes one", file=sys.stderr)
            return EXIT_INTERRUPTED
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
