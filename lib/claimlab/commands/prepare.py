"""`claimlab prepare`: load the experiments' tables into the data-directory cache, so runs start from a copy."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import params as params_mod
from ..errors import Interrupted, signals_raise
from . import params_paths

NAME = "prepare"


def add_parser(sub) -> None:
    pp = sub.add_parser(NAME, help="load the experiments' tables into the data-directory cache",
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


def main(args) -> int:
    from ..campaign import check_targets, per_target
    from ..preload import preload

    def say(line: str) -> None:
        print(f"prepare: {line}", file=sys.stderr)

    exps = {path.stem: params_mod.load(path, args.profile) for path in params_paths(args.params)}
    if args.targets:
        check_targets(exps, args.targets, "--target")
    try:
        # From the first program it runs: a SIGTERM while `mariadbd --version` said whether a target
        # can run here took the default action (exit -15, no word) before preload's own handler.
        with signals_raise():
            for name, exp in exps.items():
                for one in per_target(name, exp, args.targets or list(exp.targets), say):
                    for p in preload(one, work_root=args.work, log=say):
                        print(f"{p.experiment} {p.target} {p.cell}: {p.outcome()}")
    except Interrupted as exc:   # its server is stopped; what is cached is whole
        exc.advice = ("the tables loaded before the interrupt stay in the cache; the same command loads the rest",)
        raise
    return 0
