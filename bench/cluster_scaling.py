"""What does a second host cost in wall time? One `claimlab report --scheduler` over one worker,
then over two, in one run on this machine, as a ratio.

    python bench/cluster_scaling.py --profile smoke --only binlog_default --targets mariadb

With two workers the report measures every claim on both hosts: twice the runs. A ratio near 1
says the hosts measured side by side (the second host's runs came for free in wall time); near 2,
that they waited on each other (here: one machine's cores, disk and memory shared by both
workers, which is why this is no number for publication: the point of several hosts is several
machines). Each setting starts a fresh scheduler and fresh workers on loopback addresses
(127.0.0.2, 127.0.0.3), each with its own worker directory and data-directory cache, and both
settings load their tables in a warm-up report first, so neither pays the set-up alone.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).with_name("dask"))
ADDRESSES = ("127.0.0.2", "127.0.0.3")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd: list[str], env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for_workers(address: str, n: int, timeout: float = 60) -> None:
    from distributed import Client

    from claimlab.cluster import hosts
    deadline = time.monotonic() + timeout
    with Client(address, timeout=timeout) as client:
        while len(hosts(client)) < n:
            if time.monotonic() > deadline:
                raise SystemExit(f"{n} worker(s) did not join {address}")
            time.sleep(0.3)


def report_seconds(workers: int, args, scratch: Path) -> float:
    """Wall time of one report over `workers` fresh workers, after a warm-up report that loads
    each worker's tables into its own cache."""
    from claimlab.servers import reap
    address = f"tcp://127.0.0.1:{_port()}"
    base = scratch / f"{workers}-workers"
    base.mkdir()
    procs = [_start([DASK, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                     "--no-dashboard", "--dashboard-address", "127.0.0.1:0"], dict(os.environ), base / "scheduler.log")]
    try:
        for i, host in enumerate(ADDRESSES[:workers]):
            home = base / f"bench-{i}"
            env = dict(os.environ, CLAIMLAB_WORKER_DIR=str(home), CLAIMLAB_DATADIRS=str(home / "datadirs"))
            procs.append(_start([DASK, "worker", address, "--name", f"bench-{i}", "--host", host,
                                 "--resources", "host=1", "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                 "--dashboard-address", f"{host}:0"],
                                env, base / f"bench-{i}.log"))
        _wait_for_workers(address, workers)
        cmd = [sys.executable, "-m", "claimlab.cli", "report", "--scheduler", address, "--profile", args.profile,
               "--targets", *args.targets, *(["--only", *args.only] if args.only else []),
               "--out", str(base / "reports"), "--figures", str(base / "figures")]
        seconds = []
        for i in range(2):    # the first is the warm-up
            began = time.monotonic()
            subprocess.run(cmd + ["--data", str(base / f"store-{i}")], cwd=ROOT, check=True,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            seconds.append(time.monotonic() - began)
        return seconds[-1]
    finally:
        _stop(procs[1:] + procs[:1])
        for i in range(workers):
            reap(base / f"bench-{i}" / "work")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="smoke", choices=("smoke", "quick", "full"))
    p.add_argument("--only", nargs="+", metavar="EXPERIMENT", help="only these experiments")
    p.add_argument("--targets", nargs="+", default=["mariadb"], metavar="TARGET")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="claimlab-cluster-scaling-") as scratch:
        one = report_seconds(1, args, Path(scratch))
        two = report_seconds(2, args, Path(scratch))
    print(f"one worker: {one:.1f} s; two workers (twice the runs): {two:.1f} s; ratio {two / one:.2f} "
          "(1: the second host came free in wall time; 2: the hosts waited on each other)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
