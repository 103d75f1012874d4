"""What claimlab adds around the measured work, as a share of a run's wall time.

    python bench/overhead.py                 # run every experiment's quick profile, then report
    python bench/overhead.py --run RUN_ID..  # report on stored runs only

Measured time is the sum of the measured spans (their start/end stamps; the levels of an interleaved
burst share one). The rest is split
into server start (including reading back its variables), load, warm-up, the wait for a
sequential look (what of it the start and warm-up did not cover), the speed probes (and
their calibration), the quiet check, stop, saving a loaded data directory to the cache, the gaps
between measurements (resource snapshots, storing a row and its fsync) and everything else
(planning, provenance, cleanup). The witness's cost is also given as a share of measured time.
All figures come from one run each: ratios within a run, not timings to compare across machines.
A second table sums each claim's runs (one per server): the claim's overhead.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import pandas as pd

from claimlab import campaign, params, runner
from claimlab.errors import ClaimlabError
from claimlab.store import find_run, read_jsonl, read_manifest, read_results

ROOT = Path(__file__).resolve().parents[1]


def _ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def overhead(run_dir: Path) -> dict:
    manifest = read_manifest(run_dir)
    df = read_results(run_dir, accept_modified=True)
    # one row per measured span: the levels of an interleaved burst share theirs (and its probes)
    spans = ["repetition", "attempt", "started_at", "ended_at"]
    per_measurement = df.drop_duplicates(spans)
    measured = sum((_ts(e) - _ts(s)).total_seconds()
                   for s, e in zip(per_measurement["started_at"], per_measurement["ended_at"]))
    wall = (_ts(manifest["finished_at"]) - _ts(manifest["created_at"])).total_seconds()
    # each unit's phases, and the wait for the last unit's servers (a unit's own shutdown is
    # awaited by the next unit, in its stop_s)
    phases = pd.DataFrame([e["phases"] for e in read_jsonl(run_dir / "events.jsonl")
                           if e["event"] in ("unit_done", "last_stop")]).sum()
    row = {"experiment": manifest["experiment"], "profile": manifest["profile"],
           "run_id": manifest["run_id"], "wall_s": wall, "measured_s": measured}
    for phase in PHASES:
        row[phase] = float(phases.get(phase, 0.0))
    row["gaps_s"] = float(phases.get("measure_s", 0.0)) - measured
    row["other_s"] = wall - measured - sum(row[p] for p in (*PHASES, "gaps_s"))
    row["overhead_share"] = 1 - measured / wall
    probes = _probe_seconds(df, spans)
    row["probe_share_of_measured"] = probes / measured if measured else float("nan")
    return row


def _probe_seconds(df: pd.DataFrame, spans: list[str]) -> float:
    """Time spent probing: every span's probes, once each. A probe that closed one measurement
    and opened the next on the same server is stored twice (as that one's after and this one's
    before, the same value) and counted once."""
    probe = df[df["metric"].isin(["probe_before_s", "probe_after_s"])].drop_duplicates([*spans, "metric"])
    if probe.empty:
        return 0.0
    wide = probe.pivot_table(index=[*spans, "seq"], columns="metric", values="value",
                             aggfunc="first").reset_index().sort_values("started_at")
    total = 0.0
    for _, unit in wide.groupby(["seq", "attempt"]):
        previous = None
        for before, after in zip(unit["probe_before_s"], unit["probe_after_s"]):
            total += after + (0.0 if before == previous else before)
            previous = after
    return total


PHASES = ("place_s", "start_s", "prepare_s", "warmup_s", "look_s", "probe_s", "quiet_s", "stop_s", "cache_s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs="+", default=None, help="stored run ids to report on (no server)")
    ap.add_argument("--profile", default="quick", choices=params.PROFILES)
    ap.add_argument("--data", type=Path, help="where runs are read (default: runs/, then data/raw) and written (runs/)")
    ap.add_argument("--target", help="run on this target (default: the params file's)")
    args = ap.parse_args(argv)
    if args.run:
        dirs = [find_run(r, args.data) for r in args.run]
    else:
        dirs = []
        for path in sorted((ROOT / "params").glob("*.yaml")):
            exp = params.load(path, args.profile)
            if args.target:
                if args.target not in exp.targets:
                    continue
                exp = params.with_default_target(exp, args.target, "--target")
            outcome = runner.run(exp, data_root=args.data, progress=sys.stderr.isatty(),
                                 should_stop=campaign.should_stop(exp))
            dirs.append(outcome.path)
    table = pd.DataFrame([overhead(d) for d in dirs])
    shares = table.assign(**{c.replace("_s", "_share"): table[c] / table["wall_s"]
                             for c in (*PHASES, "gaps_s", "other_s")})
    cols = ["experiment", "profile", "wall_s", "measured_s", "overhead_share",
            *(c.replace("_s", "_share") for c in (*PHASES, "gaps_s", "other_s")), "probe_share_of_measured"]
    print(shares[cols].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print("\nper claim (its runs on every server together):")
    print(per_claim(table).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def per_claim(table: pd.DataFrame) -> pd.DataFrame:
    """A claim's overhead: its runs' wall and measured times summed (the goal is <= 25% of each
    claim's wall time; a claim runs once per server)."""
    out = table.groupby(["experiment", "profile"], as_index=False).agg(
        wall_s=("wall_s", "sum"), measured_s=("measured_s", "sum"), runs=("run_id", "size"))
    return out.assign(overhead_share=1 - out["measured_s"] / out["wall_s"])


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClaimlabError as exc:   # one line, as the command line does
        sys.exit(f"overhead: {exc}")
