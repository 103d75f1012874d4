"""Does a fresh copy of the server binary per block (`design.place_binary`) keep the binary's
placement in physical memory out of the runs' estimates?

    python bench/placement.py --target mariadb --pairs 5            # as root (it evicts the binary)
    python bench/placement.py --target mariadb --pairs 4 --blocks 12   # a fixed design, not sequential
    python bench/placement.py --target mysql --pairs 3 --data data/raw --out data/c2_placement.json
    python bench/placement.py --run OFF1 ON1 OFF2 ON2 ...           # stored runs only, no server

Pairs of quick C2 runs, one with one placement for the whole run (`place_binary: false`, the
servers started from the page cache's copy of the binary) and one with a fresh copy per block, in
alternating order. Before each pair the binary's page-cache placement is drawn anew (evicted, then
read back page by page in a random order, `c2_standalone._scatter`), as the VM's reclaim does
between runs (data/README.md, "The run-level states are placements"). For each arm, the runs'
estimates and `stats.run_spread`: the between-run and within-run SD of the block log ratios and
the ANOVA p that the runs' true ratios are equal. Runs that differ by more than their blocks
explain (small p) carry a run-level state; a fresh copy per block should leave none.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import pandas as pd

from claimlab import params, runner, stats
from claimlab.claims import load_claims
from claimlab.report import analyze_runs
from claimlab.servers import installation
from claimlab.store import find_run, read_manifest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from c2_standalone import _scatter  # noqa: E402  (a sibling script's step, not a library's)

ROOT = Path(__file__).resolve().parents[1]
ARMS = {False: "one placement a run", True: "one per block"}


def experiment(target: str, place: bool, blocks: int | None = None) -> params.Experiment:
    """C2's quick design on `target`, with or without a copy per block; `blocks`: that many fixed
    blocks instead of the profile's (sequential) number."""
    exp = params.with_default_target(params.load(ROOT / "params" / "collation_cost.yaml", "quick"),
                                     target, "--target")
    design = dataclasses.replace(exp.design, place_binary=place)
    if blocks:
        design = dataclasses.replace(design, sequential=None, repetitions=blocks * design.starts_per_block)
    return dataclasses.replace(exp, design=design)


def measure(target: str, pairs: int, blocks: int | None, data: Path | None) -> list[Path]:
    """Alternated pairs of runs, the binary's page-cache placement drawn anew before each pair."""
    binary = installation(experiment(target, True).targets[target]).binary
    dirs = []
    for pair in range(pairs):
        _scatter(binary, seed=pair)
        for place in (pair % 2 == 0, pair % 2 == 1):
            print(f"pair {pair + 1}/{pairs}: {ARMS[place]}", file=sys.stderr)
            exp = experiment(target, place, blocks)
            outcome = runner.run(exp, data_root=data, progress=sys.stderr.isatty(),
                                 should_stop=stats.stopping_for(exp))
            dirs.append(outcome.path)
    return dirs


def spread(dirs: list[Path]) -> pd.DataFrame:
    """`stats.run_spread` of each arm's runs (the arm read from each run's recorded design), with
    the runs' estimates (`stats.run_levels`) as a tuple."""
    claim = load_claims(ROOT / "data" / "claims.yaml")["C2"]
    arms: dict[bool, list[str]] = {}
    for path in dirs:
        manifest = read_manifest(path)
        arms.setdefault(bool(manifest["design"].get("place_binary", False)), []).append(path.name)
    frames = []
    for place, runs in sorted(arms.items()):
        (analysis,) = analyze_runs(runs)
        spread, levels = stats.between_runs(analysis.results, claim)
        estimates = levels.groupby(["comparison", "target"])["estimate"]
        frames.append(spread
                      .join(estimates.agg(tuple).rename("run_estimates"), on=["comparison", "target"])
                      .assign(arm=ARMS[place], runs=" ".join(runs)))
    return pd.concat(frames, ignore_index=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="mariadb", help="the params file's target to run (default mariadb)")
    ap.add_argument("--pairs", type=int, default=5, help="pairs of runs, one of each arm (default 5)")
    ap.add_argument("--blocks", type=int, help="fixed blocks per run instead of the profile's design")
    ap.add_argument("--run", nargs="+", help="stored runs to read instead of measuring")
    ap.add_argument("--data", type=Path, help="where runs are stored (default runs/; data/raw to ship)")
    ap.add_argument("--out", type=Path, help="also write the table as JSON")
    args = ap.parse_args(argv)
    if args.run:
        dirs = [find_run(r, args.data) for r in args.run]
    else:
        dirs = measure(args.target, args.pairs, args.blocks, args.data)
    table = spread(dirs)
    cols = ["arm", "target", "comparison", "run_estimates", "between_run_sd", "within_run_sd", "p_runs_differ"]
    print(table[cols].to_string(index=False, float_format=lambda x: f"{x:.3g}",
                                formatters={"run_estimates": lambda xs: ", ".join(f"{x:.4g}" for x in xs)}))
    if args.out:
        args.out.write_text(json.dumps(table.to_dict("records"), indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
