"""Instruction counts per statement: wall-clock time on a shared machine is noisy, instruction
counts are not. The server runs under `valgrind --tool=callgrind --separate-threads=yes` with
instrumentation off; `callgrind_control` zeroes, switches it on around one statement (or ten
short queries), off, and dumps (the InnoDB settings each product needs under valgrind:
`Flavor.valgrind_options`), giving instructions per statement, per row or query, and per function
and call (claimlab.callgrind reads the dumps). The statement's own thread is counted apart
from the server's other threads: their timed wake-ups (page cleaner, purge, MySQL's log writers)
fall into the window at random and made all-thread totals differ by up to 65% between repeats. A
scan's own count repeats to ~0.05%; a MySQL insert loop's to 0.3-3.8%, falling run by run while
the tablespace still grows (all threads: 0.7-11%).

Sampling where the time goes is claimlab.profiling's; this module shares its errors and tools.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
import psutil

from . import callgrind
from . import workloads as wl
from .errors import ServerGone, TargetUnavailable
from .profiling import ProfilingError, last_line, tool
from .servers import Launcher, ServerOptions, TargetSpec, installation

CALLGRIND_READY_TIMEOUT_S = 300.0
CALLGRIND_STARTS = 2          # a server that dies under valgrind is started once more
_HEX = re.compile(r"^0x[0-9a-f]+$")
_DISPATCH = re.compile(r"c?fn=(\(\d+\) )?dispatch_command\(")

@dataclass(frozen=True)
class Statement:
    """One server-bound statement to count, run `times` times in each counted window (a short
    query is counted over several against the window's fixed costs), with an untimed
    statement to run before each window (TRUNCATE before an insert loop, SET NAMES before a
    query) and the rows each execution handles. `per` names what one execution's `rows` are:
    "row" of a scan or an insert loop, "query" of a one-row query."""

    sql: str
    rows: int
    setup: str | None = None
    times: int = 1
    per: str = "row"

    def __post_init__(self):
        if not self.sql.strip() or self.rows < 1 or self.times < 1:
            raise ValueError("a statement needs SQL, rows >= 1 and times >= 1")
        if self.per not in ("row", "query"):
            raise ValueError("per: must be row or query")

    @property
    def operations(self) -> int:
        """Rows (or queries) handled in one counted window."""
        return self.rows * self.times


# C1's query, as sysbench's oltp_read_write sends it over the text protocol (`--db-ps-mode=disable`):
# its DISTINCT range (range_size 100), carrying a string literal as long as the `c` values its
# updates and inserts send. Both of 5.7's charset costs are in it: the lexer's get_text asks the
# client charset's ismbchar about every byte of a literal (about 2,400 instructions a query on
# 5.7.23 and 8.0.40 alike, counted here), and DISTINCT puts `c`, a CHAR(120), in a MEMORY
# temporary table whose hashing calls my_charpos_mb, and through it my_ismbchar_utf8mb4, for every
# row (1.6M of 3.4M instructions a query on 5.7.23; 8.0's TempTable engine: 13k of 1.0M on 8.0.40).
# sysbench's point select has neither (61k instructions on 5.7.23, none of them in these functions).
RANGE_QUERY = ("SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND {last} AND pad <> '{literal}' "
               "ORDER BY c")
QUERIES_PER_WINDOW = 10


def _sysbench_literal(seed: int = 1) -> str:
    """A value in the format of sysbench's `c` column: ten groups of eleven digits."""
    digits = "".join(str((seed * 7 + i * 13) % 10) for i in range(10 * 11))
    return "-".join(digits[i:i + 11] for i in range(0, len(digits), 11))


def countable(workload: wl.Workload) -> bool:
    """Whether callgrind can count the workload: one server-bound statement, or sysbench over the
    text protocol (one of its queries stands for it; with prepared statements the lexer, which a
    text query exercises, runs once per statement, so a text query would not stand for it)."""
    if isinstance(workload, wl.Sysbench):
        return workload.ps_mode == "disable"
    return isinstance(workload, (wl.ProcInsertLoop, wl.VarcharScan, wl.Join))


def statement_for(workload: wl.Workload) -> Statement:
    """The single statement each Python-driven workload times; for sysbench (text protocol), its
    DISTINCT range query in the workload's connection charset (RANGE_QUERY)."""
    if isinstance(workload, wl.ProcInsertLoop):
        return Statement(f"CALL idata({workload.rows})", workload.rows, "TRUNCATE TABLE t")
    if isinstance(workload, wl.VarcharScan):
        return Statement("SELECT COUNT(*) FROM t_scan WHERE a = REPEAT('abc',15)", workload.rows)
    if isinstance(workload, wl.Join):
        return Statement(workload.QUERY, workload.rows)
    if countable(workload):
        names = workload.set_names()
        sql = RANGE_QUERY.format(last=min(100, workload.table_size), literal=_sysbench_literal())
        return Statement(sql, 1, f"SET NAMES {names}" if names else None, times=QUERIES_PER_WINDOW, per="query")
    raise ProfilingError(f"workload {workload.name}: {workload.kind} is not one statement; instruction "
                         "counts need proc_insert_loop, varchar_scan, join, or sysbench with ps_mode disable")


@dataclass(frozen=True)
class InstructionCounts:
    """Instructions (callgrind Ir) of repeated windows of one statement: in the thread that ran
    it (`own`, what the statement costs) and in all server threads during the same window
    (`counts`, which adds whatever background work happened to wake up); `functions`: the own
    thread's functions over all counted windows (claimlab.callgrind's columns)."""

    condition: str
    statement: Statement
    counts: tuple[int, ...]
    own: tuple[int, ...]
    functions: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if len(self.counts) < 1 or min(self.own, default=0) <= 0:
            raise ProfilingError(f"condition {self.condition}: callgrind counted no instructions")
        if len(self.own) != len(self.counts) or any(o > c for o, c in zip(self.own, self.counts)):
            raise ProfilingError(f"condition {self.condition}: the statement's thread counts do not "
                                 "match the all-thread counts")

    @property
    def mean(self) -> float:
        return sum(self.counts) / len(self.counts)

    @property
    def per_row(self) -> float:
        """All threads' instructions per row (per query where the statement is a query)."""
        return self.mean / self.statement.operations

    @property
    def relative_spread(self) -> float:
        """(max - min) / mean of the all-thread counts: run-to-run variation, to set beside the
        wall-clock one."""
        return _spread(self.counts)

    @property
    def own_per_row(self) -> float:
        return sum(self.own) / len(self.own) / self.statement.operations

    @property
    def own_spread(self) -> float:
        """(max - min) / mean of the statement's own thread: what the statement itself repeats to."""
        return _spread(self.own)

    def summary(self) -> dict:
        return {"condition": self.condition, "statement": self.statement.sql, "rows": self.statement.rows,
                "repeats": len(self.counts), "instructions": self.mean, "per_row": self.per_row,
                "relative_spread": self.relative_spread, "own_per_row": self.own_per_row,
                "own_spread": self.own_spread, "per": self.statement.per, "times": self.statement.times}

    def function_costs(self) -> pd.DataFrame:
        """The own thread's functions with what they cost per row (or query) and per call:
        inclusive instructions over the rows of every counted window, and over the calls."""
        table = self.functions.copy()
        table.insert(0, "condition", self.condition)
        table["operations"] = self.statement.operations * len(self.own)
        table["per_operation"] = table["inclusive"] / table["operations"]
        table["per_call"] = table["inclusive"] / table["calls"].where(table["calls"] > 0)
        return table

    def top(self, n: int = 15) -> pd.DataFrame:
        """Functions of the statement's thread by their own instructions; unnamed ones are hex
        addresses (a stripped binary's static functions)."""
        table = self.functions.sort_values("self", ascending=False).head(n)
        return pd.DataFrame({"condition": self.condition, "function": table["function"],
                             "instructions": table["self"], "share": table["self"] / sum(self.own),
                             "object": table["object"],
                             "named": ~table["function"].str.match(_HEX.pattern)}).reset_index(drop=True)


def _spread(counts: tuple[int, ...]) -> float:
    return (max(counts) - min(counts)) / (sum(counts) / len(counts))


def callgrind_program(binary: Path, workdir: Path) -> Path:
    """A script claimlab launches instead of the server program: it runs the server under
    callgrind with instrumentation off until asked. `--version`, `--help` and MySQL's
    `--initialize*` run the program itself (no need to count a data directory's creation)."""
    valgrind = tool("valgrind", "`apt-get install valgrind`")
    workdir.mkdir(parents=True, exist_ok=True)
    wrapper = workdir / f"{Path(binary).name}-callgrind"
    wrapper.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        f'  case "$arg" in --version|--help|--initialize|--initialize-insecure) exec "{binary}" "$@";; esac\n'
        "done\n"
        f'exec "{valgrind}" --tool=callgrind --separate-threads=yes --instr-atstart=no --dump-instr=no '
        f'--callgrind-out-file="{workdir}/callgrind.out.%p" --log-file="{workdir}/valgrind.%p.log" '
        f'"{binary}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def count_instructions(launcher: Launcher, target: TargetSpec, options: ServerOptions, workload: wl.Workload,
                       condition: str, out_dir: Path, *, repeats: int = 3, warmup: int = 2,
                       statement: Statement | None = None) -> InstructionCounts:
    """Start the condition's server under callgrind, load, then run `warmup + repeats` windows of
    the statement (each `statement.times` executions), each zeroed, instrumented, switched off and
    dumped; the warm-up windows are dropped (the first two instrumented runs cost up to ~25% more:
    code is translated and caches filled, even when the statement already ran uninstrumented).
    The server is always stopped. A server that dies under valgrind is started once more, its
    windows counted anew: MySQL 8.0.40 once died so (SIGSEGV in its connection listener after
    valgrind's "brk segment overflow"), where the same count passes on a rerun."""
    control = tool("callgrind_control", "`apt-get install valgrind`")
    statement = statement or statement_for(workload)
    out_dir = Path(out_dir) / condition
    if not target.local:
        raise TargetUnavailable(f"target {target.name}: instruction counts need a server claimlab starts")
    inst = installation(target)
    slow = replace(target, ready_timeout=max(target.ready_timeout, CALLGRIND_READY_TIMEOUT_S))
    for attempt in range(1, CALLGRIND_STARTS + 1):
        server = launcher.prepare(slow, inst.flavor.valgrind_options(options),
                                  program=callgrind_program(inst.binary, out_dir))
        try:
            dumps = _windows(server, workload, statement, control, out_dir, warmup + repeats)
            break
        except ServerGone as exc:
            if attempt == CALLGRIND_STARTS:
                raise ProfilingError(f"{exc} (under callgrind, {attempt} times; valgrind's logs: "
                                     f"{out_dir}/valgrind.*.log)") from None
    own = statement_thread([{thread: n for thread, (_, n) in d.items()} for d in dumps],
                           dispatching_threads([{thread: f for thread, (f, _) in d.items()} for d in dumps]))
    counted = dumps[warmup:]
    try:
        functions = callgrind.combined([callgrind.read(d[own][0]) for d in counted if own in d])
    except callgrind.CallgrindFormatError as exc:
        raise ProfilingError(str(exc)) from None
    return InstructionCounts(condition, statement,
                             counts=tuple(sum(n for _, n in d.values()) for d in counted),
                             own=tuple(d[own][1] if own in d else 0 for d in counted), functions=functions)


def _windows(server, workload: wl.Workload, statement: Statement, control: str, out_dir: Path,
             windows: int) -> list[dict[str, tuple[Path, int]]]:
    """One server's counted windows: per dump, thread -> (file, instructions). A statement, a
    callgrind_control or a dump that fails because the server died is ServerGone."""
    dumps = []
    try:
        server.start()
        workload.prepare(server)
        conn = server.connect(database=workload.schema())
        try:
            cur = conn.cursor()

            def execute(sql):
                with server.answering("counting instructions"):
                    cur.execute(sql)
                    if cur.with_rows:
                        cur.fetchall()

            for i in range(windows):
                if statement.setup:
                    execute(statement.setup)
                _control(control, server, "-z")
                _control(control, server, "-i", "on")
                for _ in range(statement.times):
                    execute(statement.sql)
                _control(control, server, "-i", "off")
                before = set(out_dir.glob("callgrind.out.*"))
                _control(control, server, "-d", f"claimlab-{i}")
                dumps.append(_new_dump(out_dir, before, server))
        finally:
            conn.close()
    finally:
        server.stop()
    return dumps


def statement_thread(dumps: list[dict[str, int]], dispatching: set[str] = frozenset()) -> str:
    """The thread that ran the statement, from each window's instructions by thread and the
    threads that called `dispatch_command` (the server's entry for every client command, in
    MySQL and MariaDB alike) in every window. Counts alone cannot tell: a background thread
    (InnoDB's purge, statistics or page cleaner) once counted 20M instructions beside the
    statement's 7.7M, and in another run counted more than the statement in both windows. Where
    no thread dispatched in every window (a build that names the function otherwise), the thread
    whose smallest window is the largest is taken: one connection ran every statement, so its
    thread counts in every window, where a burst usually does not."""
    threads = dispatching or set().union(*dumps)
    return max(sorted(threads), key=lambda thread: min(d.get(thread, 0) for d in dumps))


def dispatching_threads(dumps: list[dict[str, Path]]) -> set[str]:
    """Threads whose dump of every window names `dispatch_command` (callgrind writes a function's
    name in full the first time each file uses it)."""
    def dispatches(path: Path) -> bool:
        with path.open(errors="replace") as lines:
            return any(_DISPATCH.match(line) for line in lines)
    return set.intersection(*({t for t, f in d.items() if dispatches(f)} for d in dumps)) if dumps else set()


def _control(control: str, server, *args: str, timeout: float = 120.0) -> None:
    """`callgrind_control ARGS PID`, watched: it waits for the server's answer, which a server
    that died (even mid-dump) never gives, so its death ends the wait as ServerGone. It runs in a
    session of its own so that its vgdb goes with it: a vgdb left attached to a dead server keeps
    it unreaped, and stopping the server would wait for good."""
    gone = ServerGone(f"target {server.target.name}: server went away while counting instructions")
    with subprocess.Popen([control, *args, str(server.pid)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, stdin=subprocess.DEVNULL, start_new_session=True) as proc:
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    said, _ = proc.communicate(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    running = _running(server)
                    if running and time.monotonic() < deadline:
                        continue
                    if not running:
                        raise gone from None
                    raise ProfilingError(f"callgrind_control {' '.join(args)} got no answer in {timeout:.0f} s") \
                        from None
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    if proc.returncode != 0 or "OK" not in said:
        if not _running(server):
            raise gone
        raise ProfilingError(f"callgrind_control {' '.join(args)} failed: {last_line(said)}")


def _running(server) -> bool:
    """Alive, and not a zombie: one that died while vgdb was attached to it stays unreaped, and
    `alive()` (its parent's poll) says yes, until vgdb goes."""
    if not server.alive():
        return False
    try:
        return psutil.Process(server.pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _new_dump(out_dir: Path, before: set[Path], server, timeout: float = 30.0) -> dict[str, tuple[Path, int]]:
    """The files of the dump just asked for, one per thread (`callgrind.out.PID.N-TT`), by thread,
    with their instructions, once every one is complete (a server that died never completes them)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = set(out_dir.glob("callgrind.out.*")) - before
        totals = {f: _total(f, missing_ok=True) for f in new}
        if new and None not in totals.values():
            return {f.name.rpartition("-")[2]: (f, n) for f, n in totals.items()}
        if not _running(server):
            raise ServerGone(f"target {server.target.name}: server went away while callgrind dumped its counts")
        time.sleep(0.1)
    raise ProfilingError(f"callgrind wrote no dump in {out_dir}")


def _total(dump: Path, missing_ok: bool = False) -> int | None:
    """The dump's `totals:` line (absent while valgrind is still writing the file)."""
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    if missing_ok:
        return None
    raise ProfilingError(f"{dump}: no instruction totals")
