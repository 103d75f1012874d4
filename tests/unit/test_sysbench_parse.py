"""sysbench's report, parsed from a real captured run (tests/fixtures)."""

import pytest

from claimlab.errors import WorkloadError
from claimlab.workloads import parse_sysbench
from conftest import FIXTURES


def test_totals_and_intervals():
    m = parse_sysbench((FIXTURES / "sysbench_oltp_read_write.txt").read_text())
    metrics = {x.name: x.value for x in m.metrics}
    assert set(metrics) >= {"tps", "qps", "latency_avg_ms", "latency_p95_ms", "latency_max_ms",
                            "errors_per_s", "reconnects_per_s"}
    assert metrics["qps"] > metrics["tps"] > 0
    assert metrics["latency_max_ms"] >= metrics["latency_p95_ms"] >= 0
    assert [iv["t_s"] for iv in m.intervals] == [1, 2, 3]
    assert all(iv["threads"] == 2 for iv in m.intervals)


def test_truncated_report_is_an_error():
    text = (FIXTURES / "sysbench_oltp_read_write.txt").read_text()
    with pytest.raises(WorkloadError, match="latency_p95_ms"):
        parse_sysbench(text.split("95th percentile")[0], "oltp")
