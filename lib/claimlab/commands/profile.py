"""`claimlab profile`: flame graphs and instruction counts per condition."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .. import params as params_mod

NAME = "profile"
STARTS_SERVERS = True   # reaps the servers a killed claimlab left, then runs under signals_raise


def add_parser(sub) -> None:
    pr = sub.add_parser(NAME, help="flame graphs and instruction counts per condition",
                        description="For each condition of an ablation (slow, fast) or a claim "
                                    "experiment, sample the server with perf during the measured phase "
                                    "(flame graph SVG, differential, top functions) and count one "
                                    "statement's instructions under callgrind. With --run, add the "
                                    "instruction counts a stored run's CPU evidence lacks instead.")
    pr.add_argument("params", help="ablation name (params/ablation/) or experiment name (params/)")
    pr.add_argument("--profile", default="smoke", choices=params_mod.PROFILES,
                    help="sizes the workload (default smoke)")
    pr.add_argument("--target", metavar="NAME",
                    help="an experiment's target to profile (default: design.target, else its first)")
    pr.add_argument("--out", type=Path, default=Path("profiles"), metavar="DIR",
                    help="where SVGs, folded stacks and tables go (default profiles/)")
    pr.add_argument("--iterations", type=int, default=5, help="measured iterations sampled (default 5)")
    pr.add_argument("--no-perf", action="store_true", help="skip sampling")
    pr.add_argument("--no-callgrind", action="store_true", help="skip instruction counts")
    pr.add_argument("--work", type=Path, metavar="DIR", help="scratch space (default: a temporary directory)")
    pr.add_argument("--run", metavar="RUN_ID",
                    help="add the instruction counts (callgrind, per condition and per function) that this "
                         "run's stored CPU evidence lacks, on the run's own target and server build: new "
                         "files in its evidence/, listed under `added` in evidence.json; nothing stored is "
                         "rewritten, and a second add is refused (sized as the evidence was: --profile, "
                         "--out and --iterations do not apply)")


def main(args) -> int:
    if args.run:
        return _add(args)
    import pandas as pd

    from .. import instructions, profiling
    from ..servers import Launcher
    conditions = profiling.conditions_of(args.params, args.profile, target=args.target)
    args.out.mkdir(parents=True, exist_ok=True)
    profiles, counts, tables = [], [], {}
    skipped = profiling.flamegraph_skip()   # without Rust (no inferno): one line, the rest runs
    with tempfile.TemporaryDirectory(prefix="claimlab-profile-", dir=args.work) as work:
        launcher = Launcher(Path(work))
        for c in conditions:
            if not args.no_perf:
                if c.target.name not in tables:
                    tables[c.target.name] = profiling.names_for(c.target)
                prof = profiling.profile_condition(launcher, c.target, c.options, c.workload, c.name,
                                                   args.out, iterations=args.iterations,
                                                   names=tables[c.target.name])
                profiles.append(prof)
                drawn = "" if skipped else f", flame graph {profiling.flamegraph(prof, args.out / f'{c.name}.svg')}"
                print(f"{c.name}: {prof.samples} samples{drawn}")
            if not args.no_callgrind and not instructions.countable(c.workload):
                print(f"{c.name}: no instruction counts ({c.workload.kind} with prepared statements)")
            elif not args.no_callgrind:
                ic = instructions.count_instructions(launcher, c.target, c.options, c.workload, c.name,
                                                  Path(work) / "callgrind")
                counts.append(ic)
                print(f"{c.name}: {ic.own_per_row:,.0f} instructions per {ic.statement.per} in the statement's thread "
                      f"(spread {ic.own_spread:.3%}), {ic.per_row:,.0f} in all threads "
                      f"(spread {ic.relative_spread:.3%}) over {len(ic.counts)} runs")
    if skipped and profiles:
        print(skipped)
    elif len(profiles) >= 2:
        print(f"differential: {profiling.differential(profiles[0], profiles[1], args.out / 'differential.svg')}")
    if profiles:
        top = pd.concat([p.top_functions() for p in profiles])
        top.to_csv(args.out / "top_functions.csv", index=False)
        pd.concat([p.unnamed() for p in profiles]).to_csv(args.out / "unnamed.csv", index=False)
        print(top[["condition", "function", "self_share", "total_share"]].to_string(index=False))
    if counts:
        pd.DataFrame([ic.summary() for ic in counts]).to_csv(args.out / "instructions.csv", index=False)
        pd.concat([ic.top() for ic in counts]).to_csv(args.out / "instructions_top.csv", index=False)
        pd.concat([ic.function_costs() for ic in counts]).to_csv(args.out / "functions.csv", index=False)
    print(f"written to {args.out}")
    return 0


def _add(args) -> int:
    from .. import evidence
    from ..errors import ClaimlabError
    from ..store import find_run
    if args.no_callgrind:
        raise ClaimlabError("--run adds instruction counts: it cannot be combined with --no-callgrind")
    run_dir = find_run(args.run)
    ev = evidence.add_instructions(args.params, run_dir, target=args.target)
    added = ev.meta[evidence.ADDED]
    print(f"added instruction counts of {', '.join(added['conditions'])} to {run_dir / evidence.DIRECTORY} "
          f"({', '.join(added['checksums'])})")
    return 0
