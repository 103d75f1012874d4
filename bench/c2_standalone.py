"""C2's scan outside the harness: does a collation ratio depend on claimlab's way of loading and
measuring, or only on the server, the processor and the table?

    python bench/c2_standalone.py                          # MySQL 9.7, 1,000,000 rows, 512M pool
    python bench/c2_standalone.py --rows 200000 --target mariadb
    python bench/c2_standalone.py --restart --per-table-connections
    python bench/c2_standalone.py --probe 15000      # the harness's speed probe around every scan
    python bench/c2_standalone.py --schema-per-table  # the harness's layout: a schema per table
    python bench/c2_standalone.py --meter             # the harness's resource snapshots around every scan
    python bench/c2_standalone.py --schema-per-table --session   # its sessions: default schema, DO 0
    python bench/c2_standalone.py --rows 400000 --starts 40      # one line per server start, with its code address
    python bench/c2_standalone.py --rows 400000 --starts 12 --fixed-layout   # every start at one address
    python bench/c2_standalone.py --rows 400000 --move-binary    # the server binary's pages on other frames first
    python bench/c2_standalone.py --target mariadb --rows 400000 --starts 4 --move-binary scattered

One server started in a scratch directory (claimlab's launcher, the params file's target), every
collation's table loaded into one schema by one connection, then `--rounds` rounds of the bug's
query on every table in a random order per round (seeded), none of claimlab's meters, probes or
cached data directories. Prints nanoseconds per row (the fastest and the lower quartile of the
rounds after the first three) and each collation's ratio to utf8mb3_general_ci. Written on
2026-11-25, when the family-26 host's harness runs of 20:13-20:19 read MySQL 9.7's
utf8mb4_general/utf8mb3 at 0.91 and 0900_ai_ci/utf8mb3 at 1.31 with 400,000 and 1,000,000 rows,
and this script read 0.99-1.00 and 1.42-1.46 later, with each of the harness's differences and all
together. It was the machine, not the harness: the same harness run at 22:22 read 0.999 and 1.44
(data/README.md, "For half an hour, one MySQL ratio moved by 9%").
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
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
ADDR_NO_RANDOMIZE = 0x0040000    # linux/personality.h
HOLD_BYTES = 1 << 30              # held while a moved binary is read back, so it lands elsewhere
PAGE = os.sysconf("SC_PAGE_SIZE")
FRAME_PAGES = (2 << 20) // PAGE   # pages in a 2 MiB frame


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
    ap.add_argument("--schema-per-table", action="store_true",
                    help="load each table as the harness does: a schema of its own, the table named "
                         "t_scan, a claimlab_loaded marker table beside it")
    ap.add_argument("--session", action="store_true",
                    help="scan as the harness's sessions do: each table's connection has its schema as "
                         "default database, names the table unqualified, and times DO 0 after each scan "
                         "(implies --per-table-connections)")
    ap.add_argument("--meter", action="store_true",
                    help="take the harness's resource snapshots (accounting.Meter) around every scan")
    ap.add_argument("--probe", type=int, default=0, metavar="N",
                    help="run the harness's speed probe (SELECT BENCHMARK(N, SHA2(...))) on a side "
                         "connection after every scan, as the harness does (0: none)")
    ap.add_argument("--starts", type=int, default=0, metavar="N",
                    help="after loading, restart the server N times and scan after each start: one line "
                         "per start with the address its code was loaded at and each collation's fastest "
                         "scan (the summary then covers every start)")
    ap.add_argument("--fixed-layout", action="store_true",
                    help="start the servers without address space layout randomization (personality "
                         "ADDR_NO_RANDOMIZE): every start loads its code and heap at the same addresses")
    ap.add_argument("--move-binary", nargs="?", const="contiguous", choices=("contiguous", "scattered"),
                    help="before the server starts, move the server binary's page-cache pages to other "
                         "physical frames and print how many 2 MiB frames they lay in before and after "
                         "(frame numbers need root): contiguous (the default) evicts the file and reads it "
                         "back while 1 GiB is held elsewhere; scattered reads its pages back one at a time "
                         "in a random order, a page of other memory taken between them, as pages come back "
                         "after the VM's reclaim took some (every start of the run shares the placement)")
    args = ap.parse_args(argv)
    target = params.load(ROOT / "params" / "collation_cost.yaml", "quick").targets[args.target]
    if args.move_binary:
        from claimlab.servers import installation
        binary = installation(target).binary
        before = _frames(binary)
        (_move if args.move_binary == "contiguous" else _scatter)(binary)
        print(f"moved {binary}: its pages lay in {before or 'unknown'} 2 MiB frames, now in "
              f"{_frames(binary) or 'unknown'}")
    tables = [*TABLES, (UCA[args.target], "utf8mb4")]
    per_table = args.per_table_connections or args.session
    with tempfile.TemporaryDirectory() as tmp, _layout(args.fixed_layout):
        server = Launcher(Path(tmp)).prepare(target, ServerOptions(innodb_buffer_pool_size=args.pool))
        server.start()
        try:
            where = _load(server, tables, args.rows, args.schema_per_table)
            if args.restart:
                server.stop()
                server.start()
            if args.starts:
                times = {collation: [] for collation in where}
                for start in range(args.starts):
                    server.stop()
                    server.start()
                    text = _code_address(server.pid)
                    these = _scan(server, where, args.rows, args.rounds, per_table, args.probe, args.meter,
                                  args.session)
                    fastest = {collation: min(values) for collation, values in these.items()}
                    print(f"start {start} code at {text} "
                          + " ".join(f"{collation} {value:.1f}" for collation, value in fastest.items())
                          + f" unicode/general {fastest['utf8mb4_unicode_ci'] / fastest['utf8mb4_general_ci']:.3f}")
                    for collation, values in these.items():
                        times[collation] += values
            else:
                times = _scan(server, where, args.rows, args.rounds, per_table, args.probe, args.meter,
                              args.session)
        finally:
            server.stop()
    base = min(times["utf8mb3_general_ci"])
    for collation, _ in tables:
        fastest = sorted(times[collation])
        print(f"{collation:24s} ns/row fastest {fastest[0]:7.1f}  lower quartile {fastest[len(fastest) // 4]:7.1f}"
              f"  / utf8mb3_general_ci {fastest[0] / base:.3f}")
    return 0


@contextlib.contextmanager
def _layout(fixed: bool):
    """Servers started inside have a fixed address layout when `fixed`: the personality flag is
    inherited by the children this process starts, and set back when the block ends."""
    if not fixed:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    previous = libc.personality(0xFFFFFFFF)            # query
    if libc.personality(previous | ADDR_NO_RANDOMIZE) == -1:
        raise SystemExit(f"c2_standalone: personality(ADDR_NO_RANDOMIZE) refused: {os.strerror(ctypes.get_errno())}")
    try:
        yield
    finally:
        libc.personality(previous)


def _frames(path: Path) -> int | None:
    """How many 2 MiB physical frames the file's page-cache pages lie in (None when
    /proc/self/pagemap hides frame numbers, as it does from all but root, or is refused)."""
    frames = {pfn // FRAME_PAGES for pfn in _page_frames(path) or () if pfn}
    return len(frames) or None


def _page_frames(path: Path) -> list[int] | None:
    """The physical frame number of each of the file's page-cache pages, in file order (None when
    pagemap is refused; zero where it hides the number or a page is not present). Maps and
    touches every page, so a file not yet cached is read in first."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    size = path.stat().st_size
    pages = -(-size // PAGE)
    with open(path, "rb") as f:
        addr = libc.mmap(None, size, 1, 1, f.fileno(), 0)          # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            raise SystemExit(f"c2_standalone: mmap of {path} refused: {os.strerror(ctypes.get_errno())}")
        try:
            for i in range(pages):
                ctypes.string_at(addr + i * PAGE, 1)
            try:
                with open("/proc/self/pagemap", "rb") as pagemap:
                    pagemap.seek(addr // PAGE * 8)
                    entries = memoryview(pagemap.read(pages * 8)).cast("Q")
            except PermissionError:                     # some kernels refuse it outright
                return None
            return [entry & ((1 << 55) - 1) if entry >> 63 else 0 for entry in entries]
        finally:
            libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))


def _move(path: Path) -> None:
    """Evict the file from the page cache and read it back while 1 GiB is held elsewhere: the
    kernel hands out freed pages again first, so without the hold the file would land where it
    lay. Pages some process has mapped stay where they are."""
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        hold = bytearray(HOLD_BYTES)
        for i in range(0, HOLD_BYTES, PAGE):
            hold[i] = 1
        while f.read(1 << 20):
            pass
        del hold


def _scatter(path: Path, seed: int | None = None) -> None:
    """Evict the file and read its pages back one at a time in a random order, touching a page of
    anonymous memory after each (so its neighbours on the free lists go elsewhere), then free
    that memory: the file's pages end up on scattered frames, as after the VM's DAMON reclaim
    took some of them and a start read them back (data/README.md)."""
    with open(path, "rb") as f:
        fd = f.fileno()
        pages = -(-os.fstat(fd).st_size // PAGE)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)       # one page a read, no readahead
        order = list(range(pages))
        random.Random(seed).shuffle(order)
        other = bytearray(pages * PAGE)
        for k, i in enumerate(order):
            os.pread(fd, 1, i * PAGE)
            other[k * PAGE] = 1
        del other


def _code_address(pid: int) -> str:
    """Where the server's own executable code was mapped (its first executable file mapping)."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "r-xp" and parts[5].endswith(("/mysqld", "/mariadbd")):
            return "0x" + parts[0].split("-")[0]
    raise SystemExit(f"c2_standalone: no mysqld or mariadbd code mapping in /proc/{pid}/maps")


def _load(server, tables, rows: int, schema_per_table: bool) -> dict[str, tuple[str, str]]:
    """Load every table; returns each collation's (schema, table)."""
    where = {collation: (f"claimlab_standalone_{index}" if schema_per_table else "claimlab_standalone",
                         "t_scan" if schema_per_table else f"t_{collation}")
             for index, (collation, _) in enumerate(tables)}
    batch = ",".join(["(REPEAT('abc',15))"] * 1000)
    for collation, charset in tables:
        schema, table = where[collation]
        conn = server.connect()
        cur = conn.cursor()
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {schema} DEFAULT CHARACTER SET utf8mb4")
        cur.execute(f"USE {schema}")
        cur.execute(f"CREATE TABLE {table} (a VARCHAR(50) CHARACTER SET {charset} COLLATE {collation}) "
                    "ENGINE=InnoDB")
        for _ in range(rows // 1000):
            cur.execute(f"INSERT INTO {table} VALUES {batch}")
        if schema_per_table:
            cur.execute("CREATE TABLE claimlab_loaded (loaded_at TIMESTAMP)")
            cur.execute("INSERT INTO claimlab_loaded VALUES (NOW())")
        conn.commit()
        conn.close()
    return where


def _scan(server, where: dict[str, tuple[str, str]], rows: int, rounds: int, per_table: bool,
          probe_n: int, metered: bool, session: bool = False) -> dict[str, list[float]]:
    from claimlab import accounting, witness
    probe = witness.SpeedProbe(server, probe_n) if probe_n else None
    meter = accounting.Meter(server) if metered else None
    collations = list(where)
    conns = [server.connect(**({"database": where[collation][0]} if session else {}))
             for collation in (collations if per_table else collations[:1])]
    cursors = {collation: conns[index if per_table else 0].cursor() for index, collation in enumerate(collations)}
    times: dict[str, list[float]] = {collation: [] for collation in collations}
    for round_ in range(rounds):
        order = list(collations)
        random.Random(round_).shuffle(order)
        for collation in order:
            cur = cursors[collation]
            schema, table = where[collation]
            if meter is not None:
                meter.start()
            start = time.perf_counter()
            cur.execute(QUERY.format(table=table if session else f"{schema}.{table}"))
            (count,), = cur.fetchall()
            elapsed = time.perf_counter() - start
            if session:
                cur.execute("DO 0")
            if meter is not None:
                meter.stop()
            if probe is not None:
                probe.time()
            if count != rows:
                raise SystemExit(f"c2_standalone: {schema}.{table} matched {count} rows, expected {rows}")
            if round_ >= 3:
                times[collation].append(elapsed / rows * 1e9)
    for conn in conns:
        conn.close()
    for closing in (probe, meter):
        if closing is not None:
            closing.close()
    return times


if __name__ == "__main__":
    sys.exit(main())
