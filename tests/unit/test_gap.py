"""Where C3's 5.7 -> 8.0 gap goes, on simulated runs with known shares: the binary log's share
with Fieller's interval and C4's verdict, its figure, Yangsh888's toggles beside its own figures,
and the ablation run the render phase hands a claim report."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest

from claimlab import ablation, attribution, campaign, gap, records, stats, writer
from claimlab.claims import Condition, load_claims
from claimlab.errors import DataError
from claimlab.simulation import Noise, simulate_results
from conftest import ROOT

VERSIONS = {"mysql57": "5.7.23", "mysql80": "8.0.40", "mysql80_skip_log_bin": "8.0.40", "defaults": "9.7.4-2",
            "v57_values": "9.7.4-2"}


def _c3_run(times: dict[str, float], *, seed: int, n_runs: int = 1, n_blocks: int = 8, **options):
    """A C3 run on MySQL 9.7 as the runner stores it: every level side by side in each block
    (paired round by round), each level's server version as its target reports it."""
    levels = {Condition.of({"server": level}): ratio for level, ratio in times.items()}
    results = simulate_results(levels, claim="C3", experiment="insert_57_vs_80", workload="insert_loop",
                               metric="elapsed_s", n_runs=n_runs, n_blocks=n_blocks, n_iterations=6, paired=True,
                               seed=seed, **options)
    return results.assign(server_version=results["server"].map(VERSIONS))


# Yangsh888's own times (6.07, 20.06, 7.03 s) as the 5.7.23, 8.0.40 and skip-log-bin levels' ratios
SEED_LIKE = {"mysql57": 1.0, "mysql80": 20.06 / 6.07, "mysql80_skip_log_bin": 7.03 / 6.07, "defaults": 2.8,
             "v57_values": 1.05}


def test_the_binlogs_share_of_a_simulated_run_covers_the_true_share_and_supports_c4():
    results = _c3_run(SEED_LIKE, seed=11)
    table = gap.binlog_shares(results)
    assert list(table["slow"]) == ["MySQL 8.0.40", "MySQL 9.7.4"] and set(table["fast"]) == {"MySQL 5.7.23"}
    binlog, settings = table.iloc[0], table.iloc[1]
    truth = math.log(20.06 / 7.03) / math.log(20.06 / 6.07)
    assert binlog["share_lo"] < truth < binlog["share_hi"] and binlog["share_hi"] - binlog["share_lo"] < 0.15
    assert binlog["gap_lo"] < 20.06 / 6.07 < binlog["gap_hi"]
    assert binlog["closed_lo"] < 20.06 / 7.03 < binlog["closed_hi"]
    assert settings["share_lo"] < math.log(2.8 / 1.05) / math.log(2.8) < settings["share_hi"]
    assert binlog["most"] == "supported" and "above 50%" in binlog["most_reason"]
    assert binlog["seed_share"] == pytest.approx(truth)
    assert pd.isna(settings["seed_share"])     # the seed ran 8.0, not 9.7
    assert binlog["n_blocks"] == 8
    # the same share as Fieller's over the two block tables the verdict table pairs
    rows = results[results["metric"] == "elapsed_s"]
    side = {lv: rows[rows["server"] == lv] for lv in ("mysql57", "mysql80", "mysql80_skip_log_bin")}
    direct = stats.share_of_gap(stats.block_log_ratios(side["mysql57"], side["mysql80"], []),
                                stats.block_log_ratios(side["mysql80_skip_log_bin"], side["mysql80"], []))
    assert binlog["share"] == pytest.approx(direct.estimate) and binlog["share_lo"] == pytest.approx(direct.low)
    words = gap.shares_markdown(table)
    assert f"Yangsh888's own times give {binlog['seed_share']:.0%}: inside the interval" in words
    assert "Most of the gap (C4): **supported**" in words
    page = gap.shares_html(table)
    assert "MySQL 8.0.40 without the binary log (skip-log-bin)" in page and "run</th>" not in page


def test_a_binlog_that_is_little_of_the_gap_contradicts_c4_and_each_run_has_its_own_share():
    results = _c3_run({"mysql57": 1.0, "mysql80": 3.0, "mysql80_skip_log_bin": 2.6}, seed=12, n_runs=2)
    table = gap.binlog_shares(results)
    assert list(table["run_id"]) == ["sim-0", "sim-1"] and (table["slow"] == "MySQL 8.0.40").all()
    assert (table["most"] == "contradicted").all() and (table["share_hi"] < 0.5).all()
    assert all("above the interval" in line for line in gap.shares_markdown(table).splitlines())
    assert "<th>run</th>" in gap.shares_html(table)


def test_a_gap_the_run_cannot_tell_from_none_leaves_the_share_unbounded():
    results = _c3_run({"mysql57": 1.0, "mysql80": 1.0, "mysql80_skip_log_bin": 1.0}, seed=13, n_blocks=4,
                      noise=Noise(between_sd=0.05, within_sd=0.05))
    (row,) = gap.binlog_shares(results).to_dict("records")
    assert not row["bounded"] and row["most"] == "inconclusive" and "unbounded" in row["most_reason"]
    assert "this run cannot say" in gap.share_words(row)


def test_a_run_without_the_three_levels_has_no_share_and_a_missing_level_is_named():
    mariadb = _c3_run({"defaults": 1.0, "v57_values": 1.0, "v80_binlog": 2.5}, seed=14)
    assert gap.binlog_shares(mariadb).empty
    cut = _c3_run({"mysql57": 1.0, "mysql80": 3.0, "mysql80_skip_log_bin": 1.2}, seed=15, n_blocks=1)
    (row,) = gap.binlog_shares(cut).to_dict("records")   # a run cut after one block says so
    assert row["n_blocks"] == 0 and row["most"] == "inconclusive" and "a share needs two or more" in row["most_reason"]
    assert "no share, server=mysql80, mysql57 and mysql80_skip_log_bin share 1 block(s)" in gap.shares_markdown(
        pd.DataFrame([row]))
    with pytest.raises(DataError, match="no usable insert_loop elapsed_s values of server=mysql57"):
        stats.level_share(mariadb, "server", "defaults", "mysql57", "v57_values", workload="insert_loop",
                          metric="elapsed_s")


def test_the_seed_figures_are_the_claims_files():
    published = {f.what: f.value for f in load_claims(ROOT / "data" / "claims.yaml")["C3"].published}
    assert published["call idata(), MySQL 5.7"] == gap.SEED["5.7"]
    assert published["call idata(), MySQL 8.0"] == gap.SEED["8.0"]
    assert published["skip-log-bin, MySQL 8.0"] == gap.SEED["skip-log-bin"]
    write_set = "transaction_write_set_extraction=OFF"
    assert published[f"{write_set}, MySQL 8.0"] == gap.SEED[write_set]
    assert published["8.0 with each of five InnoDB/back_log settings set to 5.7 values"] == gap.SEED["five settings"]
    toggles = ablation.load(ROOT / "params" / "ablation" / "seed004_toggles_mysql80.yaml", "smoke")
    assert set(gap.FIVE_SETTINGS) | {"transaction_write_set_extraction", "log_bin"} == set(toggles.order)


# Each setting alone on 8.0.40 as the seed found it: write-set extraction off 0.735x, skip-log-bin
# 0.35x, the five others nothing; the cumulative steps compound them.
ALONE = {"log_bin": 0.35, "transaction_write_set_extraction": 0.735}


def _toggles_run(seed: int):
    abl = ablation.load(ROOT / "params" / "ablation" / "seed004_toggles_mysql80.yaml", "quick")
    times = {}
    for step in abl.steps():
        if step.condition == step.name:
            times[Condition.of({ablation.FACTOR: step.condition})] = float(np.prod([ALONE.get(o, 1.0)
                                                                                    for o in step.switched]))
    results = simulate_results(times, claim="ablation", experiment=abl.name, workload="insert_loop",
                               metric="elapsed_s", n_blocks=6, n_iterations=3, seed=seed,
                               noise=Noise(between_sd=0.01, within_sd=0.01, drift=0.0))
    return abl, results


def test_each_toggle_alone_stands_beside_the_seeds_figure():
    abl, results = _toggles_run(seed=21)
    shares = attribution.attribute(results, abl, n_boot=400, seed=5)
    table = gap.toggles_table(shares, abl).set_index("setting")
    assert list(table.index) == ["all of them together", "innodb_autoinc_lock_mode = 1",
                                 "innodb_undo_log_truncate = OFF", "innodb_max_dirty_pages_pct_lwm = 0",
                                 "innodb_max_dirty_pages_pct = 75", "back_log = 80",
                                 "transaction_write_set_extraction = OFF", "skip-log-bin"]
    skip, write_set = table.loc["skip-log-bin"], table.loc["transaction_write_set_extraction = OFF"]
    assert skip["ratio_lo"] < 0.35 < skip["ratio_hi"] and skip["against_seed"] == "as Yangsh888 found"
    assert skip["share"] == pytest.approx(math.log(0.35) / math.log(0.35 * 0.735), abs=0.01)
    assert skip["share_lo"] < skip["share"] < skip["share_hi"] < skip["share_lo"] + 0.05
    assert skip["seed"] == "20.06 → 7.03 s" and skip["seed_share"] == "88%"
    assert write_set["seed"] == "20.06 → 14.75 s" and write_set["seed_share"] == "26%"
    assert write_set["against_seed"] == "as Yangsh888 found"
    assert table.loc["back_log = 80", "seed"] == "no effect (19.87–20.32 s)"
    assert table.loc["back_log = 80", "against_seed"] == "no effect within ±5%, as Yangsh888 found"
    page = gap.toggles_html(table.reset_index())
    assert "100%: the gap itself" in page and "88%" in page and "-1% to 1%" in page
    assert "Largest share alone: **skip-log-bin**" in gap.toggles_markdown(table.reset_index(), shares)


def test_a_toggle_is_read_against_the_seed_on_both_sides():
    assert gap.against_seed(0.735, 0.95, 1.02) == "a smaller effect than Yangsh888's"
    assert gap.against_seed(0.735, 0.5, 0.6) == "a larger effect than Yangsh888's"
    five = gap._seed("back_log")[1]
    assert gap.against_seed(five, 0.90, 0.94) == "an effect Yangsh888 did not see"
    assert gap.against_seed(five, 0.93, 1.01) == "cannot say at ±5%"
    assert gap.against_seed(None, 0.9, 1.1) == "—"


def test_the_render_phase_hands_c3_its_newest_toggles_run_or_none(tmp_path, monkeypatch):
    # C3's published run is not under tmp_path (--from-data checks each run it renders): its ablation only
    monkeypatch.setattr(campaign, "published_runs", lambda: {"insert_57_vs_80": [], "binlog_default": []})
    assert campaign.stored(None, data_dir=tmp_path).ablations == {"insert_57_vs_80": None}
    assert gap.stored_toggles("seed004_toggles_mysql80", None, tmp_path) is None
    made = []
    for _ in range(2):
        manifest = records.RunManifest.new(experiment="seed004_toggles_mysql80", claim="ablation", profile="smoke",
                                           factors=[])
        run = writer.RunStore.create(tmp_path, manifest)
        run.finish("complete")
        made.append(run)
        time.sleep(0.01)
    assert campaign.stored(None, data_dir=tmp_path).ablations == {"insert_57_vs_80": made[-1].run_id}
    assert campaign.stored(None, data_dir=tmp_path, experiments=["binlog_default"]).ablations == {}
    assert gap.stored_toggles("seed004_toggles_mysql80", made[0].run_id, tmp_path) == made[0].path


def test_the_figure_draws_each_share_and_says_when_a_run_cannot():
    from claimlab import figures
    drawn = gap.binlog_shares(_c3_run(SEED_LIKE, seed=11))
    unbounded = gap.binlog_shares(_c3_run({"mysql57": 1.0, "mysql80": 1.0, "mysql80_skip_log_bin": 1.0}, seed=13,
                                          n_blocks=4, noise=Noise(between_sd=0.05, within_sd=0.05)))
    ax = figures.gap_shares(pd.concat([drawn, unbounded.assign(run_id="sim-1")], ignore_index=True)).axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("interval unbounded: this run cannot say") == 1
    assert texts.count("supported") == 2 and texts.count("inconclusive") == 1
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "MySQL 8.0.40\nwithout the binary log (skip-log-bin)\n(run sim-0)" and len(labels) == 3
    assert ax.get_xlim()[0] < 0 and ax.get_xlim()[1] > 1    # none of the gap to all of it, always in view
