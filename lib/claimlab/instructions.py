"""Instruction counts per statement: wall-clock time on a shared machine is noisy, instruction
counts are not. The server runs under `valgrind --tool=callgrind --separate-threads=yes` with
instrumentation off; `callgrind_control` zeroes, switches it on around one statement, off, and
dumps (the InnoDB settings each product needs under valgrind: `Flavor.valgrind_options`), giving
instructions per statement, per row, and per function. The statement's own thread is counted apart
from the server's other threads: their timed wake-ups (page cleaner, purge, MySQL's log writers)
fall into the window at random and made all-thread totals differ by up to 65% between repeats. A
scan's own count repeats to ~0.05%; a MySQL insert loop's to 0.3-3.8%, falling run by run while
the tablespace still grows (all threads: 0.7-11%).

Sampling where the time goes is claimlab.profiling's; this module shares its errors and tools.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from . import workloads as wl
from .errors import TargetUnavailable
from .profiling import ProfilingError, last_line, tool
from .servers import Launcher, ServerOptions, TargetSpec, installation

CALLGRIND_READY_TIMEOUT_S = 300.0
_HEX = re.compile(r"^0x[0-9a-f]+$")

@dataclass(frozen=True)
class Statement:
    """One server-bound statement to count, with an untimed statement to run before each count
    (e.g. TRUNCATE before an insert loop) and the rows it handles (for instructions per row)."""

    sql: str
    rows: int
    setup: str | None = None

    def __post_init__(self):
        if not self.sql.strip() or self.rows < 1:
            raise ValueError("a statement needs SQL and rows >= 1")


def countable(workload: wl.Workload) -> bool:
    """Whether callgrind can count the workload: one server-bound statement (not sysbench)."""
    return isinstance(workload, (wl.ProcInsertLoop, wl.VarcharScan, wl.Join))


def statement_for(workload: wl.Workload) -> Statement:
    """The single statement each Python-driven workload times."""
    if isinstance(workload, wl.ProcInsertLoop):
        return Statement(f"CALL idata({workload.rows})", workload.rows, "TRUNCATE TABLE t")
    if isinstance(workload, wl.VarcharScan):
        return Statement("SELECT COUNT(*) FROM t_scan WHERE a = REPEAT('abc',15)", workload.rows)
    if isinstance(workload, wl.Join):
        return Statement(workload.QUERY, workload.rows)
    raise ProfilingError(f"workload {workload.name}: {workload.kind} is not one statement; instruction "
                         "counts need proc_insert_loop, varchar_scan or join")


@dataclass(frozen=True)
class InstructionCounts:
    """Instructions (callgrind Ir) of repeated executions of one statement: in the thread that ran
    it (`own`, what the statement costs) and in all server threads during the same window
    (`counts`, which adds whatever background work happened to wake up)."""

    condition: str
    statement: Statement
    counts: tuple[int, ...]
    own: tuple[int, ...]
    top: pd.DataFrame = field(repr=False, compare=False)   # own thread's functions: instructions, share, named

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
        return self.mean / self.statement.rows

    @property
    def relative_spread(self) -> float:
        """(max - min) / mean of the all-thread counts: run-to-run variation, to set beside the
        wall-clock one."""
        return _spread(self.counts)

    @property
    def own_per_row(self) -> float:
        return sum(self.own) / len(self.own) / self.statement.rows

    @property
    def own_spread(self) -> float:
        """(max - min) / mean of the statement's own thread: what the statement itself repeats to."""
        return _spread(self.own)

    def summary(self) -> dict:
        return {"condition": self.condition, "statement": self.statement.sql, "rows": self.statement.rows,
                "repeats": len(self.counts), "instructions": self.mean, "per_row": self.per_row,
                "relative_spread": self.relative_spread, "own_per_row": self.own_per_row,
                "own_spread": self.own_spread}


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
                       statement: Statement | None = None, top: int = 15) -> InstructionCounts:
    """Start the condition's server under callgrind, load, then run the statement `warmup +
    repeats` times, each zeroed, instrumented, switched off and dumped; the warm-up counts are
    dropped (the first two instrumented runs cost up to ~25% more: code is translated and caches filled,
    even when the statement already ran uninstrumented). The server is always stopped."""
    control = tool("callgrind_control", "`apt-get install valgrind`")
    statement = statement or statement_for(workload)
    out_dir = Path(out_dir) / condition
    if not target.local:
        raise TargetUnavailable(f"target {target.name}: instruction counts need a server claimlab starts")
    inst = installation(target)
    slow = replace(target, ready_timeout=max(target.ready_timeout, CALLGRIND_READY_TIMEOUT_S))
    server = launcher.prepare(slow, inst.flavor.valgrind_options(options),
                              program=callgrind_program(inst.binary, out_dir))
    dumps: list[dict[str, tuple[Path, int]]] = []   # per dump: thread -> (file, instructions)
    try:
        server.start()
        workload.prepare(server)
        conn = server.connect(database=workload.schema())
        try:
            cur = conn.cursor()

            def execute(sql):
                cur.execute(sql)
                if cur.with_rows:
                    cur.fetchall()

            for i in range(warmup + repeats):
                if statement.setup:
                    execute(statement.setup)
                _control(control, server.pid, "-z")
                _control(control, server.pid, "-i", "on")
                execute(statement.sql)
                _control(control, server.pid, "-i", "off")
                before = set(out_dir.glob("callgrind.out.*"))
                _control(control, server.pid, "-d", f"claimlab-{i}")
                dumps.append(_new_dump(out_dir, before))
        finally:
            conn.close()
    finally:
        server.stop()
    # One connection ran every statement, in one thread (a thread per connection, both servers'
    # default; a thread pool would spread them), the one that counted most over all dumps.
    own = max(dumps[0], key=lambda thread: sum(d.get(thread, (None, 0))[1] for d in dumps))
    counted = dumps[warmup:]
    return InstructionCounts(condition, statement,
                             counts=tuple(sum(n for _, n in d.values()) for d in counted),
                             own=tuple(d[own][1] if own in d else 0 for d in counted),
                             top=_annotate(counted[-1][own][0], condition, top))


def _control(control: str, pid: int, *args: str) -> None:
    result = subprocess.run([control, *args, str(pid)], capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0 or "OK" not in result.stdout:
        raise ProfilingError(f"callgrind_control {' '.join(args)} failed: "
                             f"{last_line(result.stdout + result.stderr)}")


def _new_dump(out_dir: Path, before: set[Path], timeout: float = 30.0) -> dict[str, tuple[Path, int]]:
    """The files of the dump just asked for, one per thread (`callgrind.out.PID.N-TT`), by thread,
    with their instructions, once every one is complete."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = set(out_dir.glob("callgrind.out.*")) - before
        totals = {f: _total(f, missing_ok=True) for f in new}
        if new and None not in totals.values():
            return {f.name.rpartition("-")[2]: (f, n) for f, n in totals.items()}
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


_ANNOTATED = re.compile(r"^\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(?:\S*?):(.+?)(?: \[(.+)\])?$")


def _annotate(dump: Path, condition: str, top: int) -> pd.DataFrame:
    """Functions by instructions (self), from callgrind_annotate; unnamed ones are hex addresses."""
    annotate = tool("callgrind_annotate", "`apt-get install valgrind`")
    result = subprocess.run([annotate, "--threshold=100", str(dump)], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise ProfilingError(f"callgrind_annotate failed: {last_line(result.stderr)}")
    rows = []
    for line in result.stdout.splitlines():
        m = _ANNOTATED.match(line)
        if m and "PROGRAM TOTALS" not in line:
            name = m[3].strip()
            rows.append({"condition": condition, "function": name,
                         "instructions": int(m[1].replace(",", "")), "share": float(m[2]) / 100,
                         "object": Path(m[4]).name if m[4] else "", "named": not _HEX.match(name)})
    return pd.DataFrame(rows).head(top)
