"""`claimlab analyze`: effects, intervals and verdicts of stored runs, with no server."""

from __future__ import annotations

import math
from pathlib import Path

from . import READ_HELP

NAME = "analyze"


def add_parser(sub) -> None:
    a = sub.add_parser(NAME, help="effects, intervals and verdicts for stored runs",
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


def main(args) -> int:
    import pandas as pd

    from .. import stats
    from ..narrative import edge_lines, slow_hour_lines
    from ..report import analyze_runs
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
    from ..narrative import number
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
