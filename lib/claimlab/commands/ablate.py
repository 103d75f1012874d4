"""`claimlab ablate`: each slow-vs-fast difference switched alone and cumulatively, and its share of the gap."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import params as params_mod
from ..errors import Interrupted

NAME = "ablate"
STARTS_SERVERS = True   # reaps the servers a killed claimlab left, then runs under signals_raise


def add_parser(sub) -> None:
    ab = sub.add_parser(NAME, help="switch each slow-vs-fast difference and attribute the gap",
                        description="Run params/ablation/NAME.yaml (or a path): every differing option "
                                    "switched to the fast value alone and cumulatively, interleaved and "
                                    "repeated; prints each option's share of the gap with its interval.")
    ab.add_argument("ablation", help="ablation name in params/ablation/ or a path")
    ab.add_argument("--profile", default="quick", choices=params_mod.PROFILES, help="smoke, quick (default) or full")
    ab.add_argument("--data", type=Path, metavar="DIR", help="where new runs go (default runs/)")
    ab.add_argument("--work", type=Path, metavar="DIR", help="scratch space (default work/)")
    ab.add_argument("--table", type=Path, metavar="CSV", help="write the attribution table here")
    ab.add_argument("--no-progress", action="store_true", help="no progress bar")
    ab.add_argument("--target", metavar="NAME", help="which of the file's targets (default: the first)")


def writes_data(args) -> bool:
    return True


def main(args) -> int:
    from .. import ablation, attribution
    from ..store import read_results
    abl = ablation.load(ablation.find(args.ablation), args.profile, args.target)
    try:
        outcome = ablation.run(abl, data_root=args.data, work_root=args.work,
                               progress=not args.no_progress and sys.stderr.isatty())
    except Interrupted as exc:   # the runner named the cut run; `claimlab run` cannot finish an ablation
        cut = getattr(exc, "run_id", "")
        exc.advice = (f"{f'run {cut} keeps what was measured, but ' if cut else ''}an ablation is not resumed: "
                      f"claimlab ablate {args.ablation} measures it again",)
        raise
    table = attribution.attribute(read_results(outcome.path), abl)
    for r in table.itertuples(index=False):
        print(f"{r.kind:<10} {r.option:<28} ratio {r.ratio:6.3f} [{r.ratio_lo:.3f}, {r.ratio_hi:.3f}]  "
              f"share {r.share:6.1%} [{r.share_lo:.1%}, {r.share_hi:.1%}]")
    if table["note"].iloc[0]:
        print(f"note: {table['note'].iloc[0]}")
    print(f"largest alone: {attribution.largest(table)}; run {outcome.run_id} in {outcome.path}")
    if args.table:
        table.to_csv(args.table, index=False)
        print(f"table written to {args.table}")
    return 0
