"""C2's scan outside the harness: does a collation ratio depend on claimlab's way of loading and
measuring, or only on the server, the processor and the table?

    python bench/c2_standalone.py                          # MySQL 9.7, 1,000,000 rows, 512M pool
    python bench/c2_standalone.py --rows 200000 --target mariadb
    python bench/c2_standalone.py --restart --per-table-connections

One server started in a scratch directory (claimlab's launcher, the params file's target), every
collation's table loaded into one schema by one connection, then `--rounds` rounds of the bug's
query on every table in a random order per round (seeded), none of claimlab's meters, probes or
cached data directories. Prints nanoseconds per row (the fastest and the lower quartile of the
rounds after the first three) and each collation's ratio to utf8mb3_general_ci. Written on
2026-11-25, when the family-26 host's harness runs read MySQL 9.7's utf8mb4_general/utf8mb3 at
0.91 and 0900_ai_ci/utf8mb3 at 1.31 with 400,000 and 1,000,000 rows (README, "The quick tables'
size"), and this script read 0.99-1.00 and 1.44-1.46 at 1,000,000: the cause lies in the
harness's set-up, not (only) in the table's size.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLES = (("latin1_swedish_ci", "latin1"), ("utf8mb3_general_ci", "utf8mb3"),
          ("utf8mb4_general_ci", "utf8mb4"), ("utf8mb4_unicode_ci", "utf8mb4"))
UCA = {"mysql": "utf8mb4_0900_ai_ci", "mariadb": "utf8mb4_uca1400_ai_ci"}
QUERY = "SELECT COUNT(*) FROM {table} WHERE a = REPEAT('abc',15)"


def main(argv=None) -> int:
    from claimlab import params
    from claimlab.servers import Launcher, ServerOptions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="mysql", choices=("mysql", "mariadb"))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--pool", default="512M", help="innodb_buffer_pool_size (C2's params: 512M)")
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--restart", action="store_true", help="restart the server between load and scans")
    ap.add_argument("--per-table-connections", action="store_true",
                    help="scan each table on a connection of its own, as the harness does")
    args = ap.parse_args(argv)
    target = params.load(ROOT / "params" / "collation_cost.yaml", "quick").targets[args.target]
    tables = [*TABLES, (UCA[args.target], "utf8mb4")]
    with tempfile.TemporaryDirectory() as tmp:
        server = Launcher(Path(tmp)).prepare(target, ServerOptions(innodb_buffer_pool_size=args.pool))
        server.start()
        try:
            _load(server, tables, args.rows)
            if args.restart:
                server.stop()
                server.start()
            times = _scan(server, tables, args.rows, args.rounds, args.per_table_connections)
        finally:
            server.stop()
    base = min(times["utf8mb3_general_ci"])
    for collation, _ in tables:
        fastest = sorted(times[collation])
        print(f"{collation:24s} ns/row fastest {fastest[0]:7.1f}  lower quartile {fastest[len(fastest) // 4]:7.1f}"
              f"  / utf8mb3_general_ci {fastest[0] / base:.3f}")
    return 0


def _load(server, tables, rows: int) -> None:
    conn = server.connect()
    cur = conn.cursor()
    cur.execute("CREATE DATABASE claimlab_standalone")
    cur.execute("USE claimlab_standalone")
    batch = ",".join(["(REPEAT('abc',15))"] * 1000)
    for collation, charset in tables:
        cur.execute(f"CREATE TABLE t_{collation} (a VARCHAR(50) CHARACTER SET {charset} COLLATE {collation}) "
                    "ENGINE=InnoDB")
        for _ in range(rows // 1000):
            cur.execute(f"INSERT INTO t_{collation} VALUES {batch}")
        conn.commit()
    conn.close()


def _scan(server, tables, rows: int, rounds: int, per_table: bool) -> dict[str, list[float]]:
    conns = [server.connect() for _ in (tables if per_table else tables[:1])]
    cursors = {}
    for index, (collation, _) in enumerate(tables):
        cursors[collation] = conns[index if per_table else 0].cursor()
        cursors[collation].execute("USE claimlab_standalone")
    times: dict[str, list[float]] = {collation: [] for collation, _ in tables}
    for round_ in range(rounds):
        order = list(tables)
        random.Random(round_).shuffle(order)
        for collation, _ in order:
            cur = cursors[collation]
            start = time.perf_counter()
            cur.execute(QUERY.format(table=f"t_{collation}"))
            (count,), = cur.fetchall()
            elapsed = time.perf_counter() - start
            if count != rows:
                raise SystemExit(f"c2_standalone: t_{collation} matched {count} rows, expected {rows}")
            if round_ >= 3:
                times[collation].append(elapsed / rows * 1e9)
    for conn in conns:
        conn.close()
    return times


if __name__ == "__main__":
    sys.exit(main())
