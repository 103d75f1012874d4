"""What the meter's snapshots cost, back to back and right after a busy statement.

    python bench/meter_cost.py                       # both servers, 100 rounds each
    python bench/meter_cost.py --target mysql --rounds 300 --out /tmp/meter_cost.json
    python bench/meter_cost.py --read data/meter_cost_2048.json

The gaps between measurements are mostly the meter's two snapshots (`accounting.Meter`). In the
machine's slower state they took 5.3 ms (start) and 9.6 ms (stop) a measurement, against about
1.5 ms for both in the faster one, while the scans slowed only 1.3x (data/README.md, "A slower
state, 18:37-18:57"), and parts timed right after a busy statement were 10-15x slower than back
to back. This times each part of a snapshot both ways on one started server: `idle` times it with
nothing before it but the previous part; `after_busy` runs a statement of about `--busy-ms` of
server CPU (a scan's length) first, on another connection, as a measurement does. Rounds
alternate the two, in a fresh random order of parts each round, so both see the same hours.

Parts: the status counters (`server_status`: SHOW GLOBAL STATUS and the flavour's witness
queries), the server's process times (/proc, every thread), claimlab's own times (getrusage),
user processes' write counters (/proc), the machine's CPU and disk counters (/proc), a bare
round trip (`DO 0`) for scale, and the whole `Meter.start` and `Meter.stop`. Times of one run on
one machine, to read as ratios (after_busy / idle) and shares, not to compare across machines.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from claimlab import accounting, params
from claimlab.design import conditions
from claimlab.servers import Launcher

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ("idle", "after_busy")
BUSY_SQL = "SELECT BENCHMARK({n}, SHA2('claimlab meter cost', 256))"


def _parts(server, conn, probe_conn, meter) -> dict:
    kinds: dict[int, bool] = {}

    def round_trip():
        probe_conn.cursor().execute("DO 0")

    return {"status": lambda: accounting.server_status(server, conn),
            "server_times": lambda: accounting.process_times(server.pid),
            "client_times": accounting.client_times,
            "user_writes": lambda: accounting.user_write_bytes({server.pid}, kinds),
            "machine": accounting.machine,
            "round_trip": round_trip,
            "Meter.start": meter.start,
            "Meter.stop": meter.stop}


def _calibrate(cur, busy_ms: float) -> int:
    """BENCHMARK rounds for about busy_ms of server CPU, from the fastest of three trials."""
    n = 20_000
    best = min(_timed(cur, BUSY_SQL.format(n=n)) for _ in range(3))
    return max(1000, int(n * busy_ms / 1000 / best))


def _timed(cur, sql: str) -> float:
    t0 = time.perf_counter()
    cur.execute(sql)
    cur.fetchall()
    return time.perf_counter() - t0


def measure(target: str, rounds: int, busy_ms: float = 30.0, seed: int = 1) -> dict:
    exp = params.with_default_target(params.load(ROOT / "params" / "collation_cost.yaml", "quick"),
                                     target, "--target")
    cond = next(c for c in conditions(exp) if c.target == target)
    rng = random.Random(seed)
    samples = []
    made = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="claimlab-meter-cost-") as tmp, contextlib.ExitStack() as stack:
        server = Launcher(Path(tmp)).prepare(exp.targets[target], cond.server)
        server.start()
        stack.callback(server.stop)
        conn, probe_conn, busy_conn = server.connect(), server.connect(), server.connect()
        busy = busy_conn.cursor()
        n = _calibrate(busy, busy_ms)
        meter = accounting.Meter(server)
        stack.callback(meter.close)
        parts = _parts(server, conn, probe_conn, meter)
        for rnd in range(rounds):
            for setting in rng.sample(SETTINGS, len(SETTINGS)):
                for name in rng.sample(sorted(parts), len(parts)):
                    if name == "Meter.stop":
                        meter.start()   # untimed, before the busy statement, as around a measurement
                    busy_s = _timed(busy, BUSY_SQL.format(n=n)) if setting == "after_busy" else None
                    t0 = time.perf_counter()
                    parts[name]()
                    samples.append({"round": rnd, "setting": setting, "part": name,
                                    "seconds": round(time.perf_counter() - t0, 7),
                                    "busy_s": None if busy_s is None else round(busy_s, 6)})
        facts = server.facts()
    return {"target": target, "server_version": facts.version, "rounds": rounds, "busy_rounds": n,
            "busy_ms": busy_ms, "made": made, "samples": samples}


def summary(series: dict) -> list[dict]:
    """Per part: the median milliseconds idle and after a busy statement, and their ratio."""
    by: dict[tuple[str, str], list[float]] = {}
    for s in series["samples"]:
        by.setdefault((s["part"], s["setting"]), []).append(s["seconds"])
    rows = []
    for part in sorted({p for p, _ in by}):
        idle = statistics.median(by[part, "idle"]) * 1e3
        busy = statistics.median(by[part, "after_busy"]) * 1e3
        rows.append({"part": part, "idle_ms": round(idle, 4), "after_busy_ms": round(busy, 4),
                     "ratio": round(busy / idle, 2) if idle > 0 else None, "n": len(by[part, "idle"])})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", nargs="+", default=["mariadb", "mysql"],
                    help="C2's targets to start, one after the other (default: mariadb mysql)")
    ap.add_argument("--rounds", type=int, default=100, help="rounds of every part both ways (default 100)")
    ap.add_argument("--busy-ms", type=float, default=30.0,
                    help="the busy statement's length before each after_busy part (default 30, a C2 scan)")
    ap.add_argument("--read", type=Path, help="summarise a stored series instead of measuring")
    ap.add_argument("--out", type=Path, help="also write the series and their summaries as JSON")
    args = ap.parse_args(argv)
    if args.out and args.out.exists():
        sys.exit(f"{args.out}: exists; measured data is never overwritten (pick another --out)")
    if args.rounds < 1:
        sys.exit(f"--rounds: {args.rounds}: must be at least 1")
    if args.read:
        series = json.loads(args.read.read_text())
    else:
        series = [measure(t, args.rounds, args.busy_ms) for t in args.target]
    for one in series:
        one["summary"] = summary(one)
        for row in one["summary"]:
            print(json.dumps({"target": one["target"], **row}))
    if args.out:
        args.out.write_text(json.dumps(series, separators=(",", ":")) + "\n")   # 6,400 samples a server
    return 0


if __name__ == "__main__":
    sys.exit(main())
