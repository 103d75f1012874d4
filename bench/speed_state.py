"""What is the slow state? A fixed loop timed over and over, pinned to each vCPU at once.

    python bench/speed_state.py pair --seconds 600          # one loop per vCPU, simultaneously
    python bench/speed_state.py pair --work memory          # random reads over 64 MB instead
    python bench/speed_state.py pair --work mixed           # cpu0 the ALU loop, cpu1 memory
    python bench/speed_state.py server --seconds 60         # SELECT BENCHMARK on a real server,
                                                            # unpinned / server and client apart

Each sample records the wall time and the CPU time (thread_time) of one fixed loop. If another
process took the CPU, wall time grows but CPU time does not; if the vCPU itself runs slower
(host throttling, frequency, an unreported steal inside the hypervisor), CPU time grows with it.
A sample is slow when its CPU time exceeds 1.4x the median CPU time of its worker. Reported: the
slow share per CPU, the lengths of slow stretches (consecutive slow samples), and whether the
two vCPUs are slow at the same moments (share of 0.5 s bins slow on both vs expected if
independent). `server` mode times `SELECT BENCHMARK` on a MariaDB started in a scratch
directory, first unpinned, then with server and client on separate CPUs (both ways).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

SLOW = 1.4


def _loop(rounds: int = 4000) -> None:
    data = b"x" * 4096
    for _ in range(rounds):
        data = hashlib.sha256(data).digest() * 128


def _memory_loop_factory():
    """Random 8-byte reads over 64 MB (far beyond the caches): timed by the memory system, as a
    table scan's row fetches are, where the SHA loop runs from registers and L1."""
    import numpy as np
    rng = np.random.default_rng(1)
    big = np.ones(8 * 1024 * 1024)
    index = rng.integers(0, len(big), 400_000)
    return lambda: big[index].sum()


def _worker(cpu: int, seconds: float, gap: float, out, work: str = "alu") -> None:
    """~10 ms of work, then `gap` seconds of sleep: a duty cycle that leaves the CPU to others."""
    os.sched_setaffinity(0, {cpu})
    loop = _memory_loop_factory() if work == "memory" else _loop
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        w0, c0 = time.monotonic(), time.thread_time()
        loop()
        samples.append((w0, time.monotonic() - w0, time.thread_time() - c0))
        time.sleep(gap)
    out.put((cpu, samples))


def stretches(flags: list[bool], times: list[float]) -> list[float]:
    """Durations (s) of runs of consecutive slow samples."""
    out, start = [], None
    for flag, t in zip(flags, times):
        if flag and start is None:
            start = t
        elif not flag and start is not None:
            out.append(t - start)
            start = None
    if start is not None:
        out.append(times[-1] - start)
    return out


def summarize(name: str, samples: list[tuple[float, float, float]], slow: float = SLOW) -> dict:
    cpu = [s[2] for s in samples]
    med = statistics.median(cpu)
    flags = [c > slow * med for c in cpu]
    runs = stretches(flags, [s[0] for s in samples])
    return {"worker": name, "samples": len(samples), "median_cpu_ms": round(med * 1e3, 2),
            "median_wall_ms": round(statistics.median(s[1] for s in samples) * 1e3, 2),
            "slow_share": round(sum(flags) / len(flags), 3),
            "slow_cpu_ratio": round(statistics.median([c for c, f in zip(cpu, flags) if f]) / med, 2)
            if any(flags) else None,
            "stretches": len(runs), "stretch_median_s": round(statistics.median(runs), 2) if runs else None,
            "stretch_max_s": round(max(runs), 2) if runs else None}


def _bins(samples, t0: float, width: float = 0.5, slow: float = SLOW) -> dict[int, bool]:
    med = statistics.median(s[2] for s in samples)
    out: dict[int, list[bool]] = {}
    for w0, _, c in samples:
        out.setdefault(int((w0 - t0) / width), []).append(c > slow * med)
    return {k: sum(v) > len(v) / 2 for k, v in out.items()}


def pair(seconds: float, gap: float, work: str = "alu", slow: float = SLOW) -> dict:
    q: mp.Queue = mp.Queue()
    kinds = {"alu": ("alu", "alu"), "memory": ("memory", "memory"), "mixed": ("alu", "memory")}[work]
    procs = [mp.Process(target=_worker, args=(cpu, seconds, gap, q, kinds[cpu]))
             for cpu in range(min(os.cpu_count(), 2))]
    for p in procs:
        p.start()
    results = dict(q.get() for _ in procs)
    for p in procs:
        p.join()
    report = {"mode": "pair", "work": work, "seconds": seconds, "gap_s": gap,
              "slow_factor": slow,
              "per_cpu": [summarize(f"cpu{c} {kinds[c]}", s, slow) for c, s in sorted(results.items())]}
    if len(results) == 2:
        t0 = min(s[0][0] for s in results.values())
        b0, b1 = _bins(results[0], t0, slow=slow), _bins(results[1], t0, slow=slow)
        common = sorted(b0.keys() & b1.keys())
        p0 = sum(b0[k] for k in common) / len(common)
        p1 = sum(b1[k] for k in common) / len(common)
        both = sum(b0[k] and b1[k] for k in common) / len(common)
        report["coincidence"] = {"bins": len(common), "slow_cpu0": round(p0, 3), "slow_cpu1": round(p1, 3),
                                 "slow_both": round(both, 3), "expected_if_independent": round(p0 * p1, 3)}
    return report


def _pin_server(pid: int, cpus: set[int]) -> None:
    for thread in psutil.Process(pid).threads():
        try:
            os.sched_setaffinity(thread.id, cpus)
        except OSError:   # it ended meanwhile
            pass


def server(seconds: float) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
    from claimlab.servers import Launcher, ServerOptions, TargetSpec
    from claimlab.witness import SpeedProbe
    report = {"mode": "server", "seconds_per_layout": seconds, "layouts": []}
    with tempfile.TemporaryDirectory(prefix="claimlab-speed-") as tmp:
        srv = Launcher(Path(tmp)).prepare(TargetSpec(name="default", kind="mariadb"),
                                         ServerOptions(innodb_buffer_pool_size="64M"))
        srv.start()
        try:
            n = SpeedProbe.calibrate(srv, 0.02)
            probe = SpeedProbe(srv, n)
            all_cpus = os.sched_getaffinity(0)
            layouts = [("unpinned", all_cpus, all_cpus), ("server0_client1", {0}, {1}),
                       ("server1_client0", {1}, {0})]
            for name, server_cpus, client_cpus in layouts:
                _pin_server(srv.pid, server_cpus)
                os.sched_setaffinity(0, client_cpus)
                samples = []
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    w0 = time.monotonic()
                    before = _proc_cpu(srv.pid)
                    wall = probe.time()
                    samples.append((w0, wall, _proc_cpu(srv.pid) - before))
                # server CPU ticks are coarse (10 ms): judge by wall time, which the probe's
                # own CPU dominates when the client and server do not share a CPU
                walls = [(w0, wall, wall) for w0, wall, _ in samples]
                entry = summarize(name, walls)
                entry["server_cpu_per_probe_ms"] = round(sum(s[2] for s in samples) / len(samples) * 1e3, 2)
                report["layouts"].append(entry)
            probe.close()
            report["probe_n"] = n
        finally:
            os.sched_setaffinity(0, os.sched_getaffinity(0) | set(range(os.cpu_count())))
            srv.stop()
    return report


def _proc_cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("pair", "server"))
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--gap", type=float, default=0.04, help="sleep between loops (pair mode)")
    ap.add_argument("--work", choices=("alu", "memory", "mixed"), default="alu",
                    help="pair mode: SHA loop, random memory reads, or one of each")
    ap.add_argument("--slow", type=float, default=SLOW, help="a sample is slow above this x its median")
    args = ap.parse_args(argv)
    report = {"loadavg_before": os.getloadavg()}
    report |= pair(args.seconds, args.gap, args.work, args.slow) if args.mode == "pair" else server(args.seconds)
    report["loadavg_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
