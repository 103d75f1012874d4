"""The reaper stops a pid only when its command line names the dead run's option file."""

from __future__ import annotations

import subprocess
import sys

from claimlab.servers import reaper


def test_only_a_process_started_with_that_option_file_is_recognised(tmp_path):
    cnf = tmp_path / "s1" / "my.cnf"
    child = subprocess.Popen([sys.executable, "-c", "import sys; print(flush=True); sys.stdin.read()",
                              f"--defaults-file={cnf}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    # Popen returns once exec has begun, before the kernel has filled /proc/PID/cmdline;
    # a line from the child says its command line is in place.
    child.stdout.readline()
    try:
        assert reaper._started_with(child.pid, cnf)
        assert not reaper._started_with(child.pid, tmp_path / "s2" / "my.cnf")   # a recycled pid
    finally:
        child.stdin.close()
        child.wait()
        child.stdout.close()
    assert not reaper._started_with(child.pid, cnf)   # gone
