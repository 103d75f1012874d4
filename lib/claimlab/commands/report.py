"""`claimlab report`: the main job, every claim's report rendered into reports/."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import params as params_mod
from ..errors import Interrupted
from . import EXIT_ERROR, READ_HELP, cluster_options, on_cluster

NAME = "report"
STARTS_SERVERS = True   # reaps the servers a killed claimlab left, then runs under signals_raise


def add_parser(sub) -> None:
    rep = sub.add_parser(NAME, help="the main job: run every claim and render reports/",
                         description="Run every claim on each target that can run here (or, with "
                                     "--from-data, take stored runs), then execute the notebooks over "
                                     "those runs with papermill and render single-file HTML and "
                                     "reports/index.html.")
    rep.add_argument("--profile", default="quick", choices=params_mod.PROFILES,
                     help="profile for the runs (default quick; none with --from-data)")
    rep.add_argument("--from-data", nargs="*", metavar="RUN_ID",
                     help="render stored runs (none named: the published runs); no server is started")
    rep.add_argument("--only", nargs="+", metavar="EXPERIMENT", help="only these experiments")
    rep.add_argument("--targets", nargs="+", metavar="TARGET", default=list(params_mod.REPORT_TARGETS),
                     help="servers to run each claim on, those available here (default: "
                          f"{' '.join(params_mod.REPORT_TARGETS)})")
    rep.add_argument("--cpu-evidence", action="store_true",
                     help="also profile new runs with perf and callgrind (C2-C4; a few minutes a "
                          "server); the shipped runs carry theirs, which --from-data shows")
    rep.add_argument("--show-code", action="store_true", help="include the code cells in the HTML")
    rep.add_argument("--out", type=Path, metavar="DIR", help="output directory (default reports/)")
    rep.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)
    rep.add_argument("--figures", type=Path, metavar="DIR", help="where figures go (default figures/)")
    cluster_options(rep)


def writes_data(args) -> bool:
    """Only a report that measures writes new runs: with --from-data, --data is read, and may be a
    reviewer's read-only copy."""
    return args.from_data is None


def _render_command(args, run_ids: list[str]) -> str:
    """The command that renders `run_ids` (none: the published runs) as this one would have."""
    words = ["claimlab report --from-data", *run_ids]
    for option, value in (("--only", " ".join(args.only or ())), ("--data", args.data), ("--out", args.out),
                          ("--figures", args.figures)):
        words += [option, str(value)] if value else []
    return " ".join(words + (["--show-code"] if args.show_code else []))


def main(args) -> int:
    import time

    from .. import campaign, report

    def log(msg: str) -> None:
        print(f"report: {msg}", file=sys.stderr)

    started = time.time()
    failed = ""
    if on_cluster(args) and args.from_data is None:   # the run phase on the cluster's hosts
        from .. import cluster
        args.from_data, failed = cluster.report_runs(cluster.endpoint(args.scheduler, args.cluster_file), args.only,
                                                     profile=args.profile, targets=args.targets,
                                                     data_root=args.data, move_after=args.move_after, log=log)
    if args.from_data is None:   # the run phase, here in the command: an interrupt stops its servers
        runs = campaign.measure(args.only, profile=args.profile, targets=args.targets, data_dir=args.data,
                                cpu_evidence=args.cpu_evidence, log=log)
    else:                        # stored runs only: the named ones, or the published ones
        runs = campaign.stored(args.from_data, data_dir=args.data, experiments=args.only)
    try:
        index = report.render(runs, out_dir=args.out, show_code=args.show_code, data_dir=args.data,
                              figures_dir=args.figures, log=log)
    except Interrupted as exc:   # nothing is measured here: say how to render the same runs again
        exc.advice = ("every run is stored; the reports were cut short: render them with: "
                      + _render_command(args, runs.all_ids() if args.from_data is None else args.from_data),)
        raise
    print(f"reports written; open {index}")
    if on_cluster(args):
        from .. import hosts_view
        per_host, pooled = hosts_view.host_tables(runs.all_ids(), args.data)
        per_host.to_csv(index.parent / "hosts.csv", index=False)
        pooled.to_csv(index.parent / "hosts_pooled.csv", index=False)
        print("\n".join(hosts_view.host_lines(per_host, pooled)))
    rows = report.verdict_rows(index.parent, since=started)
    if rows:
        from ..cards import edge_lines, slow_hour_lines, verdict_lines
        print("\n".join(verdict_lines(rows)))
        for line in slow_hour_lines(rows):
            print(f"slow hour: {line}")
        for line in edge_lines(rows):
            print(f"near an edge: {line}")
    if failed:
        print(f"claimlab: {failed}", file=sys.stderr)
        return EXIT_ERROR
    return 0
