"""What each measurement cost, and whether the machine was quiet while it ran.

Elapsed time alone is a weak witness on a shared 2-core machine: the client steals CPU from the
server, and fsync-bound loops slow down 10-20x when anything else writes to the disk. So beside
every timing claimlab records, as metrics of the same row format:
- the server process's CPU time (user, system) and context switches, from its /proc entry;
- the client's CPU time (claimlab itself and its children, e.g. sysbench), from getrusage;
- server counters as deltas over the measured phase (`SHOW GLOBAL STATUS`: fsyncs, bytes
  written, binlog commits, handler calls, statements), the ones each server flavour has
  (`Flavor.status_counters`, `Flavor.witness_queries`: MySQL has no Binlog_commits, its witnesses
  are the binlog caches and performance_schema's binlog file I/O); one it should have and lacks
  is an error, never a silently absent metric;
- machine-wide context: busy, iowait and steal shares of all CPUs, and disk writes.
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

from .errors import WorkloadError
from .store import Metric

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SECTOR_BYTES = 512
# Quiet check: over a short window, CPU used by processes other than claimlab and its server,
# in cores, and disk bytes written by others per second. Above either, wait; if it lasts, flag.
QUIET_WINDOW_S = 0.3
MAX_OTHER_CPU_CORES = 0.5
MAX_OTHER_DISK_BYTES_S = 4 * 1024 * 1024
QUIET_WAIT_S = 0.5   # bounded: on a shared machine a longer wait rarely ends quiet (issue 12)


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
    """From /proc/<pid>/stat (utime, stime) and status (context switches)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
    except OSError:
        return None
    # Context switches are counted per thread: sum every thread of the server, not just its main.
    switches = {"voluntary_ctxt_switches": 0, "nonvoluntary_ctxt_switches": 0}
    for task in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            for line in task.read_text().splitlines():
                key, _, value = line.partition(":\t")
                if key in switches:
                    switches[key] += int(value)
        except (OSError, ValueError):
            continue   # a thread that ended between listing and reading
    return ProcTimes(int(fields[11]) / CLOCK_TICKS, int(fields[12]) / CLOCK_TICKS,
                     switches.get("voluntary_ctxt_switches", 0),
                     switches.get("nonvoluntary_ctxt_switches", 0))


def client_times() -> ProcTimes:
    """claimlab and its waited-for children (sysbench): the load generator's side."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ProcTimes(me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime,
                     me.ru_nvcsw + kids.ru_nvcsw, me.ru_nivcsw + kids.ru_nivcsw)


@dataclass(frozen=True)
class MachineSample:
    """All CPUs' time by state (jiffies, /proc/stat) and whole-disk writes (/proc/diskstats)."""

    at: float
    cpu: tuple[int, ...]          # user nice system idle iowait irq softirq steal
    disk_writes: int | None           # None: /proc/diskstats unreadable (then no disk metrics)
    disk_sectors_written: int | None
    disk_flushes: int | None   # cache flushes (what fsync becomes on the device), kernel 5.5+

    @property
    def total(self) -> int:
        return sum(self.cpu)


def _whole_disks() -> set[str]:
    try:
        return {p.name for p in Path("/sys/block").iterdir()
                if not p.name.startswith(("loop", "ram", "zram", "dm-", "md"))}
    except OSError:
        return set()


_DISKS = _whole_disks()


def machine() -> MachineSample:
    first = Path("/proc/stat").read_text().splitlines()[0].split()
    cpu = tuple(int(x) for x in first[1:9])
    writes = sectors = flushes = 0
    try:
        for line in Path("/proc/diskstats").read_text().splitlines():
            parts = line.split()
            if parts[2] in _DISKS:
                writes += int(parts[7])
                sectors += int(parts[9])
                flushes += int(parts[18]) if len(parts) > 18 else 0
    except (OSError, IndexError, ValueError):
        writes = sectors = flushes = None   # reported as missing metrics, never as zero writes
    return MachineSample(time.monotonic(), cpu, writes, sectors, flushes)


def user_write_bytes(exclude: set[int]) -> dict[int, int]:
    """Bytes each user process has written to storage (/proc/<pid>/io), but for `exclude`.

    Per process rather than from /proc/diskstats: the file system's journal commits that our own
    server's fsyncs cause are written by kernel threads (no command line) and must not make a
    quiet machine look busy."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            if not Path(entry.path, "cmdline").read_bytes():
                continue   # a kernel thread
            for line in Path(entry.path, "io").read_text().splitlines():
                if line.startswith("write_bytes:"):
                    out[int(entry.name)] = int(line.split()[1])
        except (OSError, ValueError):
            continue
    return out


def _written_since(before: dict[int, int], after: dict[int, int]) -> int:
    return sum(max(after[pid] - before[pid], 0) for pid in after.keys() & before.keys())


def machine_metrics(before: MachineSample, after: MachineSample) -> list[Metric]:
    ticks = max(after.total - before.total, 1)
    d = [a - b for a, b in zip(after.cpu, before.cpu)]
    busy = ticks - d[3] - d[4]
    out = [Metric("machine_busy_share", busy / ticks, "share"),
           Metric("machine_iowait_share", d[4] / ticks, "share"),
           Metric("machine_steal_share", d[7] / ticks, "share")]
    if before.disk_writes is None or after.disk_writes is None:
        return out
    return out + [Metric("disk_writes", after.disk_writes - before.disk_writes, "count"),
                  Metric("disk_flushes", after.disk_flushes - before.disk_flushes, "count"),
                  Metric("disk_write_bytes", (after.disk_sectors_written - before.disk_sectors_written)
                         * SECTOR_BYTES, "bytes")]


def server_status(server, conn) -> dict[str, float]:
    """The flavour's counters, named `status.<counter>` (SHOW GLOBAL STATUS) or as the witness
    query names them (e.g. `pfs.binlog_misc_ops`). A witness table left empty because the
    experiment turned performance_schema off yields no value (the variables record that)."""
    flavor = server.flavor
    wanted = flavor.status_counters()
    with server.answering("reading its status counters"):
        cur = conn.cursor()
        cur.execute("SHOW GLOBAL STATUS")
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

    def start(self) -> None:
        # The status query goes first and the process clocks last (reversed in stop), so that
        # the snapshots' own work stays outside the window as far as possible.
        status = server_status(self.server, self.conn)
        pid = self.server.pid
        writes = user_write_bytes(self._ours())
        machine_before = machine()
        self._before = (process_times(pid) if pid else None, client_times(), machine_before, status, writes)

    def _ours(self) -> set[int]:
        return {os.getpid(), *([self.server.pid] if self.server.pid else [])}

    def stop(self) -> list[Metric]:
        server_after = process_times(self.server.pid) if self.server.pid else None
        client_after, machine_after = client_times(), machine()
        writes_after = user_write_bytes(self._ours())
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


def other_load(server_pid: int | None, window: float = QUIET_WINDOW_S) -> tuple[float, float]:
    """CPU cores and disk bytes/s used over `window` by processes other than claimlab and its server."""
    ours = {os.getpid(), *([server_pid] if server_pid else [])}
    w0, m0, c0 = user_write_bytes(ours), machine(), client_times()
    s0 = process_times(server_pid) if server_pid else None
    time.sleep(window)
    m1, c1 = machine(), client_times()
    s1 = process_times(server_pid) if server_pid else None
    w1 = user_write_bytes(ours)
    own = c1 - c0
    own_cpu = own.user_s + own.system_s
    if s0 and s1:
        own_cpu += (s1 - s0).user_s + (s1 - s0).system_s
    return _others_cpu(m0, m1, own_cpu), _written_since(w0, w1) / max(m1.at - m0.at, 1e-3)


def _others_cpu(before: MachineSample, after: MachineSample, own_cpu_s: float) -> float:
    """CPU cores used by everything but claimlab and its server between two samples."""
    elapsed = max(after.at - before.at, 1e-3)
    d = [a - b for a, b in zip(after.cpu, before.cpu)]
    busy_s = (sum(d) - d[3] - d[4]) / CLOCK_TICKS
    return max(busy_s - own_cpu_s, 0.0) / elapsed


def contended(metrics: list[Metric]) -> bool:
    """Whether others used more than the quiet thresholds while this measurement ran."""
    values = {m.name: m.value for m in metrics}
    return (values.get("other_cpu_cores", 0.0) > MAX_OTHER_CPU_CORES
            or values.get("other_disk_bytes_s", 0.0) > MAX_OTHER_DISK_BYTES_S)


def wait_until_quiet(server_pid: int | None, max_wait: float = QUIET_WAIT_S) -> tuple[bool, float, float]:
    """Wait (bounded) for other processes to leave the CPU and disk alone.

    Returns (contended, other_cpu_cores, other_disk_bytes_per_s) of the last check: contended is
    True when the machine stayed busy for the whole wait."""
    deadline = time.monotonic() + max_wait
    while True:
        cpu, disk = other_load(server_pid)
        quiet = cpu <= MAX_OTHER_CPU_CORES and disk <= MAX_OTHER_DISK_BYTES_S
        if quiet or time.monotonic() >= deadline:
            return (not quiet), cpu, disk
