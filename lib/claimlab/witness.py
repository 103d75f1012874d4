"""The speed witness: a short fixed probe timed on the server before and after every measurement.

The virtual CPUs of these machines sometimes run at about half speed for seconds at a time, and
nothing in /proc shows it (steal, other processes' CPU and context switches are unchanged; the
server's own CPU time doubles with the elapsed time). A fixed amount of server work, timed right
before and after a measurement, shows it: `SELECT BENCHMARK(n, SHA2(..., 256))` runs n evaluations in a
server thread and returns one row. `n` is calibrated once per run (recorded in the manifest) so
that the two probes together cost a small share of the measured time. The runner stores the raw
probe times as metrics `probe_before_s` and `probe_after_s`; deciding what is slow belongs to the
statistics (`stats.speed_flags`).
"""

from __future__ import annotations

import statistics
import time

from .errors import ServerGone

# SHA2, not MD5: Debian's MySQL 9.7 answers MD5 and SHA1 with 1046 "No database selected".
SQL = "SELECT BENCHMARK({n}, SHA2('claimlab speed witness', 256))"
DEFAULT_S = 0.003          # one probe when nothing tells the measurement's length
SHARE = 0.01               # one probe's target share of a measurement (two per measurement: 2%)
MIN_S, MAX_S = 0.001, 0.025


def target_seconds(warmup_s: list[float]) -> float:
    """One probe's duration: 1% of the warm-up calls' median, within [1, 25] ms (1 ms is still 10x
    a round trip on the Unix socket, and a probe of C2's 30 ms scans costs it 3.5%, not the 5% of
    a 1.5 ms floor). The median, not the fastest call, though a warm-up call is a table's first
    read in its start and MySQL's C2 probe costs it 2.8-4.5% of the measured time that way: sized
    from the fastest, C3's MySQL probe was 1.5 ms, its probes before a measurement took 1.5-7.1 ms
    (after: 1.5-4.6), and 31-38% of C3's MySQL measurements were flagged slow (0-1% with the
    median's 4 ms)."""
    calls = [t for t in warmup_s if t > 0]
    if not calls:
        return DEFAULT_S
    return min(max(SHARE * statistics.median(calls), MIN_S), MAX_S)


class SpeedProbe:
    """One connection of its own, so the probe never mixes with a workload's session state."""

    def __init__(self, server, n: int):
        self.server, self.n = server, n
        self.sql = SQL.format(n=int(n))
        self.conn = server.connect()

    def time(self) -> float:
        with self.server.answering("running the speed probe"):
            cur = self.conn.cursor()
            start = time.perf_counter()
            cur.execute(self.sql)
            cur.fetchall()
            return time.perf_counter() - start

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:   # noqa: BLE001 - closing a dead server's connection has nothing to report
            pass

    @classmethod
    def calibrate(cls, server, seconds: float) -> int:
        """The n whose probe takes `seconds` at the fastest of five timings (the normal state)."""
        n = 1000
        probe = cls(server, n)
        try:
            while True:
                best = min(probe.time() for _ in range(3))
                if best >= 0.002 or n >= 10**9:
                    break
                n *= 4
                probe = _replace(probe, cls(server, n))
            best = min(best, *(probe.time() for _ in range(2)))
        finally:
            probe.close()
        if best <= 0:
            raise ServerGone(f"target {server.target.name}: the speed probe took no measurable time")
        return max(int(n * seconds / best), 1)


def _replace(old: SpeedProbe, new: SpeedProbe) -> SpeedProbe:
    old.close()
    return new
