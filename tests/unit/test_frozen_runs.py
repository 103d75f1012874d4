"""The suite reads three frozen shipped runs and no other (conftest.FROZEN), so that the shipped
set can change, be slimmed or packed, without a test changing: a check over the test tree for
the ways a test reaches another shipped run, and the guard that fails a test that opened one."""

from __future__ import annotations

import re

import pytest

import conftest
from claimlab.store import load_manifest
from conftest import FROZEN, RAW, ROOT, frozen, unfrozen_run

RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")
# How tests reached the published and earlier runs before: by the checkout's lists, or by
# globbing data/raw (in a `frozen_checkout` the lists name copies of the frozen runs).
REACHES = re.compile(r"""(published_runs|shipped_run_ids)\(ROOT|earlier_runs\.json"""
                     r"""|ROOT\s*/\s*["']data["']\s*/\s*["']raw["']""")


def _test_sources():
    return [p for p in sorted((ROOT / "tests").rglob("*.py")) if p.name != "conftest.py"]


def test_at_most_three_small_frozen_runs_are_read_and_they_are_shipped():
    assert len(FROZEN) <= 3
    for name, place in FROZEN.items():
        manifest = load_manifest(frozen(name))
        assert f"{manifest.experiment}/{manifest.run_id}" == place and manifest.status == "complete"
        size = sum(p.stat().st_size for p in frozen(name).rglob("*") if p.is_file())
        assert size < 4 << 20, f"{place}: {size} bytes; a frozen run is a small one"


def test_tests_name_no_shipped_run_but_the_frozen_ones():
    frozen_ids = {place.split("/")[1] for place in FROZEN.values()}
    named = {f"{path.relative_to(ROOT)}: {run_id}" for path in _test_sources()
             for run_id in RUN_ID.findall(path.read_text())
             if run_id not in frozen_ids and any(RAW.glob(f"*/{run_id}"))}
    assert named == set()


def test_tests_reach_no_shipped_run_through_the_published_lists_or_data_raw():
    """The published and earlier runs are the checkout's: a test reads them in `frozen_checkout`
    (CLAIMLAB_ROOT), where they are copies of the frozen runs."""
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in _test_sources()
             if path.name != "test_frozen_runs.py"
             for n, line in enumerate(path.read_text().splitlines(), start=1) if REACHES.search(line)]
    assert found == []
    assert REACHES.search('runs = report.published_runs(ROOT)["binlog_default"]')   # the check can fail
    assert REACHES.search('next((ROOT / "data" / "raw").glob(f"*/{run_id}"))')


def test_the_guard_fails_a_test_that_opens_a_shipped_run_not_frozen():
    other = RAW / "collation_cost" / "20000101T000000Z-000000" / "manifest.json"
    assert unfrozen_run(other) == "collation_cost/20000101T000000Z-000000"
    assert unfrozen_run(str(other).encode()) == "collation_cost/20000101T000000Z-000000"
    assert unfrozen_run(frozen("c1") / "results.parquet") is None
    assert unfrozen_run(RAW / "collation_cost") is None            # listing an experiment reads no run
    assert unfrozen_run(ROOT / "data" / "published_runs.json") is None
    with pytest.raises(FileNotFoundError):
        other.read_text()                                            # the audit hook sees the attempt
    assert conftest._UNFROZEN_READS == ["collation_cost/20000101T000000Z-000000"]
    conftest._UNFROZEN_READS.clear()                                 # this test's own read, not a failure
