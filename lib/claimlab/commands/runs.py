"""`claimlab runs`: the stored runs."""

from __future__ import annotations

from pathlib import Path

from . import READ_HELP

NAME = "runs"


def add_parser(sub) -> None:
    ls = sub.add_parser(NAME, help="list stored runs")
    ls.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)


def main(args) -> int:
    from ..store import list_runs
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
