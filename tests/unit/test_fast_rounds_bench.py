"""The check of `design.fast_rounds` shipped in data/c2_fast_rounds.json (bench/fast_rounds.py):
every listed run is in data/raw, intact and made with the rule; replaying its own rule keeps
every row the runner stored (the bench decides as the runner did); and what README.md and
data/README.md say of the rounds it added ("More rounds where the slow state is the usual one")
is re-read from the runs without a server."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from claimlab import store
from claimlab.stopping import FastRounds
from conftest import ROOT, bench_module

RAW = ROOT / "data" / "raw"
SHIPPED = json.loads((ROOT / "data" / "c2_fast_rounds.json").read_text())


@pytest.fixture(scope="module")
def table():
    bench = bench_module("fast_rounds")
    variants = [bench.variant(v) for v in SHIPPED["variants"]]
    return bench.table([store.find_run(r, RAW) for r in SHIPPED["runs"]], variants)


def test_each_listed_run_is_intact_and_made_with_the_rule():
    assert len(SHIPPED["runs"]) == 6
    for run_id in SHIPPED["runs"]:
        path = store.find_run(run_id, RAW)
        assert store.verify(path) == [], run_id
        manifest = store.read_manifest(path)
        assert manifest["design"]["fast_rounds"] == {"metric": "elapsed_s", "fastest": "min", "count": 3,
                                                     "max_iterations": 20}
        assert manifest["default_target"] == "mysql" and manifest["profile"] == "quick"


def test_replaying_the_rule_on_runs_made_with_its_first_form_keeps_fewer_of_their_rows():
    # these runs were made when the rule read a start's scans against the run's single fastest
    # (before "The fast state, start by start"); the current rule, a start's own band, is content
    # with fewer rounds in five of the six, and never asks for rounds a run did not measure
    replay = bench_module("fast_rounds").replay
    kept = []
    for run_id in SHIPPED["runs"]:
        path = store.find_run(run_id, RAW)
        results = store.read_results(path)
        rule = FastRounds(**store.read_manifest(path)["design"]["fast_rounds"])
        kept.append(len(replay(results, rule, 10)) / len(results))
        rounds = results.groupby("seq")["iteration"].max() + 1
        assert rounds.between(10, 20).all() and rounds.gt(10).any(), rounds
        added = [e["added"] for e in store.read_jsonl(path / "events.jsonl") if e["event"] == "fast_rounds"]
        assert sorted(added) == sorted(r - 10 for r in rounds if r > 10), run_id
    assert max(kept) == 1.0 and sum(share < 1 for share in kept) == 5, kept


def test_replaying_the_rule_on_runs_made_with_it_keeps_every_row_they_stored():
    # builds BC and BD's C2 runs on MySQL, made with the rule as it reads the fast state now: the
    # bench decides as the runner did, unit by unit and round by round
    replay = bench_module("fast_rounds").replay
    builds = json.loads((ROOT / "data" / "quick_builds.json").read_text())
    for run_id in (builds["BC"]["runs"][3], builds["BD"]["runs"][3]):
        path = store.find_run(run_id, RAW)
        manifest = store.read_manifest(path)
        assert manifest["experiment"] == "collation_cost" and manifest["default_target"] == "mysql", run_id
        results = store.read_results(path)
        assert len(replay(results, FastRounds(**manifest["design"]["fast_rounds"]), 10)) == len(results), run_id
        assert (results.groupby("seq")["iteration"].max() + 1).gt(10).any(), run_id


def test_the_shipped_table_is_what_the_runs_give(table):
    shipped = pd.DataFrame(SHIPPED["table"])
    pd.testing.assert_frame_equal(table.reset_index(drop=True), shipped, check_dtype=False)


def test_the_added_rounds_keep_starts_and_narrow_the_main_comparison(table):
    # README: ten rounds alone would have read C2's main comparison at ±2.7-9.3% (AZ's MySQL run
    # kept 4 of its 10 starts), the rule's rounds at ±1.8-4.6%, for 16-94% more scans (each start's
    # own band; with the band drawn from the run's fastest: ±1.7-11.9%, ±1.2-3.1%, 30-96%)
    main = table[table["comparison"] == "uca_ai_vs_utf8mb3"].pivot(index="run", columns="variant")
    fixed, rule = main["half_width_pct"]["0:10"], main["half_width_pct"]["3:20"]
    assert (rule < fixed).all(), pd.concat([fixed, rule], axis=1)
    assert fixed.min() == pytest.approx(2.75, abs=0.01) and fixed.max() == pytest.approx(9.25, abs=0.01)
    assert rule.min() == pytest.approx(1.84, abs=0.01) and rule.max() == pytest.approx(4.56, abs=0.01)
    assert (main["starts"]["3:20"] >= main["starts"]["0:10"]).all()
    assert main["starts"]["0:10"].min() == 4
    extra = main["scans_share"]["3:20"] / main["scans_share"]["0:10"] - 1
    assert extra.min() == pytest.approx(0.16, abs=0.01) and extra.max() == pytest.approx(0.94, abs=0.01)


def test_a_run_without_the_rule_or_a_variant_beyond_it_is_one_line(capsys):
    bench = bench_module("fast_rounds")
    fixed_run = json.loads((ROOT / "data" / "quick_builds.json").read_text())["AX"]["runs"][3]
    assert bench.main([fixed_run]) == 2
    assert "made without design.fast_rounds; nothing to replay" in capsys.readouterr().err
    assert bench.main([SHIPPED["runs"][0], "--variants", "4:20"]) == 2
    assert "made with count 3, cap 20; 4:20 asks for rounds it never ran" in capsys.readouterr().err
