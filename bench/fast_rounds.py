"""Does adding rounds to a server start short of fast-state values (`design.fast_rounds`) narrow
C2's intervals, and at what cost? Read from runs made with the rule, each against itself.

    python bench/fast_rounds.py RUN [RUN ...]                    # stored C2 runs made with fast_rounds
    python bench/fast_rounds.py RUN ... --variants 0:10 3:16 3:20 --out data/c2_fast_rounds.json

Alternating runs with and without the rule would compare different hours of a host whose slow
state comes and goes over minutes (2026-11-26: two fixed runs read ±1.4-1.7% in a quiet quarter
of an hour, the rule's ±2.4-2.8% in a slow one). A run made with the rule holds every round a
smaller rule would have measured, in the order measured, so each variant is replayed on the same
scans: unit by unit, round by round, `FastRounds.short` asked as the runner asks it, the rows of
the rounds it would not have run left out. Variant `count:cap`; `0:N` is the fixed design of the
first N rounds. Each variant's verdict table comes from `stats.analyze`, as every report's does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from claimlab import stats
from claimlab.claims import load_claims
from claimlab.errors import ClaimlabError
from claimlab.stopping import FastRounds
from claimlab.store import find_run, read_manifest, read_results

ROOT = Path(__file__).resolve().parents[1]


def replay(results: pd.DataFrame, rule: FastRounds | None, iterations: int) -> pd.DataFrame:
    """The rows a run would hold had it been made with `rule` (None: `iterations` rounds, fixed).
    The rule must ask no more than the run's own did: its rounds are all the run has."""
    if rule is None:
        return results[results["iteration"] < iterations]
    scans = results[results["metric"] == rule.metric].sort_values("started_at")
    earlier: dict[str, list[float]] = {}   # condition -> the fastest value of each earlier start
    last_round: dict[int, int] = {}   # seq -> the last round the rule would have run
    for seq, unit in scans.groupby("seq", sort=True):
        values: dict[tuple, list[float]] = {}
        for rnd, part in unit.groupby("iteration", sort=True):
            for row in part.itertuples():
                values.setdefault((row.repetition, row.condition), []).append(row.value)
            last_round[seq] = rnd
            if rnd + 1 >= iterations and not rule.another(rnd + 1, values, rule.levels(values, earlier)):
                break
        for (_, condition), seen in values.items():
            earlier.setdefault(condition, []).append(rule.best(seen))
    return results[results["iteration"] <= results["seq"].map(last_round)]


def variant(text: str) -> tuple[int, int]:
    count, _, cap = text.partition(":")
    try:
        return int(count), int(cap)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a variant is COUNT:CAP, e.g. 3:20 (0:10: ten fixed rounds)") \
            from None


def table(dirs: list[Path], variants: list[tuple[int, int]]) -> pd.DataFrame:
    claims = load_claims(ROOT / "data" / "claims.yaml")
    rows = []
    for path in dirs:
        design = read_manifest(path)["design"]
        made = design.get("fast_rounds")
        if not made:
            raise ClaimlabError(f"{path}: made without design.fast_rounds; nothing to replay")
        own = FastRounds(**made)
        results = read_results(path)
        claim = claims[str(results["claim"].iloc[0])]
        scans = (results["metric"] == own.metric).sum()
        for count, cap in variants:
            if not count and cap > design["iterations"]:
                raise ClaimlabError(f"{path}: every start ran {design['iterations']} rounds at least, "
                                    f"not {cap}; a fixed variant keeps at most that many")
            if count > own.count or cap > own.max_iterations:
                raise ClaimlabError(f"{path}: made with count {own.count}, cap {own.max_iterations}; "
                                    f"{count}:{cap} asks for rounds it never ran")
            rule = FastRounds(own.metric, own.fastest, count, cap) if count else None
            kept = replay(results, rule, design["iterations"] if count else cap)
            for r in stats.analyze(kept, claim).itertuples():
                rows.append({"run": path.name, "variant": f"{count}:{cap}", "comparison": r.comparison,
                             "target": r.target, "estimate": r.estimate, "ci_low": r.ci_low,
                             "ci_high": r.ci_high, "half_width_pct": 100 * ((r.ci_high / r.ci_low) ** 0.5 - 1),
                             "starts": r.n_blocks, "scans_share": (kept["metric"] == own.metric).sum() / scans})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", nargs="+", help="C2 runs made with design.fast_rounds (ids or paths)")
    ap.add_argument("--variants", nargs="+", type=variant, default=[(0, 10), (2, 14), (3, 16), (3, 20)],
                    help="COUNT:CAP each (0:N: N fixed rounds); default 0:10 2:14 3:16 3:20")
    ap.add_argument("--data", type=Path, help="where the runs are stored (default runs/ and data/raw)")
    ap.add_argument("--out", type=Path, help="also write the table as JSON")
    args = ap.parse_args(argv)
    try:
        out = table([find_run(r, args.data) for r in args.run], args.variants)
    except ClaimlabError as exc:
        print(f"fast_rounds: {exc}", file=sys.stderr)
        return 2
    cols = ["run", "variant", "comparison", "estimate", "half_width_pct", "starts", "scans_share"]
    print(out[cols].to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    if args.out:
        document = {"runs": list(out["run"].unique()), "variants": [f"{c}:{m}" for c, m in args.variants],
                    "table": out.to_dict("records")}
        args.out.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
