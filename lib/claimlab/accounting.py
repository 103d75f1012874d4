"""What each measurement cost, and whether the machine was quiet while it ran.

Elapsed time alone is a weak witness on a shared 2-core machine: the client steals CPU from the
server, and fsync-bound loops slow down 10-20x when anything else writes to the disk. So beside
every timing claimlab records, as metrics of the same row format:
- the server process's CPU time (user, system) and context switches, summed over its threads (/proc);
- the client's CPU time (claimlab itself and its children, e.g. sysbench), from getrusage;
- server counters as deltas over the measured phase (`SHOW GLOBAL STATUS`: fsyncs, bytes
  written, binlog commits, handler calls, statements), the ones each server flavour has
  (`Flavor.status_counters`, `Flavor.witness_queries`: MySQL has no Binlog_commits, its witnesses
  are the binlog caches and performance_schema's binlog file I/O); one it should have and lacks
  is an error, never a silently absent metric;
- machine-wide context: busy, iowait and steal shares of all CPUs (psutil), and the whole disks'
  writes (psutil) and cache flushes (/proc/diskstats, which psutil does not read).
A short quiet check before each measurement waits (bounded) while other processes keep the CPU or
the disk busy, and flags the measurement as taken under contention if they do not stop; flagged
rows are kept, never dropped, and the statistics can include or exclude them.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

import mysql.connector
import psutil

from .errors import WorkloadError
from .records import Metric

# Quiet check: over a short window, CPU used by processes other than claimlab and its server,
# in cores, and disk bytes written by others per second. Above either, wait; if it lasts, flag.
QUIET_WINDOW_S = 0.3
MAX_OTHER_CPU_CORES = 0.5
MAX_OTHER_DISK_BYTES_S = 4 * 1024 * 1024
QUIET_WAIT_S = 0.5   # bounded: on a shared machine a longer wait rarely ends quiet


@dataclass(frozen=True)
class ProcTimes:
    """CPU seconds and context switches of a process (or of claimlab and its children)."""

    user_s: float
    system_s: float
    voluntary: int = 0
    involuntary: int = 0

    def __sub__(self, other: "ProcTimes") -> "ProcTimes":
        return ProcTimes(*(a - b for a, b in zip(self._tuple(), other._tuple())))

    def _tuple(self):
        return (self.user_s, self.system_s, self.voluntary, self.involuntary)


def process_times(pid: int) -> ProcTimes | None:
    """CPU time and context switches of a process and all its threads (None: it is gone).

    Read from /proc directly (proc(5)): the process's stat covers every thread's CPU time, and
    the switches are summed over each thread's status, since a server's work and fsync waits
    happen in threads other than its main one (psutil's `num_ctx_switches` counts the main
    thread alone, psutil issue 1467). Not through psutil because this runs twice around every
    measurement: a psutil Process per thread cost 0.8 ms (MariaDB) to 1.8 ms (MySQL 9.7) a read."""
    try:
        stat = _read(f"/proc/{pid}/stat")
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(b")") + 2:].split()   # after the command name, which may hold spaces
    voluntary = involuntary = 0
    for tid in tids:
        try:
            status = _read(f"/proc/{pid}/task/{tid}/status")
        except (FileNotFoundError, ProcessLookupError):
            continue   # a thread that ended between listing and reading
        voluntary += _field(status, b"\nvoluntary_ctxt_switches:")
        involuntary += _field(status, b"\nnonvoluntary_ctxt_switches:")
    # fields[11], fields[12]: utime and stime (stat fields 14 and 15), in clock ticks
    return ProcTimes(int(fields[11]) / _TICKS, int(fields[12]) / _TICKS, voluntary, involuntary)


_TICKS = os.sysconf("SC_CLK_TCK")


def _read(path: str) -> bytes:
    """A /proc file, unbuffered: a Python file object costs a third more per read, and the meter
    reads one per server thread and user process around every measurement."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, 8192)]
        while chunks[-1]:
            chunks.append(os.read(fd, 8192))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _field(text: bytes, name: bytes) -> int:
    """The number after `name` in a /proc "name: value" text."""
    start = text.index(name) + len(name)
    return int(text[start:text.index(b"\n", start)])


def client_times() -> ProcTimes:
    """claimlab and its waited-for children (sysbench): the load generator's side."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ProcTimes(me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime,
                     me.ru_nvcsw + kids.ru_nvcsw, me.ru_nivcsw + kids.ru_nivcsw)


@dataclass(frozen=True)
class MachineSample:
    """All CPUs' time by state and the whole disks' writes and cache flushes, at one instant."""

    at: float
    cpu: tuple[float, ...]      # seconds: user nice system idle iowait irq softirq steal
    disk_writes: int
    disk_write_bytes: int
    disk_flushes: int           # cache flushes (what fsync becomes on the device), kernel 5.5+


CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
DISKSTATS = Path("/proc/diskstats")


def _whole_disks() -> frozenset[str]:
    try:
        return frozenset(p.name for p in Path("/sys/block").iterdir()
                         if not p.name.startswith(("loop", "ram", "zram", "dm-", "md")))
    except OSError:
        return frozenset()


_DISKS = _whole_disks()


def disk_flushes(disks: frozenset[str] = _DISKS, text: str | None = None) -> int:
    """Cache flushes the disks completed: field 16 of their /proc/diskstats lines (Linux 5.5+).
    A disk missing, a line too short or a count that is not a number is an error, never zero."""
    if text is None:
        text = DISKSTATS.read_text()
    counts = {}
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if len(parts) < 3 or parts[2] not in disks:
            continue
        if len(parts) < 19:
            raise WorkloadError(f"{DISKSTATS} line {number}: disk {parts[2]} has no flush count "
                                "(field 16, reported from Linux 5.5 on)")
        try:
            counts[parts[2]] = int(parts[18])
        except ValueError:
            raise WorkloadError(f"{DISKSTATS} line {number}: disk {parts[2]}: flush count "
                                f"{parts[18]!r} is not a number") from None
    missing = sorted(disks - counts.keys())
    if missing:
        raise WorkloadError(f"{DISKSTATS}: no line for disk {', '.join(missing)}")
    return sum(counts.values())


def machine() -> MachineSample:
    if not _DISKS:
        raise WorkloadError("/sys/block: no whole disk to watch (disk metrics would read zero)")
    cpu = psutil.cpu_times()
    disks = psutil.disk_io_counters(perdisk=True, nowrap=False)
    missing = sorted(_DISKS - disks.keys())
    if missing:
        raise WorkloadError(f"psutil.disk_io_counters: no counters for disk {', '.join(missing)}")
    watched = [disks[name] for name in _DISKS]
    return MachineSample(time.monotonic(), tuple(getattr(cpu, state) for state in CPU_STATES),
                         sum(d.write_count for d in watched), sum(d.write_bytes for d in watched),
                         disk_flushes())


def user_write_bytes(exclude: set[int], kinds: dict[int, bool] | None = None) -> dict[int, int]:
    """Bytes each user process has written to storage (its I/O counters), but for `exclude`.

    Per process rather than per disk: the file system's journal commits that our own server's
    fsyncs cause are written by kernel threads (no command line) and must not make a quiet
    machine look busy. Processes whose counters we may not read are left out. `kinds` remembers,
    per pid, whether it is a user process, so that a caller reading again and again (the meter,
    around every measurement) reads each process's command line once. Read from /proc (proc(5))
    rather than through psutil, which cost 3 ms a read here."""
    kinds = {} if kinds is None else kinds
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or (pid := int(name)) in exclude:
            continue
        try:
            if pid not in kinds:
                kinds[pid] = bool(_read(f"/proc/{name}/cmdline"))
            if kinds[pid]:
                out[pid] = _field(b"\n" + _read(f"/proc/{name}/io"), b"\nwrite_bytes:")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue   # gone, or not ours to read
    return out


def _written_since(before: dict[int, int], after: dict[int, int]) -> int:
    return sum(max(after[pid] - before[pid], 0) for pid in after.keys() & before.keys())


def machine_metrics(before: MachineSample, after: MachineSample) -> list[Metric]:
    d = [a - b for a, b in zip(after.cpu, before.cpu)]
    spent = max(sum(d), 1e-9)   # a measurement lasts many clock ticks
    busy = spent - d[3] - d[4]
    return [Metric("machine_busy_share", busy / spent, "share"),
            Metric("machine_iowait_share", d[4] / spent, "share"),
            Metric("machine_steal_share", d[7] / spent, "share"),
            Metric("disk_writes", after.disk_writes - before.disk_writes, "count"),
            Metric("disk_flushes", after.disk_flushes - before.disk_flushes, "count"),
            Metric("disk_write_bytes", after.disk_write_bytes - before.disk_write_bytes, "bytes")]


def server_status(server, conn) -> dict[str, float]:
    """The flavour's counters, named `status.<counter>` (SHOW GLOBAL STATUS) or as the witness
    query names them (e.g. `pfs.binlog_misc_ops`). A witness table left empty because the
    experiment turned performance_schema off yields no value (the variables record that)."""
    flavor = server.flavor
    wanted = flavor.status_counters()
    with server.answering("reading its status counters"):
        cur = conn.cursor()
        # only the wanted counters: the whole list (500-odd rows) took a millisecond more to fetch
        cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({', '.join(['%s'] * len(wanted))})",
                    wanted)
        rows = dict(cur.fetchall())
        witnesses = []
        for sql, names in flavor.witness_queries():
            cur.execute(sql)
            witnesses += [zip(names, row) for row in cur.fetchall()[:1]]
    missing = [name for name in wanted if name not in rows]
    if missing:
        raise WorkloadError(f"target {server.target.name}: {flavor} reports no {', '.join(missing)} "
                            "(SHOW GLOBAL STATUS); claimlab expects them from this flavour")
    values = {f"status.{name}": float(rows[name]) for name in wanted}
    for pairs in witnesses:
        values.update((name, float(value)) for name, value in pairs if value is not None)
    return values


class Meter:
    """Snapshots before and after one measured iteration; `stop()` returns the deltas as metrics.

    The status snapshots use a connection of their own, opened once per repetition; each snapshot
    is one SHOW statement, counted by the server's `Questions` (so that counter reads one high)."""

    def __init__(self, server):
        self.server = server
        self.conn = server.connect()
        self._before = None
        self._kinds: dict[int, bool] = {}   # user_write_bytes' memory of which pids are user processes

    def start(self) -> None:
        # The status query goes first and the process clocks last (reversed in stop), so that
        # the snapshots' own work stays outside the window as far as possible.
        status = server_status(self.server, self.conn)
        pid = self.server.pid
        writes = user_write_bytes(self._ours(), self._kinds)
        machine_before = machine()
        self._before = (process_times(pid) if pid else None, client_times(), machine_before, status, writes)

    def _ours(self) -> set[int]:
        return {os.getpid(), *([self.server.pid] if self.server.pid else [])}

    def stop(self) -> list[Metric]:
        server_after = process_times(self.server.pid) if self.server.pid else None
        client_after, machine_after = client_times(), machine()
        writes_after = user_write_bytes(self._ours(), self._kinds)
        status_after = server_status(self.server, self.conn)
        server_before, client_before, machine_before, status_before, writes_before = self._before
        out = []
        own_cpu = 0.0
        if server_before and server_after:
            s = server_after - server_before
            own_cpu = s.user_s + s.system_s
            out += [Metric("server_cpu_user_s", s.user_s, "s"), Metric("server_cpu_system_s", s.system_s, "s"),
                    Metric("server_ctx_voluntary", s.voluntary, "count"),
                    Metric("server_ctx_involuntary", s.involuntary, "count")]
        c = client_after - client_before
        own_cpu += c.user_s + c.system_s
        out += [Metric("client_cpu_s", c.user_s + c.system_s, "s")]
        out += machine_metrics(machine_before, machine_after)
        cpu = _others_cpu(machine_before, machine_after, own_cpu)
        disk = _written_since(writes_before, writes_after) / max(machine_after.at - machine_before.at, 1e-3)
        out += [Metric("other_cpu_cores", cpu, "cores"), Metric("other_disk_bytes_s", disk, "bytes/s")]
        out += [Metric(name, status_after[name] - status_before[name],
                       "bytes" if name.startswith("pfs.") and name.endswith("_bytes_written") else "count")
                for name in status_after if name in status_before]
        return out

    def close(self) -> None:
        try:
            self.conn.close()
        except mysql.connector.Error:   # a dead server's connection cannot be closed cleanly
            pass


class LoadWindow:
    """What processes other than claimlab and its servers use from when it is opened until it is
    read: CPU cores and disk bytes/s. Claimlab's own work may run inside it (its CPU is
    subtracted, its servers' writes are not counted), so a server's start and warm-up double as
    the quiet check's window instead of a separate wait after them. A server started after the
    window opened is added with `include`: all of its CPU time falls inside the window."""

    def __init__(self, server_pids=()):
        self.pids = [pid for pid in server_pids if pid]
        self._ours = {os.getpid(), *self.pids}
        self._kinds: dict[int, bool] = {}
        self._w0, self._m0, self._c0 = user_write_bytes(self._ours, self._kinds), machine(), client_times()
        self._s0 = [process_times(pid) for pid in self.pids]

    def include(self, server_pids) -> "LoadWindow":
        for pid in server_pids:
            if pid and pid not in self._ours:
                self.pids.append(pid)
                self._ours.add(pid)
                self._s0.append(ProcTimes(0.0, 0.0))
        return self

    @property
    def age(self) -> float:
        return time.monotonic() - self._m0.at

    def read(self) -> tuple[float, float]:
        m1, c1 = machine(), client_times()
        s1 = [process_times(pid) for pid in self.pids]
        w1 = user_write_bytes(self._ours, self._kinds)
        own = c1 - self._c0
        own_cpu = own.user_s + own.system_s
        for a, b in zip(self._s0, s1):
            if a and b:
                own_cpu += (b - a).user_s + (b - a).system_s
        return _others_cpu(self._m0, m1, own_cpu), _written_since(self._w0, w1) / max(m1.at - self._m0.at, 1e-3)


def other_load(server_pids, window: float = QUIET_WINDOW_S) -> tuple[float, float]:
    """CPU cores and disk bytes/s used over `window` by processes other than claimlab and its
    servers (`server_pids`: the pids of the run's running servers; None where one has none)."""
    opened = LoadWindow(server_pids)
    time.sleep(window)
    return opened.read()


def _others_cpu(before: MachineSample, after: MachineSample, own_cpu_s: float) -> float:
    """CPU cores used by everything but claimlab and its server between two samples."""
    elapsed = max(after.at - before.at, 1e-3)
    d = [a - b for a, b in zip(after.cpu, before.cpu)]
    busy_s = sum(d) - d[3] - d[4]
    return max(busy_s - own_cpu_s, 0.0) / elapsed


def shared_by_levels(metrics: list[Metric]) -> list[Metric]:
    """The shares and rates that describe the machine: of an interleaved burst
    (workloads.interleaved_session) only these are true of each level. The server's CPU, its
    counters and the disk's totals cover all levels at once and are not split by assumption."""
    return [m for m in metrics if m.name.startswith(("machine_", "other_"))]


def contended(metrics: list[Metric]) -> bool:
    """Whether others used more than the quiet thresholds while this measurement ran."""
    values = {m.name: m.value for m in metrics}
    return not quiet(values.get("other_cpu_cores", 0.0), values.get("other_disk_bytes_s", 0.0))


def quiet(other_cpu_cores: float, other_disk_bytes_s: float) -> bool:
    """Whether others' CPU and disk use stay within the quiet thresholds."""
    return other_cpu_cores <= MAX_OTHER_CPU_CORES and other_disk_bytes_s <= MAX_OTHER_DISK_BYTES_S


def wait_until_quiet(server_pids, max_wait: float = QUIET_WAIT_S,
                     since: LoadWindow | None = None) -> tuple[bool, float, float]:
    """Wait (bounded) for other processes to leave the CPU and disk alone.

    `since`: a window opened before claimlab's own preparatory work (the warm-up); if others were
    quiet over it (at least QUIET_WINDOW_S long), there is nothing to wait for.
    Returns (contended, other_cpu_cores, other_disk_bytes_per_s) of the last check: contended is
    True when the machine stayed busy for the whole wait."""
    if since is not None:
        time.sleep(max(QUIET_WINDOW_S - since.age, 0.0))
        cpu, disk = since.read()
        if quiet(cpu, disk):
            return False, cpu, disk
    deadline = time.monotonic() + max_wait
    while True:
        cpu, disk = other_load(server_pids)
        calm = quiet(cpu, disk)
        if calm or time.monotonic() >= deadline:
            return (not calm), cpu, disk
