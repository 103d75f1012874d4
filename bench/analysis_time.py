"""How long the analysis of stored runs takes, against another commit's code, in one run.

    python bench/analysis_time.py --against HEAD~3                  # the published runs, five rounds
    python bench/analysis_time.py --against HEAD~3 --run RUN_ID ... --rounds 3

What is timed is `bench/precision.py`'s table of the named runs (`stats.analyze` of every run, as
`claimlab analyze`, the reports and the tests read them), by this tree's code and by the code of
`--against` (checked out in a temporary git worktree), each in a fresh Python process, the two
alternated round by round in a random order from `--seed`: a virtual CPU's speed can change by
about 2x for seconds at a time, so only a ratio of times taken side by side says anything. Both
read the same run directories (this tree's `data/raw`). Printed: each process's seconds, and the
ratio this tree / `--against` per round and its median.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in the tree under test: its claimlab and its bench/precision.py, this tree's runs.
_TIMER = """
import sys, time
tree, data, run_ids = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
sys.path[:0] = [tree + "/lib", tree + "/bench"]
import precision
import claimlab
assert claimlab.__file__.startswith(tree), claimlab.__file__
from pathlib import Path
dirs = [next(Path(data).glob("*/" + r)) for r in run_ids]
began = time.perf_counter()
precision.table(dirs)
print(time.perf_counter() - began)
"""


def time_tree(tree: Path, run_ids: list[str]) -> float:
    """Seconds one fresh process of `tree` takes for the runs' table (imports not counted)."""
    done = subprocess.run([sys.executable, "-c", _TIMER, str(tree), str(ROOT / "data" / "raw"), ",".join(run_ids)],
                          capture_output=True, text=True, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"analysis_time: {tree}: {done.stderr.strip().splitlines()[-1]}")
    return float(done.stdout.strip().splitlines()[-1])


def alternate(trees: dict[str, Path], run_ids: list[str], rounds: int, seed: int) -> list[dict[str, float]]:
    """Each round times every tree once, in an order drawn from `seed`."""
    rng = random.Random(seed)
    out = []
    for _ in range(rounds):
        order = list(trees)
        rng.shuffle(order)
        out.append({name: time_tree(trees[name], run_ids) for name in order})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the commit to compare with (any git revision)")
    parser.add_argument("--run", nargs="+", default=None, help="stored run ids (default: the published runs)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds takes 1 or more")
    published = json.loads((ROOT / "data" / "published_runs.json").read_text())
    run_ids = args.run or [run_id for ids in published.values() for run_id in ids]
    with tempfile.TemporaryDirectory(prefix="claimlab-against-") as scratch:
        other = Path(scratch) / "tree"
        added = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--no-checkout", str(other),
                                args.against], capture_output=True, text=True)
        if added.returncode != 0:
            raise SystemExit(f"analysis_time: --against {args.against}: {added.stderr.strip().splitlines()[-1]}")
        try:
            # the code only: the runs are read from this tree
            subprocess.run(["git", "-C", str(other), "checkout", "HEAD", "--", "lib", "bench", "data/claims.yaml"],
                           check=True, capture_output=True)
            times = alternate({"this": ROOT, "against": other}, run_ids, args.rounds, args.seed)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)], capture_output=True)
    print(f"{'round':>5} {'this_s':>8} {'against_s':>10} {'ratio':>6}")
    ratios = []
    for index, pair in enumerate(times, 1):
        ratios.append(pair["this"] / pair["against"])
        print(f"{index:>5} {pair['this']:>8.2f} {pair['against']:>10.2f} {ratios[-1]:>6.3f}")
    print(f"{len(run_ids)} runs: this tree / {args.against} median {statistics.median(ratios):.3f} "
          f"(range {min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
