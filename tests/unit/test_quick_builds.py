"""The quick builds shipped for issue 12's agreement check (data/quick_builds.json): every listed
run is in data/raw, intact, quick, and each build holds one run per experiment and server, so the
README's `bench/precision.py --run ... --against ...` re-reads a whole build from a clean clone."""

from __future__ import annotations

import json

from claimlab import report, store
from conftest import ROOT


def test_every_shipped_quick_build_is_whole_and_intact():
    builds = json.loads((ROOT / "data" / "quick_builds.json").read_text())
    assert builds, "data/quick_builds.json lists no build"
    experiments = set(report.NOTEBOOKS)
    for name, build in builds.items():
        assert set(build) == {"made", "runs"}, name
        cells = set()
        for run_id in build["runs"]:
            path = store.find_run(run_id, ROOT / "data" / "raw")
            assert store.verify(path) == [], (name, run_id)          # checksums match the manifest
            manifest = store.read_manifest(path)
            assert manifest["profile"] == "quick", (name, run_id)
            cells.add((manifest["experiment"], manifest["default_target"]))
        assert cells == {(e, t) for e in experiments for t in ("mariadb", "mysql")}, name
