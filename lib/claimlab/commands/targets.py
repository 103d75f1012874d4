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
    said: dict[tuple[str, str, str, str], list[str]] = {}   # one line per target, the files declaring it
    checked: dict[str, tuple[str, str]] = {}
    for path in params_paths(args.params):
        exp = params_mod.load(path, "quick")
        for name, spec in exp.targets.items():
            key = repr(spec.public())
            if key not in checked:
                try:
                    checked[key] = ("available", str(check_available(spec, download=False)))
                except (TargetUnavailable, ClaimlabError) as exc:
                    checked[key] = ("unavailable", str(exc))
            said.setdefault((checked[key][0], name, spec.kind, checked[key][1]), []).append(path.stem)
    try:
        said[("available", "sysbench", "", sysbench_binary())] = []
        worst = 0
    except ClaimlabError as exc:
        said[("unavailable", "sysbench", "", str(exc))] = []
        worst = 1
    widths = [max(len(key[i]) for key in said) for i in range(3)]
    for (status, name, kind, what), files in said.items():
        declared = f"  ({', '.join(files)})" if files else ""
        print(f"{status:<{widths[0]}}  {name:<{widths[1]}}  {kind:<{widths[2]}}  {what}{declared}")
    return worst
