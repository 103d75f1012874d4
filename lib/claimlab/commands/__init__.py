"""One module per `claimlab` command, each with `NAME`, `add_parser(sub)` and `main(args)`; a
command that may start servers says so with `STARTS_SERVERS = True`, and one that writes new runs
under --data answers `writes_data(args)`. The parser, and the turning of every ClaimlabError into
one line and an exit status, are claimlab.cli's. What several commands share is here.

Module-level imports stay light (a refusal should not wait for pandas): what a command alone
needs is imported in its `main`."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import params as params_mod
from ..errors import ClaimlabError

EXIT_ERROR, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 1, 130, 141   # 128 + the signal, as a shell reports it
READ_HELP = "where stored runs live (default: runs/, then the shipped data/raw)"


def params_paths(names: list[str]) -> list[Path]:
    """The params files named, or with none every file in ./params."""
    if names:
        return [params_mod.find(n) for n in names]
    paths = sorted(Path("params").glob("*.yaml"))
    if not paths:
        raise ClaimlabError("no params files in ./params; run from the claimlab checkout or name one")
    return paths


def cluster_options(p: argparse.ArgumentParser) -> None:
    """--scheduler or --cluster-file: the commands that can measure on Dask workers (cluster.py)."""
    c = p.add_mutually_exclusive_group()
    c.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler (e.g. tcp://host:8786): each "
                   "experiment runs on every worker host offering the resource host=1 (docs/cluster.md)")
    c.add_argument("--cluster-file", type=Path, metavar="FILE", help="a YAML file naming the scheduler "
                   "(scheduler: ADDRESS) and, optionally, its TLS files")
    p.add_argument("--move-after", type=float, metavar="SECONDS", help="on a cluster: a host gone this long "
                   "has its jobs moved to a live host of its kind (resource kind-NAME; default 600)")


def on_cluster(args) -> bool:
    cluster = bool(getattr(args, "scheduler", None) or getattr(args, "cluster_file", None))
    if getattr(args, "move_after", None) is not None and not cluster:
        raise ClaimlabError("--move-after: it moves jobs between cluster hosts, so it goes with --scheduler "
                            "or --cluster-file")
    return cluster
