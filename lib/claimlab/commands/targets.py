"""`claimlab targets`: what each declared target would run here, or exactly what is missing."""

from __future__ import annotations

from .. import params as params_mod
from ..errors import ClaimlabError, TargetUnavailable
from . import params_paths

NAME = "targets"


def add_parser(sub) -> None:
    t = sub.add_parser(NAME, help="what servers are available here, and why not",
                       description="For each target in the params files, say what would run or "
                                   "exactly what is missing.")
    t.add_argument("params", nargs="*", help="names or paths (default: every file in params/)")


def main(args) -> int:
    from ..servers import check_available
    from ..workloads import sysbench_binary
    seen = set()
    worst = 0
    for path in params_paths(args.params):
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
