"""Workloads: the sources' experiments as named, parameterized functions.

Each has a load phase (`prepare`, untimed, idempotent: data is loaded once per data directory and
reused across server restarts) and a measured phase (`session(...)`, one call per iteration).

The Python-driven workloads time exactly one server-bound statement per figure (`CALL idata(N)`,
one `SELECT COUNT(*)`...), so the client does O(1) work inside the timed region: it sends one
statement and reads one row. To show that the client's share is negligible rather than assume it,
every iteration also times a null statement (`DO 0`) on the same connection and records it as
`roundtrip_s`. `bulk_insert` is the exception that the source itself defines as many statements:
its statements are built before the clock starts, so the timed loop only sends them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator

import mysql.connector

from .errors import ServerGone, WorkloadError
from .records import Measurement, Metric
from .servers import confined
from .servers.reaper import record_load_generator
from .sysbench_report import parse_interleaved, parse_sysbench

_IDENT = re.compile(r"[A-Za-z0-9_]+\Z")
SYSBENCH_DIR = "/usr/share/sysbench"
MAX_SCHEMA = 64                                       # MySQL's and MariaDB's limit on a schema's name
MAX_NAME = MAX_SCHEMA - len("claimlab__") - 8         # `schema`: claimlab_<name>_<8 hex digits>


@dataclass(frozen=True)
class Workload:
    """Base: subclasses add their parameters as fields with defaults."""

    name: str
    kind: ClassVar[str] = ""
    load_fields: ClassVar[tuple[str, ...]] = ()   # the parameters that decide what is loaded

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "name"} | {"kind": self.kind}

    def schema(self) -> str:
        """Each load gets its own schema, owned by claimlab (prefix) and named by what it holds."""
        key = repr([(f, getattr(self, f)) for f in self.load_fields] + [self.kind])
        return f"claimlab_{self.name}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"

    def check_tools(self) -> None:
        """Raise WorkloadError if a program this workload runs is missing: checked before a run
        starts any server, so a missing tool costs nothing."""

    # -- load phase ------------------------------------------------------------------------
    def prepare(self, server) -> None:
        conn = server.connect()
        try:
            cur = conn.cursor()
            schema = self.schema()
            cur.execute("SELECT COUNT(*) FROM information_schema.tables "
                        "WHERE table_schema = %s AND table_name = 'claimlab_loaded'", (schema,))
            if cur.fetchone()[0]:
                return
            cur.execute(f"DROP DATABASE IF EXISTS `{schema}`")
            cur.execute(f"CREATE DATABASE `{schema}` {self.schema_options()}")
            cur.execute(f"USE `{schema}`")
            self.load(server, cur)
            cur.execute("CREATE TABLE claimlab_loaded (loaded_at TIMESTAMP)")
            cur.execute("INSERT INTO claimlab_loaded VALUES (NOW())")
        except mysql.connector.Error as exc:
            raise _sql_error(self, server, exc, "loading") from None
        finally:
            conn.close()

    def schema_options(self) -> str:
        return "DEFAULT CHARACTER SET utf8mb4"

    def load(self, server, cur) -> None:
        raise NotImplementedError

    # -- measured phase --------------------------------------------------------------------
    @contextlib.contextmanager
    def session(self, server, seed: int) -> Iterator[Callable[..., Measurement]]:
        """Yields a function that runs one iteration (`warmup=True`: a warm-up one, which a
        workload may make shorter); the connection lives for the whole session."""
        conn = server.connect(database=self.schema())
        cur = conn.cursor()
        try:
            def measure(warmup: bool = False) -> Measurement:
                try:
                    return self.measure(cur, seed)
                except mysql.connector.Error as exc:
                    raise _sql_error(self, server, exc, "measuring") from None
            yield measure
        finally:
            with contextlib.suppress(mysql.connector.Error):
                conn.close()

    def measure(self, cur, seed: int) -> Measurement:
        raise NotImplementedError


def _sql_error(workload: Workload, server, exc: mysql.connector.Error, phase: str) -> Exception:
    if server.lost(exc):
        return ServerGone(f"workload {workload.name}: server went away while {phase}: {exc.msg}")
    return WorkloadError(f"workload {workload.name}: {phase} failed: {exc.msg}")


def _timed(cur, sql: str, args: tuple = ()) -> tuple[float, list]:
    start = time.perf_counter()
    cur.execute(sql, args or None)
    rows = cur.fetchall() if cur.with_rows else []
    return time.perf_counter() - start, rows


def _roundtrip(cur) -> Metric:
    return Metric("roundtrip_s", _timed(cur, "DO 0")[0], "s")


def _operations(count: int) -> Metric:
    """What one iteration did (rows inserted, compared or joined; sysbench: queries), so that the
    costs recorded beside it can be divided per operation (stats.per_operation)."""
    return Metric("operations", float(count), "ops")


def _insert_batches(cur, table: str, rows: list[str], batch: int = 1000) -> None:
    for i in range(0, len(rows), batch):
        cur.execute(f"INSERT INTO {table} VALUES " + ",".join(rows[i:i + batch]))


@dataclass(frozen=True)
class ProcInsertLoop(Workload):
    """C3/C4, Yangsh888's post: a stored procedure inserting (i, i, i) one autocommit statement at a time."""

    kind: ClassVar[str] = "proc_insert_loop"
    load_fields: ClassVar[tuple[str, ...]] = ()
    rows: int = 1000

    def load(self, server, cur) -> None:
        cur.execute("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT, b INT, KEY(a), KEY(b)) "
                    "ENGINE=InnoDB")
        cur.execute("CREATE PROCEDURE idata(n INT) BEGIN DECLARE i INT DEFAULT 1; "
                    "WHILE i <= n DO INSERT INTO t VALUES (i, i, i); SET i = i + 1; END WHILE; END")

    def measure(self, cur, seed: int) -> Measurement:
        cur.execute("TRUNCATE TABLE t")
        elapsed, _ = _timed(cur, "CALL idata(%s)", (self.rows,))
        _check_count(self, cur, "SELECT COUNT(*) FROM t", self.rows)
        return Measurement((Metric("elapsed_s", elapsed, "s"), _roundtrip(cur), _operations(self.rows)))


@dataclass(frozen=True)
class VarcharScan(Workload):
    """C2, bug #116492: a full scan comparing one varchar(50) per row in a given collation."""

    kind: ClassVar[str] = "varchar_scan"
    load_fields: ClassVar[tuple[str, ...]] = ("rows", "charset", "collation")
    rows: int = 100_000
    charset: str = "utf8mb4"
    collation: str | None = None

    def __post_init__(self):
        for name in ("charset", "collation"):
            value = getattr(self, name)
            if value is not None and not _IDENT.fullmatch(value):
                raise ValueError(f"{name}: {value!r} is not a charset/collation name")

    def load(self, server, cur) -> None:
        _require_collation(self, cur, self.charset, self.collation)
        collate = f" COLLATE {self.collation}" if self.collation else ""
        cur.execute(f"CREATE TABLE t_scan (a VARCHAR(50) CHARACTER SET {self.charset}{collate}) "
                    "ENGINE=InnoDB")
        _insert_batches(cur, "t_scan", ["(REPEAT('abc',15))"] * self.rows)

    def measure(self, cur, seed: int) -> Measurement:
        elapsed, rows = _timed(cur, "SELECT COUNT(*) FROM t_scan WHERE a = REPEAT('abc',15)")
        if rows[0][0] != self.rows:
            raise WorkloadError(f"workload {self.name}: scan matched {rows[0][0]} rows, expected {self.rows}")
        return Measurement((Metric("elapsed_s", elapsed, "s"), _roundtrip(cur), _operations(self.rows)))


@dataclass(frozen=True)
class BulkInsert(Workload):
    """C3, Bin Wang's DZone article: single-connection multi-row INSERTs of `batch` rows each, `rows` in total."""

    kind: ClassVar[str] = "bulk_insert"
    rows: int = 10_000
    batch: int = 100

    def load(self, server, cur) -> None:
        cur.execute("CREATE TABLE t_bulk (id INT NOT NULL PRIMARY KEY, a INT, b INT, KEY(a), KEY(b)) "
                    "ENGINE=InnoDB")

    def measure(self, cur, seed: int) -> Measurement:
        statements = ["INSERT INTO t_bulk VALUES " + ",".join(
            f"({i},{i},{i})" for i in range(start, min(start + self.batch, self.rows)))
            for start in range(0, self.rows, self.batch)]
        cur.execute("TRUNCATE TABLE t_bulk")
        start = time.perf_counter()
        for sql in statements:
            cur.execute(sql)
        elapsed = time.perf_counter() - start
        _check_count(self, cur, "SELECT COUNT(*) FROM t_bulk", self.rows)
        return Measurement((Metric("elapsed_s", elapsed, "s"), _roundtrip(cur), _operations(self.rows)))


@dataclass(frozen=True)
class Join(Workload):
    """C3, Bin Wang's DZone article: a single-connection join, one primary-key lookup per outer row."""

    kind: ClassVar[str] = "join"
    load_fields: ClassVar[tuple[str, ...]] = ("rows",)
    # The plan is pinned (join order and index): after a restart the optimizer once chose a
    # block-nested-loop scan here, 800x slower, which would be a plan change, not a regression.
    QUERY: ClassVar[str] = ("SELECT COUNT(*), SUM(i.b) FROM t_outer o "
                            "STRAIGHT_JOIN t_inner i FORCE INDEX (PRIMARY) ON i.id = o.a")
    rows: int = 10_000

    def load(self, server, cur) -> None:
        cur.execute("CREATE TABLE t_outer (id INT NOT NULL PRIMARY KEY, a INT NOT NULL, KEY(a)) ENGINE=InnoDB")
        cur.execute("CREATE TABLE t_inner (id INT NOT NULL PRIMARY KEY, b INT NOT NULL) ENGINE=InnoDB")
        targets = list(range(1, self.rows + 1))
        random.Random(self.rows).shuffle(targets)   # lookups in a fixed random order
        _insert_batches(cur, "t_outer", [f"({i},{a})" for i, a in enumerate(targets, 1)])
        _insert_batches(cur, "t_inner", [f"({i},{i % 97})" for i in range(1, self.rows + 1)])
        cur.execute("ANALYZE TABLE t_outer, t_inner")
        cur.fetchall()

    def measure(self, cur, seed: int) -> Measurement:
        elapsed, rows = _timed(cur, self.QUERY)
        if rows[0][0] != self.rows:
            raise WorkloadError(f"workload {self.name}: join returned {rows[0][0]} rows, expected {self.rows}")
        return Measurement((Metric("elapsed_s", elapsed, "s"), _roundtrip(cur), _operations(self.rows)))


def _check_count(workload: Workload, cur, sql: str, expected: int) -> None:
    cur.execute(sql)
    got = cur.fetchone()[0]
    if got != expected:
        raise WorkloadError(f"workload {workload.name}: table holds {got} rows, expected {expected}")


def _require_collation(workload: Workload, cur, charset: str, collation: str | None) -> None:
    """Ask the server itself: catalogues differ (MariaDB lists UCA 14.0 collations without charset)."""
    try:
        cur.execute(f"SELECT CONVERT('' USING {charset})" + (f" COLLATE {collation}" if collation else ""))
        cur.fetchall()
    except mysql.connector.Error as exc:
        raise WorkloadError(f"workload {workload.name}: the server refuses charset {charset!r}"
                            + (f" with collation {collation!r}" if collation else "")
                            + f": {exc.msg}") from None


# -- sysbench ------------------------------------------------------------------------------

BUNDLED_TESTS = ("oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only",
                 "oltp_insert", "oltp_delete", "oltp_update_index", "oltp_update_non_index",
                 "select_random_points", "select_random_ranges")


@dataclass(frozen=True)
class Sysbench(Workload):
    """Any bundled sysbench OLTP test, with the connection charset set by claimlab's Lua wrapper."""

    kind: ClassVar[str] = "sysbench"
    load_fields: ClassVar[tuple[str, ...]] = ("tables", "table_size", "schema_charset",
                                              "schema_collation")
    test: str = "oltp_point_select"
    threads: int = 1
    time: int = 10
    tables: int = 1
    table_size: int = 10_000
    ps_mode: str = "auto"            # auto: server-side prepared statements; disable: text protocol
    charset: str | None = None       # connection charset (SET NAMES); None keeps the client default
    collation: str | None = None
    schema_charset: str | None = None  # the tables' charset (via the schema default)
    schema_collation: str | None = None
    report_interval: int = 1
    # True: the levels of one server start share one sysbench process, transaction by transaction
    # (interleaved_session); False: each level runs its own sysbench burst.
    interleave: bool = False
    warmup_time: int | None = None   # seconds of a warm-up burst (None: `time`)
    # what may differ between interleaved levels: the level is the charset, everything else is shared
    LEVEL_FIELDS: ClassVar[tuple[str, ...]] = ("charset", "collation", "schema_charset", "schema_collation")

    def __post_init__(self):
        if self.test not in BUNDLED_TESTS:
            raise ValueError(f"test: {self.test!r} is not a bundled sysbench test "
                             f"({', '.join(BUNDLED_TESTS)})")
        if self.ps_mode not in ("auto", "disable"):
            raise ValueError("ps_mode: must be auto or disable")
        for name in ("charset", "collation", "schema_charset", "schema_collation"):
            value = getattr(self, name)
            if value is not None and not _IDENT.fullmatch(value):
                raise ValueError(f"{name}: {value!r} is not a charset/collation name")
        if self.collation and not self.charset:
            raise ValueError("collation: needs `charset` too")
        if self.warmup_time is not None and not 1 <= self.warmup_time <= self.time:
            raise ValueError("warmup_time: must be from 1 to `time` seconds")

    def check_tools(self) -> None:
        try:
            sysbench_binary()
        except WorkloadError as exc:
            raise WorkloadError(f"workload {self.name}: {exc}") from None

    def schema_options(self) -> str:
        if not self.schema_charset:
            return ""
        collate = f" COLLATE {self.schema_collation}" if self.schema_collation else ""
        return f"DEFAULT CHARACTER SET {self.schema_charset}{collate}"

    def load(self, server, cur) -> None:
        if self.schema_charset:
            _require_collation(self, cur, self.schema_charset, self.schema_collation)
        if self.charset:
            _require_collation(self, cur, self.charset, self.collation)
        _run_sysbench(self, server, [self.test, f"--tables={self.tables}", f"--table-size={self.table_size}",
                                     "prepare"], timeout=3600)

    @contextlib.contextmanager
    def session(self, server, seed: int) -> Iterator[Callable[[], Measurement]]:
        wrapper = resources.files("claimlab") / "sysbench_names.lua"
        env = dict(os.environ, CLAIMLAB_SYSBENCH_TEST=f"{SYSBENCH_DIR}/{self.test}.lua",
                   CLAIMLAB_SET_NAMES=self.set_names())
        with resources.as_file(wrapper) as lua:
            def measure(warmup: bool = False) -> Measurement:
                args = [str(lua), f"--threads={self.threads}",
                        f"--time={self.burst_time(warmup)}", f"--tables={self.tables}",
                        f"--table-size={self.table_size}", f"--db-ps-mode={self.ps_mode}",
                        f"--report-interval={self.report_interval}", f"--rand-seed={seed}", "run"]
                out = _run_sysbench(self, server, args, timeout=self.time + 120, env=env)
                return parse_sysbench(out, self.name)
            yield measure

    def burst_time(self, warmup: bool) -> int:
        return self.warmup_time if warmup and self.warmup_time else self.time

    def set_names(self) -> str:
        if not self.charset:
            return ""
        return self.charset + (f" COLLATE {self.collation}" if self.collation else "")


def interleaved(workloads: list[Workload]) -> bool:
    """Whether these levels' workloads (one per condition of a server start) run as one
    interleaved sysbench process; raises ValueError when they ask for it but cannot."""
    flags = {bool(getattr(w, "interleave", False)) for w in workloads}
    if flags == {False}:
        return False
    if len(flags) > 1:
        raise ValueError("interleave: set for some levels and not others; set it on the workload")
    first = workloads[0]
    shared = [f for f in first.__dataclass_fields__ if f not in first.LEVEL_FIELDS]
    for w in workloads[1:]:
        differ = [f for f in shared if getattr(w, f) != getattr(first, f)]
        if differ:
            raise ValueError(f"interleave: levels may differ only in {', '.join(first.LEVEL_FIELDS)}, "
                             f"not in {differ[0]}")
    return True


@contextlib.contextmanager
def interleaved_session(server, workloads: dict[str, Sysbench], seed: int
                        ) -> Iterator[Callable[..., dict[str, Measurement]]]:
    """One sysbench process for all levels: every thread holds a connection per level and runs
    its transactions on them in turn, a fresh random order each cycle, timing each one
    (sysbench_interleave.lua). A level's rate is its transactions per second of thread time spent
    on them: what the level alone would sustain at that latency, measured in the same
    milliseconds as the other levels.

    sysbench's own per-second series and error counts cover all levels together, so they are not
    recorded per level."""
    ids = list(workloads)
    first = workloads[ids[0]]
    wrapper = resources.files("claimlab") / "sysbench_interleave.lua"
    levels = ";".join(f"{i}|{workloads[cid].schema()}|{workloads[cid].set_names()}" for i, cid in enumerate(ids))
    env = dict(os.environ, CLAIMLAB_SYSBENCH_TEST=f"{SYSBENCH_DIR}/{first.test}.lua", CLAIMLAB_LEVELS=levels)
    with resources.as_file(wrapper) as lua:
        def measure(warmup: bool = False) -> dict[str, Measurement]:
            args = [str(lua), f"--threads={first.threads}",
                    f"--time={first.burst_time(warmup)}",
                    f"--tables={first.tables}", f"--table-size={first.table_size}",
                    f"--db-ps-mode={first.ps_mode}", f"--rand-seed={seed}", "run"]
            out = _run_sysbench(first, server, args, timeout=first.time + 120, env=env)
            return parse_interleaved(out, ids, first.threads, first.name)
        yield measure


def _connection_options(server, schema: str) -> str:
    """sysbench's connection options, in its config-file syntax."""
    args = server.connect_args()
    lines = [_config_line("mysql-user", args["user"]), _config_line("mysql-db", schema)]
    if args.get("password"):
        lines.append(_config_line("mysql-password", args["password"]))
    if args.get("unix_socket"):
        lines.append(_config_line("mysql-socket", args["unix_socket"]))
    else:
        lines += [_config_line("mysql-host", args["host"]), f"mysql-port={args['port']}"]
    return "\n".join(lines) + "\n"


def _config_line(name: str, value: str) -> str:
    """One option of sysbench's config file, quoted: its reader (sb_options.c, read_config) ends an
    unquoted value at a space, ',' or '#' (a password `a#b` reached the server as `a`), reads a
    quoted one up to the same quote, and a line in a 256-byte buffer. A value it cannot carry (both
    quotes, a line break, too long) is refused without being shown: it may be a password."""
    value = str(value)
    quote = next((q for q in "\"'" if q not in value), None)
    line = f"{name}={quote}{value}{quote}" if quote else ""
    if not line or "\n" in value or "\r" in value or len(line.encode()) > 250:
        raise WorkloadError(f"{name}: sysbench's config file cannot carry this value (it holds both quote "
                            "characters or a line break, or is over 230 bytes); change it to use sysbench")
    return line


def sysbench_binary() -> str:
    found = shutil.which("sysbench")
    if not found:
        raise WorkloadError("sysbench not found: install it with `apt-get install sysbench` "
                            "(or run `make setup` as root)")
    return found


def _run_sysbench(workload: Workload, server, args: list[str], timeout: float, env=None) -> str:
    """Run sysbench against `server`'s schema of `workload`. Its connection options (the password
    among them) reach it through a pipe it reads as its `--config-file` (/dev/fd/N): never in `ps`,
    and never in a file that a killed claimlab would leave behind. Its pid is recorded beside the
    run's servers (servers.reaper), so a claimlab killed mid-measurement leaves no sysbench
    running into the next run's measurements."""
    options = _connection_options(server, workload.schema()).encode()
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, options)    # a few hundred bytes: the pipe's buffer holds them all
    finally:
        os.close(write_end)
    try:
        # on the server's vCPUs when it has some (design.cpus): client and server then share them
        command = confined([sysbench_binary(), f"--config-file=/dev/fd/{read_end}", *args], server.cpus)
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, stdin=subprocess.DEVNULL, pass_fds=(read_end,))
    finally:
        os.close(read_end)
    where = _pid_dir(server)
    pid_file = record_load_generator(where, proc.pid) if where is not None else None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise WorkloadError(f"workload {workload.name}: sysbench did not finish in {timeout:.0f} s") from None
    finally:
        if proc.poll() is None:     # a timeout, an interrupt: it must not outlive the measurement
            proc.kill()
            proc.communicate()
        if pid_file is not None:
            pid_file.unlink(missing_ok=True)
    if proc.returncode != 0:
        lines = [ln for ln in (stderr + stdout).splitlines() if ln.strip()]
        message = " | ".join(lines[-3:]) or f"exit code {proc.returncode}"
        if not server.alive():
            raise ServerGone(f"workload {workload.name}: server went away during sysbench: {message}")
        raise WorkloadError(f"workload {workload.name}: sysbench failed: {message}")
    return stdout


def _pid_dir(server) -> Path | None:
    """Where a sysbench run against `server` records its pid: the server's home, or the run's work
    directory for an external server (none outside a run)."""
    home = getattr(server, "home", None)
    directory = Path(home) if home is not None else getattr(server, "workdir", None)
    return directory if directory is not None and directory.is_dir() else None


KINDS: dict[str, type[Workload]] = {cls.kind: cls for cls in
                                    (Sysbench, ProcInsertLoop, VarcharScan, BulkInsert, Join)}
