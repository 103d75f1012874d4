"""`claimlab analyze`: effects, intervals and verdicts of stored runs, with no server. Every
line names the server it is about; a person gets numbers to three significant digits and a dash
where there is none, a script gets the whole table as CSV or JSON (empty or null, never NaN)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from . import READ_HELP

NAME = "analyze"
FORMATS = ("table", "csv", "json")
# What a script gets per comparison and server, in this order (the full table: --table).
COLUMNS = ("claim", "comparison", "target", "server", "experiment", "workload", "metric", "baseline",
           "treatment", "n_runs", "n_blocks", "estimate", "ci_low", "ci_high", "confidence", "p_value",
           "p_family", "published_ratio", "verdict", "verdict_label", "edge_label", "rerun_chance",
           "runs_to_settle", "run_id")
COUNTS = ("n_runs", "n_blocks", "runs_to_settle")   # whole numbers: 6, not 6.0


def add_parser(sub) -> None:
    a = sub.add_parser(NAME, help="effects, intervals and verdicts for stored runs",
                       description="Analyse stored runs (no server needed) and print one line per "
                                   "comparison and server; runs of one claim are analysed together, runs "
                                   "as the top level, with their between-run spread; --table writes the "
                                   "tidy table as CSV.")
    a.add_argument("run_ids", nargs="+", metavar="RUN_ID",
                   help="stored runs, by id or directory (`claimlab runs` lists them)")
    a.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)
    a.add_argument("--format", choices=FORMATS, default="table",
                   help="table: aligned, for reading (default); csv or json: one record per comparison "
                        "and server, unrounded, on stdout (notes go to stderr)")
    a.add_argument("--table", type=Path, metavar="CSV", help="write the full table here")
    a.add_argument("--exclude-contention", action="store_true",
                   help="leave out measurements flagged as taken under contention")
    a.add_argument("--normal-only", action="store_true",
                   help="use only measurements the speed witness saw in the normal state")
    a.add_argument("--accept-modified", action="store_true",
                   help="analyse data whose checksums no longer match its manifest")


def main(args) -> int:
    import pandas as pd

    from ..report import analyze_runs
    analyses = analyze_runs(args.run_ids, args.data, accept_modified=args.accept_modified,
                            include_contention=not args.exclude_contention, normal_only=args.normal_only)
    if args.format == "table":
        for a in analyses:
            print("\n".join(_claim_lines(a, args.exclude_contention)))
    else:
        for a in analyses:
            for line in _claim_lines(a, args.exclude_contention, table=False):
                print(line, file=sys.stderr)
        _write_records(pd.concat([_records(a.table) for a in analyses], ignore_index=True), args.format)
    if args.table:
        args.table.parent.mkdir(parents=True, exist_ok=True)   # checked writable before the analysis
        pd.concat([a.table for a in analyses]).to_csv(args.table, index=False)
        print(f"table written to {args.table}", file=sys.stderr if args.format != "table" else sys.stdout)
    return 0


def _claim_lines(a, exclude_contention: bool, table: bool = True) -> list[str]:
    """One claim's lines: its notes, a heading with the verdict counts and the interval level, the
    verdict table (`table`), then what to do about slow hours and edges and how its runs spread."""
    from ..cards import edge_lines, slow_hour_lines, verdict_lines
    from ..stats.verdicts import VERDICTS
    from ..wording import level
    rows = a.table.to_dict("records")
    lines = [f"note: {note}" for note in a.notes]
    counts = a.table["verdict"].value_counts()
    head = ", ".join(f"{counts.get(word, 0)} {word.replace('_', ' ')}" for word in VERDICTS)
    levels = sorted({level(c) for c in a.table["confidence"].dropna()}, key=lambda text: float(text[:-1]))
    stated = f"; intervals at {' and '.join(levels)} confidence" if levels else ""
    lines.append(f"{a.claim.id} {a.claim.title}: {head}{stated}")
    if table:
        lines += [f"  {line}" for line in verdict_lines(rows, claim=False)]
    lines += [f"  slow hour: {line}" for line in slow_hour_lines(rows)]
    lines += [f"  near an edge: {line}" for line in edge_lines(rows)]
    if len(a.run_id.split()) > 1:
        lines += [f"  {line}" for line in _between_run_lines(a)]
    if exclude_contention:
        lines += [f"  {line}" for line in _contention_lines(a.results, a.table)]
    return lines


def _between_run_lines(a) -> list[str]:
    """How the runs of each comparison and server spread, where a server has more than one run
    (with one, there is no spread to tell)."""
    from .. import stats
    from ..cards import spoken_comparisons
    from ..wording import baseline_words, number, server_names
    spread, levels = stats.between_runs(a.results, a.claim)
    levels = levels.groupby(["comparison", "target"])
    servers = server_names(a.results)
    rows = a.table.to_dict("records")
    compared = {(r["comparison"], r["target"]): words for r, words in zip(rows, spoken_comparisons(rows))}
    lines = []
    for row in spread.itertuples(index=False):
        runs = levels.get_group((row.comparison, row.target))
        if len(runs) < 2:
            continue
        corr = "" if math.isnan(row.baseline_corr) else \
            f", its correlation with the estimate {number(row.baseline_corr)}"
        where = servers.get(row.target, row.target)
        lines.append(f"between runs: {compared.get((row.comparison, row.target), row.comparison)} on {where}: "
                     f"runs {_per_run(runs, 'estimate')}; between-run sd {number(row.between_run_sd)}, "
                     f"within-run sd {number(row.within_run_sd)}, p(runs differ) {number(row.p_runs_differ)}; "
                     f"baseline ({baseline_words(row.baseline)}) {_per_run(runs, 'baseline_level')}{corr}")
    return lines


def _per_run(runs, column: str) -> str:
    """`run: value, ...` for one comparison's runs (`stats.run_levels`)."""
    from ..wording import number
    return ", ".join(f"{run}: {number(value)}" for run, value in zip(runs["run_id"], runs[column]))


def _records(table):
    """The columns a script reads, with the server named as a reader would name it."""
    import pandas as pd
    out = table.copy()
    from ..cards import row_server
    out["server"] = [row_server(r) for r in out.to_dict("records")]
    for column in COUNTS:   # float in the analysis, as a missing count is NaN there
        out[column] = pd.to_numeric(out[column]).round().astype("Int64")
    return out[list(COLUMNS)]


def _write_records(records, fmt: str) -> None:
    """CSV or JSON on stdout: a missing number is an empty field or null, never NaN (which JSON
    does not have and a script would read as a value)."""
    import pandas as pd
    if fmt == "csv":
        records.to_csv(sys.stdout, index=False, lineterminator="\n")
        return
    rows = [{k: (None if v is pd.NA or isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
            for row in records.astype(object).to_dict("records")]
    json.dump(rows, sys.stdout, indent=1, default=str)
    print()


def _contention_lines(results, table) -> list[str]:
    """What --exclude-contention left out, and why a comparison then had nothing to compare."""
    keys = ["condition", "workload", "repetition", "iteration"]
    busy = results[results["contention"].astype(bool)]
    lines = [f"--exclude-contention left out {busy.groupby(keys).ngroups if len(busy) else 0} of "
             f"{results.groupby(keys).ngroups if len(results) else 0} measurements ({len(busy)} of "
             f"{len(results)} rows): taken while the machine was busy with other work (contention flag)"]
    from ..cards import row_server, spoken_comparisons
    untested = table[table["verdict"] == "not_tested"].to_dict("records")
    for row, compared in zip(untested, spoken_comparisons(untested)):
        server = row_server(row)
        where = "" if server == "—" else f" on {server}"
        why = str(row["verdict_note"]).removeprefix("not tested: ").split(";")[0] or "no measurements left on one side"
        lines.append(f"{compared}{where}: not tested because {why}")
    return lines
