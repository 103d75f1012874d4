"""sysbench's report, parsed from a real captured run (tests/fixtures)."""

import pytest

from claimlab.errors import WorkloadError
from claimlab.sysbench_report import parse_interleaved, parse_sysbench
from claimlab.workloads import Sysbench, interleaved
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


IDS = ["charset=latin1", "charset=utf8mb4", "charset=mismatch"]


def test_interleaved_levels_from_a_real_run():
    """A real 1 s run of the interleaving wrapper: 2 threads x 3 levels (tests/fixtures)."""
    out = parse_interleaved((FIXTURES / "sysbench_interleaved.txt").read_text(), IDS, threads=2)
    assert list(out) == IDS
    latin1 = {m.name: m.value for m in out["charset=latin1"].metrics}
    assert latin1["transactions"] == 286 + 288
    assert latin1["latency_avg_ms"] == pytest.approx(1000 * (0.303558 + 0.300413) / 574)
    assert latin1["tps"] == pytest.approx(2 * 574 / (0.303558 + 0.300413))
    assert latin1["qps"] == pytest.approx(20 * latin1["tps"])     # oltp_read_write: 20 queries a transaction
    assert latin1["operations"] == 20 * 574
    mismatch = {m.name: m.value for m in out["charset=mismatch"].metrics}
    assert mismatch["tps"] < latin1["tps"]
    assert all(not m.intervals for m in out.values())   # sysbench's series covers all levels at once


def test_interleaved_report_missing_a_thread_is_an_error():
    text = (FIXTURES / "sysbench_interleaved.txt").read_text().replace("claimlab-level 2 287 0.354823\n", "")
    with pytest.raises(WorkloadError, match="5 level lines, expected 6"):
        parse_interleaved(text, IDS, threads=2, name="oltp")


def test_interleaved_level_without_transactions_is_an_error():
    text = (FIXTURES / "sysbench_interleaved.txt").read_text()
    text = text.replace("claimlab-level 1 285 0.341665", "claimlab-level 1 0 0.000000")
    text = text.replace("claimlab-level 1 287 0.341941", "claimlab-level 1 0 0.000000")
    with pytest.raises(WorkloadError, match="level charset=utf8mb4 ran no transaction"):
        parse_interleaved(text, IDS, threads=2, name="oltp")


def test_only_level_fields_may_differ_between_interleaved_levels():
    a = Sysbench(name="oltp", interleave=True, charset="latin1", schema_charset="latin1")
    b = Sysbench(name="oltp", interleave=True, charset="utf8mb4", schema_charset="utf8mb4")
    assert interleaved([a, b])
    assert not interleaved([Sysbench(name="oltp"), Sysbench(name="oltp", charset="utf8mb4")])
    with pytest.raises(ValueError, match="not in threads"):
        interleaved([a, Sysbench(name="oltp", interleave=True, threads=8)])
    with pytest.raises(ValueError, match="some levels and not others"):
        interleaved([a, Sysbench(name="oltp")])
    with pytest.raises(ValueError, match="warmup_time"):
        Sysbench(name="oltp", time=2, warmup_time=3)
