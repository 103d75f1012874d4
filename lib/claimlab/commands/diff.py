"""`claimlab diff`: two configurations' effective server variables, side by side."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .. import params as params_mod
from ..errors import ClaimlabError
from . import params_paths

NAME = "diff"
STARTS_SERVERS = True   # reaps the servers a killed claimlab left, then runs under signals_raise


def add_parser(sub) -> None:
    d = sub.add_parser(NAME, help="effective server variables of two configurations, side by side",
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


def main(args) -> int:
    from .. import ablation, variables
    from ..servers import Launcher
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


def _option_sets(pairs: list[str], source: str):
    """`--set-a log_bin=true --set-a max_connections=50`: typed options where ServerOptions has a
    field, `extra` otherwise; validated like a params file."""
    import yaml

    from ..target_params import ServerOptionsIn, server_options
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
    declared: set[str] = set()
    for path in params_paths([]):
        exp = params_mod.load(path, "quick")
        if name in exp.targets:
            return exp.targets[name]
        declared |= set(exp.targets)
    raise ClaimlabError(f"no params file in params/ declares a target named {name!r} "
                        f"(they declare: {', '.join(sorted(declared)) or 'none'})")
