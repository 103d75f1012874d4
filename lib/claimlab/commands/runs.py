"""`claimlab runs`: the stored runs, each with the servers it measured and whether the reports
publish it (data/published_runs.json), for people (an aligned table) and scripts (csv, json)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from ..errors import DataError
from . import READ_HELP

NAME = "runs"
FORMATS = ("table", "csv", "json")
COLUMNS = ("run_id", "experiment", "claim", "server", "profile", "status", "published", "host", "path")


def add_parser(sub) -> None:
    ls = sub.add_parser(NAME, help="list stored runs",
                        description="List stored runs: the servers each measured, and `*` on the runs "
                                    "the reports publish (data/published_runs.json).")
    ls.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)
    ls.add_argument("--experiment", nargs="+", metavar="NAME", help="only runs of these experiments")
    ls.add_argument("--server", nargs="+", metavar="NAME",
                    help="only runs that measured one of these servers: a target name (mariadb, mysql) or "
                         "a product or version as the SERVER column shows it (MySQL, 10.11)")
    ls.add_argument("--published", action="store_true", help="only the runs the reports publish")
    ls.add_argument("--format", choices=FORMATS, default="table", help="table (default), csv or json")


def main(args) -> int:
    from ..report import published_runs
    from ..store import experiment_folder_hint, list_runs
    if args.data is not None and not args.data.is_dir():
        raise DataError(f"--data {args.data}: no such directory")
    hint = experiment_folder_hint(args.data) if args.data is not None else ""
    if hint:
        raise DataError(f"--data {args.data}: {hint}")
    published = {run_id for ids in published_runs().values() for run_id in ids}
    unreadable: list[str] = []
    runs = [run | {"server": servers_of(Path(run["path"])), "published": run["run_id"] in published,
                   "status": _status(run)} for run in list_runs(args.data, unreadable)]
    for message in unreadable:   # left out of the listing, never silently
        print(f"claimlab: left out: {message}", file=sys.stderr)
    runnable = _runnable()
    _check_experiments(args.experiment or (), {run["experiment"] for run in runs} | set(runnable))
    runs = [run for run in runs if _wanted(run, args)]
    if args.format == "json":
        json.dump([{c: run[c] for c in COLUMNS} for run in runs], sys.stdout, indent=1)
        print()
        return 0
    if args.format == "csv":
        writer = csv.DictWriter(sys.stdout, COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows({**run, "server": "; ".join(run["server"])} for run in runs)
        return 0
    if not runs:
        wanted = [name for name in args.experiment or () if name in runnable] or ["binlog_default"]
        print(f"no stored runs{' match' if any((args.experiment, args.server, args.published)) else ''}; "
              f"start one with `claimlab run {wanted[0]} --profile smoke`")
        return 0
    header = ("RUN", "EXPERIMENT", "CLAIM", "SERVER", "PROFILE", "STATUS", "PUBLISHED", "HOST", "PATH")
    rows = [(r["run_id"], r["experiment"] or "", r["claim"] or "", ", ".join(r["server"]) or "—",
             r["profile"] or "", r["status"] or "", "*" if r["published"] else "", r["host"] or "—",
             _shown(Path(r["path"]))) for r in runs]
    widths = [max(len(x) for x in column) for column in zip(header, *rows)]
    for row in (header, *rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0


def _shown(path: Path) -> str:
    """A run's folder as a reader types it: relative to the current directory when under it (the
    table is wide enough already); csv and json keep the absolute path for scripts."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def servers_of(path: Path) -> list[str]:
    """What each of a run's targets turned out to be ("mariadb: MariaDB 10.11.19"), from the first
    start of each recorded in servers.jsonl; a target the run meant to measure that has not started
    (yet) is named alone, one it skipped (not available here) not at all."""
    from ..store import read_jsonl, read_manifest
    from ..wording import server_name
    versions: dict[str, str] = {}
    for record in read_jsonl(path / "servers.jsonl") if (path / "servers.jsonl").exists() else []:
        target = str(record.get("target"))
        if target not in versions and record.get("version"):
            versions[target] = server_name(str(record["version"]))
    manifest = read_manifest(path)
    targets = {c.get("target") or manifest.get("default_target") for c in manifest.get("conditions") or ()}
    targets = (targets - set(manifest.get("skipped_targets") or ())) | set(versions)
    return [f"{t}: {versions[t]}" if t in versions else str(t) for t in sorted(t for t in targets if t)]


def _status(run: dict) -> str:
    """A run's manifest says "running" until it is closed; one whose writer is gone was killed."""
    from ..writer import writing
    return "killed" if run["status"] == "running" and not writing(Path(run["path"])) else run["status"]


def _runnable() -> list[str]:
    from ..store import project_root
    return sorted(p.stem for p in (project_root() / "params").glob("*.yaml"))


def _check_experiments(names, known: set) -> None:
    """A misspelt experiment would list nothing, and "no stored runs match" would hide why."""
    for name in names:
        if name not in known:
            raise DataError(f"--experiment {name}: no params file and no stored run of that name "
                            f"(there are: {', '.join(sorted(str(k) for k in known if k))})")


def _wanted(run: dict, args) -> bool:
    if args.experiment and run["experiment"] not in args.experiment:
        return False
    if args.published and not run["published"]:
        return False
    if args.server:
        said = [s.lower() for s in run["server"]]
        return any(name.lower() in s for name in args.server for s in said)
    return True
