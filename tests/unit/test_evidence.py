"""Which stored runs `cpu_evidence` profiles: every run of a report that has none, each on its own
server (before, only the first run's, so a MariaDB-and-MySQL report profiled MariaDB alone)."""

from __future__ import annotations

import json

from claimlab import evidence, store
from conftest import ROOT


def test_every_run_without_stored_evidence_is_profiled_not_only_the_first():
    earlier = json.loads((ROOT / "data" / "earlier_runs.json").read_text())["collation_cost"]
    quick = json.loads((ROOT / "data" / "quick_builds.json").read_text())["CD"]["runs"]
    runs = [store.find_run(r) for r in [*earlier, *quick]]
    with_evidence = [r for r in runs if evidence.exists(r)]
    assert [r.name for r in with_evidence] == earlier      # both servers' C2 runs of 2026-11-23
    assert evidence.missing(runs) == [r for r in runs if r.name in quick]
    assert evidence.missing(with_evidence) == []
