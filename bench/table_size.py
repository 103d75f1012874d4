"""Does a shorter C2 scan cost precision? C2's quick tables at two sizes, all in one server start
and alternated scan by scan, so both sizes meet the same machine states; each size analysed as
the claim's own analysis reads a run (`stats.analyze`, claim C2).

    python bench/table_size.py                                   # 200,000 and 400,000 rows, MariaDB then MySQL, twice
    python bench/table_size.py --target mariadb --runs 1 --rows 100000 400000
    python bench/table_size.py --run 20261127T132808Z-729d6a     # stored runs again (no server)

The experiment is C2's params file (`params/collation_cost.yaml`: targets, workload, the quick
profile's collations) with a second factor, `size`; runs are stored as experiment `table_size`
under `--data` (default runs/). Per run and size: measured seconds, and per comparison the
estimate, the 95% half-width, the starts counted, the blocks' SD and the share of scans in the
fast state. What it read: data/README.md, "Half the rows, in a milder hour".
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from claimlab import params, runner, stats
from claimlab.claims import load_claims
from claimlab.errors import ClaimlabError
from claimlab.schema import read_yaml
from claimlab.store import find_run, read_results

ROOT = Path(__file__).resolve().parents[1]
NAME = "table_size"


def experiment_document(rows: list[int], starts: int, rounds: int, seed: int) -> dict:
    """C2's params with a `size` factor: one level per table size (`r<rows>`)."""
    c2 = read_yaml(ROOT / "params" / "collation_cost.yaml")
    quick = c2["profiles"]["quick"]["levels"]["collation"]
    return {
        "claim": c2["claim"],
        "description": f"C2's scan at {' and '.join(f'{n:,}' for n in rows)} rows, alternated in one server start.",
        "targets": c2["targets"],
        "workloads": c2["workloads"],
        "factors": {"collation": {level: c2["factors"]["collation"][level] for level in quick},
                    "size": {f"r{n}": {"workloads": {"varchar_scan": {"rows": n}}} for n in rows}},
        "design": {"repetitions": starts, "warmup": 1, "iterations": rounds, "seed": seed},
    }


def by_size(run_dir: Path) -> pd.DataFrame:
    """One row per size and comparison of a stored run."""
    results = read_results(run_dir)
    claim = load_claims(ROOT / "data" / "claims.yaml")["C2"]
    rows = []
    for size, sub in results.groupby("size", sort=False):
        sub = sub.drop(columns="size").assign(experiment="collation_cost",
                                              condition=sub["condition"].str.replace(r",?size=r\d+", "", regex=True))
        measured = sub.loc[sub["metric"] == "elapsed_s", "value"].sum()
        for row in stats.analyze(sub, claim).itertuples(index=False):
            rows.append({"run_id": run_dir.name, "target": sub["target"].iloc[0], "rows": int(size[1:]),
                         "measured_s": measured, "comparison": row.comparison, "estimate": row.estimate,
                         "half_width": (row.ci_high - row.ci_low) / 2 / row.estimate, "starts": row.n_blocks,
                         "sd_block": row.sd_unit, "fast_share": row.fast_share})
    return pd.DataFrame(rows).sort_values(["rows", "comparison"], kind="stable")


def _shown(value: float, form: str) -> str:
    return "—" if pd.isna(value) else form.format(value)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs="+", help="stored run ids to analyse (no server)")
    ap.add_argument("--target", nargs="+", default=["mariadb", "mysql"], help="targets, run in turn")
    ap.add_argument("--runs", type=int, default=2, help="runs per target, alternating targets (default 2)")
    ap.add_argument("--rows", type=int, nargs=2, default=[200_000, 400_000], help="the two table sizes")
    ap.add_argument("--starts", type=int, default=10, help="server starts a run (default 10)")
    ap.add_argument("--rounds", type=int, default=10, help="rounds a start, every table once a round (default 10)")
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--data", type=Path, help="where runs are stored (default runs/)")
    ap.add_argument("--work", type=Path, help="scratch space for data directories (default work/)")
    args = ap.parse_args(argv)
    if args.run:
        dirs = [find_run(run_id, args.data) for run_id in args.run]
    else:
        if args.rows[0] == args.rows[1] or min(args.rows) < 1000 or args.runs < 1:
            ap.error("--rows: two different sizes of at least 1000 rows; --runs: at least 1")
        document = experiment_document(args.rows, args.starts, args.rounds, args.seed)
        dirs = []
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{NAME}.yaml"
            path.write_text(yaml.safe_dump(document, sort_keys=False))
            exp = params.load(path, "quick")
            for _ in range(args.runs):
                for target in args.target:
                    one = params.with_default_target(exp, target, "--target")
                    dirs.append(runner.run(one, data_root=args.data, work_root=args.work,
                                           progress=sys.stderr.isatty()).path)
    for run_dir in dirs:
        table = by_size(run_dir)
        for (target, rows), sub in table.groupby(["target", "rows"], sort=False):
            print(f"{run_dir.name} {target} {rows:,} rows: measured {sub['measured_s'].iloc[0]:.1f} s")
            for r in sub.itertuples(index=False):   # "—": too few starts counted (two for a half-width)
                estimate, half = _shown(r.estimate, "{:.4f}"), _shown(100 * r.half_width, "{:.1f}%")
                print(f"   {r.comparison:28s} {estimate:>6} ±{half}  starts {r.starts}  "
                      f"sd {_shown(100 * r.sd_block, '{:.1f}%')}  fast {r.fast_share:.2f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClaimlabError as exc:   # one line, as the command line does
        sys.exit(f"table_size: {exc}")
