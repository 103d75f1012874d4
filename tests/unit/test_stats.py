"""The statistics keep their promises on simulated data with a known truth, and say what they did.

The calibration tests simulate 1,000 experiments each (2,000 for rejection rates, whose
binomial noise is larger relative to their 3-7% window) with fixed seeds; their bounds are
the ones the engine promises (coverage 93-97%, A/A rejections 3-7%, power within 10 points),
so a wrong interval, test or stopping rule makes them fail. "Rejects" means what `analyze`
would report for a two-sided comparison: verdict supported, which needs the interval to
exclude 1 and the (Holm-adjusted) Welch test to agree, so the rate sits a little below 5%.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from claimlab import stats
from claimlab.claims import Comparison, Condition, load_claims
from claimlab.errors import DataError
from claimlab.simulation import Noise, simulate_comparison, simulate_log_values, simulate_results

CLAIMS = load_claims(Path(__file__).resolve().parents[2] / "data" / "claims.yaml")
SIMULATIONS = 1000
HIERARCHICAL = Noise(between_sd=0.04, within_sd=0.015, drift=0.01)
MARIADB = "10.11.19-MariaDB-0+deb12u1"


def comparison(**fields):
    base = dict(name="test", experiment="e", workload="w", metric="m",
                baseline=Condition.of({"f": "a"}), treatment=Condition.of({"f": "b"}),
                kind="effect", source_target="MySQL 8.0", direction="two_sided")
    return Comparison(**{**base, **fields})


def experiments(seed, ratio, n_blocks, n_iterations, noise=HIERARCHICAL, count=SIMULATIONS):
    """Baseline and treatment samples of `count` simulated experiments."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        logs, _ = simulate_log_values(rng, [1.0, ratio], n_blocks=n_blocks,
                                      n_iterations=n_iterations, noise=noise)
        values = np.exp(logs)
        yield stats.Sample.of(values[0]), stats.Sample.of(values[1]), rng


def coverage(seed, ratio, n_blocks, n_iterations, noise, design):
    hits = [
        stats.ratio_interval(a, b, design=design, n_boot=1000, rng=rng).contains(ratio)
        for a, b, rng in experiments(seed, ratio, n_blocks, n_iterations, noise)
    ]
    return np.mean(hits)


def rejects(a, b, rng, alpha=0.05, n_boot=1000):
    """What analyze() reports for a two-sided comparison of one claim: verdict supported."""
    interval = stats.ratio_interval(a, b, confidence=1 - alpha, n_boot=n_boot, rng=rng)
    significant = stats.welch_log_p(a.repetition_means, b.repetition_means) < alpha
    verdict, _, _ = stats.judge(comparison(), interval.low, interval.high, significant=significant)
    return verdict == "supported"


# --------------------------------------------------------------------------- calibration


def test_hierarchical_intervals_cover_the_true_ratio():
    assert 0.93 <= coverage(1, 1.10, 10, 5, HIERARCHICAL, "hierarchical") <= 0.97


def test_hierarchical_intervals_cover_with_few_restarts_and_noisy_iterations():
    noisy = Noise(between_sd=0.04, within_sd=0.04, drift=0.01)
    assert 0.93 <= coverage(2, 0.75, 6, 5, noisy, "hierarchical") <= 0.97


def test_flat_intervals_cover_when_measurements_are_independent():
    independent = Noise(between_sd=0.0, within_sd=0.03, drift=0.0)
    assert 0.93 <= coverage(3, 1.10, 1, 30, independent, "flat") <= 0.97


def test_intervals_cover_with_two_or_three_restarts():
    assert 0.93 <= coverage(12, 1.10, 3, 5, HIERARCHICAL, "hierarchical") <= 0.97
    # with two per side Welch's estimated degrees of freedom make the t interval conservative
    assert coverage(13, 1.10, 2, 5, HIERARCHICAL, "hierarchical") >= 0.93


def test_naive_flat_bootstrap_under_covers_hierarchical_data():
    naive = coverage(4, 1.10, 10, 5, HIERARCHICAL, "flat")
    assert naive < 0.80, "treating iterations as independent must give too-narrow intervals"


def test_a_a_comparisons_reject_at_the_nominal_rate():
    rate = np.mean([rejects(a, b, rng, n_boot=500)
                    for a, b, rng in experiments(5, 1.0, 10, 5, count=2 * SIMULATIONS)])
    assert 0.03 <= rate <= 0.07


def test_a_a_comparisons_reject_at_the_nominal_rate_under_sequential_stopping():
    rule = stats.StopRule(target_rel_width=0.10, min_blocks=3, max_blocks=20)
    aa = comparison()
    outcomes, stopped_at, naive = [], [], []
    for a, b, rng in experiments(6, 1.0, rule.max_blocks, 5, count=2 * SIMULATIONS):
        naive.append(np.any(welch_p_after_each_block(a, b)[rule.min_blocks - 1:] < 0.05))
        for blocks in range(rule.min_blocks, rule.max_blocks + 1):
            first_a = stats.Sample(a.repetitions[:blocks])
            first_b = stats.Sample(b.repetitions[:blocks])
            look = stats.sequential_look(first_a, first_b, aa, rule)
            if look.done or look.width <= rule.target_rel_width:
                break
        stopped_at.append(blocks)
        alpha = stats.sequential_alpha(rule, blocks)
        outcomes.append(rejects(first_a, first_b, rng, alpha=alpha, n_boot=500))
    assert 0.03 <= np.mean(outcomes) <= 0.07
    assert np.mean(np.array(stopped_at) < rule.max_blocks) > 0.5, "the rule must stop early"
    assert np.mean(naive) > 0.15, "testing at 5% after every block is what the design avoids"


def welch_p_after_each_block(a, b):
    """Welch p on log repetition means of the first k blocks, for every k (NaN for k = 1)."""
    n = np.arange(1, a.n_repetitions + 1)
    means, variances = [], []
    for sample in (a, b):
        logs = np.log(sample.repetition_means)
        mean = np.cumsum(logs) / n
        means.append(mean)
        with np.errstate(invalid="ignore", divide="ignore"):
            variances.append((np.cumsum(logs**2) - n * mean**2) / (n - 1) / n)
    se2 = variances[0] + variances[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        df = se2**2 / ((variances[0] ** 2 + variances[1] ** 2) / (n - 1))
        return 2 * sps.t.sf(np.abs(means[1] - means[0]) / np.sqrt(se2), df)


def test_reported_power_matches_the_simulated_detection_rate():
    ratio, blocks = 1.06, 6
    reported, detected = [], []
    for a, b, _ in experiments(7, ratio, blocks, 5):
        la, lb = np.log(a.repetition_means), np.log(b.repetition_means)
        reported.append(stats.welch_power(np.log(ratio), la.std(ddof=1), blocks,
                                          lb.std(ddof=1), blocks, 0.05))
        detected.append(stats.welch_log_p(a.repetition_means, b.repetition_means) < 0.05)
    assert 0.3 < np.mean(detected) < 0.9, "the scenario must not be trivially powered"
    assert abs(np.mean(reported) - np.mean(detected)) <= 0.10


def test_repetitions_needed_reach_the_promised_power():
    sd = np.sqrt(HIERARCHICAL.between_sd**2 + HIERARCHICAL.within_sd**2 / 5)
    needed = int(stats.repetitions_needed(np.log(1.05), sd, 0.05))
    detected = [stats.welch_log_p(a.repetition_means, b.repetition_means) < 0.05
                for a, b, _ in experiments(8, 1.05, needed, 5)]
    assert abs(np.mean(detected) - stats.POWER) <= 0.10


# --------------------------------------------------------------------------- building blocks


def test_bca_is_used_when_stable_and_the_fallback_is_reported():
    rng = np.random.default_rng(0)
    logs, _ = simulate_log_values(rng, [1.0, 1.2], n_blocks=8, n_iterations=4)
    a, b = stats.Sample.of(np.exp(logs[0])), stats.Sample.of(np.exp(logs[1]))
    assert stats.ratio_interval(a, b, rng=rng).method == "bca, hierarchical"
    four = stats.ratio_interval(stats.Sample(a.repetitions[:4]), stats.Sample(b.repetitions[:4]),
                                rng=rng)
    assert four.method == "percentile, hierarchical" and "repetitions per side" in four.note
    three = stats.ratio_interval(stats.Sample(a.repetitions[:3]), stats.Sample(b.repetitions[:3]),
                                 rng=rng)
    assert three.method == "t, hierarchical" and "too few to bootstrap" in three.note
    median = stats.ratio_interval(a, b, statistic="median", rng=rng)
    assert median.method == "percentile, hierarchical" and "median" in median.note
    with pytest.raises(ValueError, match="two or more repetitions"):
        stats.ratio_interval(stats.Sample(a.repetitions[:1]), b, rng=rng)


def test_intervals_are_deterministic_for_a_seed():
    logs, _ = simulate_log_values(np.random.default_rng(0), [1.0, 1.2], n_blocks=6, n_iterations=3)
    a, b = stats.Sample.of(np.exp(logs[0])), stats.Sample.of(np.exp(logs[1]))
    first = stats.ratio_interval(a, b, rng=np.random.default_rng(9))
    assert first == stats.ratio_interval(a, b, rng=np.random.default_rng(9))


def test_holm_adjustment():
    adjusted = stats.holm([0.01, 0.04, 0.03, np.nan])
    np.testing.assert_allclose(adjusted[:3], [0.03, 0.06, 0.06])
    assert np.isnan(adjusted[3])
    assert stats.holm([0.5, 0.9]).tolist() == [1.0, 1.0]


def test_effect_sizes():
    baseline, treatment = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0])
    assert stats.hodges_lehmann_ratio(baseline, treatment) == pytest.approx(2.0)
    p, delta = stats.mann_whitney(baseline, treatment)
    assert delta == pytest.approx((7 - 1) / 9), "7 pairs higher, 1 tie, 1 lower"
    assert stats.mann_whitney(baseline, baseline * 10)[1] == 1.0
    assert 0 < p <= 1


def test_power_and_minimal_detectable_effect_agree():
    mde = stats.minimal_detectable_effect(0.04, 10, 0.04, 10, 0.05)
    assert stats.welch_power(np.log1p(mde), 0.04, 10, 0.04, 10, 0.05) == pytest.approx(0.8, abs=1e-6)
    assert stats.welch_power(np.log(3.0), 0.04, 10, 0.04, 10, 0.05) == pytest.approx(1.0)
    assert np.isnan(stats.repetitions_needed(np.log(1.0001), 0.5, 0.05))
    assert stats.repetitions_for_equivalence(0.04, 0.05, 0.05) > stats.repetitions_for_equivalence(
        0.02, 0.05, 0.05)


@pytest.mark.parametrize(
    ("fields", "low", "high", "significant", "verdict", "in_ci"),
    [
        (dict(published_ratio=2.85, direction="higher"), 2.5, 3.1, True, "supported", True),
        (dict(published_ratio=2.85, direction="higher"), 1.2, 1.4, True, "supported", False),
        (dict(published_ratio=2.85, direction="higher"), 1.2, 1.4, False, "inconclusive", False),
        (dict(published_ratio=2.85, direction="higher"), 0.7, 0.9, True, "contradicted", False),
        (dict(published_ratio=0.7509, direction="lower"), 0.97, 1.03, False, "contradicted", False),
        (dict(published_ratio=1.025, direction="higher"), 0.98, 1.04, False, "inconclusive", True),
        (dict(direction="lower"), 0.97, 1.02, False, "contradicted", None),
        (dict(direction="lower"), 0.90, 1.02, False, "inconclusive", None),
        (dict(direction="two_sided"), 0.90, 0.95, True, "supported", None),
        (dict(direction="two_sided"), 0.97, 1.04, False, "contradicted", None),
        (dict(direction="two_sided"), 0.90, 1.10, False, "inconclusive", None),
        (dict(kind="null", direction=None), 0.97, 1.04, False, "supported", None),
        (dict(kind="null", direction=None), 0.70, 0.80, True, "contradicted", None),
        (dict(kind="null", direction=None), 0.90, 1.01, False, "inconclusive", None),
    ],
)
def test_verdicts(fields, low, high, significant, verdict, in_ci):
    found = stats.judge(comparison(**fields), low, high, significant=significant)
    assert found[:2] == (verdict, in_ci)
    assert found[2]


def test_target_note():
    assert stats.target_note("MySQL 8.0", ["8.0.40"]) == ""
    assert stats.target_note("MySQL 5.7 and 8.0 (default configs)", ["5.7.44", "8.0.40"]) == ""
    assert "target differs" in stats.target_note("MySQL 8.0", ["10.11.19-MariaDB-0+deb12u1"])
    assert "target differs" in stats.target_note("MySQL 5.7.28", ["5.7.44"])
    assert "target differs" in stats.target_note("MySQL 8.0", ["8.0.40", "80.1"])


# --------------------------------------------------------------------------- analyze


def c4_results(ratio=2.85, **options):
    defaults = dict(claim="C4", n_blocks=8, n_iterations=5, server_version=MARIADB, seed=11)
    return simulate_comparison(CLAIMS["C4"].comparisons[0], true_ratio=ratio, **{**defaults, **options})


def test_analyze_supports_a_clear_effect_and_says_the_target_differs():
    table = stats.analyze(c4_results(), CLAIMS["C4"], n_boot=500)
    assert list(table.columns) == list(stats.TABLE_COLUMNS)
    row = table.iloc[0]
    assert row["verdict"] == "supported" and row["published_in_ci"]
    assert row["ratio_mean_lo"] < 2.85 < row["ratio_mean_hi"]
    assert row["ci_method"] == "bca, hierarchical"
    assert (row["n_reps_baseline"], row["n_obs_treatment"]) == (8, 40)
    assert "target differs" in row["verdict_note"] and "MySQL 8.0" in row["verdict_note"]
    assert "contention rows included (0 of 80)" in row["verdict_note"]
    assert row["p_holm"] == row["p_welch_log"] < 0.001
    assert row["cliffs_delta"] == 1.0 and row["power_published"] > 0.99
    line = stats.summary_line(table, CLAIMS["C4"])
    assert line.startswith("C4 ") and "binlog_on_vs_off" in line and "supported" in line
    assert "\n" not in line


def test_analyze_is_deterministic_for_a_seed():
    results = c4_results(ratio=1.1)
    first = stats.analyze(results, CLAIMS["C4"], n_boot=300, seed=3)
    pd.testing.assert_frame_equal(first, stats.analyze(results, CLAIMS["C4"], n_boot=300, seed=3))
    other = stats.analyze(results, CLAIMS["C4"], n_boot=300, seed=4)
    assert other["ratio_mean_lo"].iloc[0] != first["ratio_mean_lo"].iloc[0]


def test_analyze_contradicts_and_explains_an_inconclusive_claim():
    c1 = CLAIMS["C1"]
    first = c1.comparisons[0]
    conditions = {first.baseline: 1.0, first.treatment: 1.0, c1.comparisons[1].baseline: 1.0}
    results = simulate_results(conditions, claim="C1", experiment="charset_mismatch",
                               workload="oltp", metric="qps", unit="queries/s", n_blocks=4,
                               n_iterations=3, noise=Noise(between_sd=0.06), seed=5,
                               server_version=MARIADB)
    table = stats.analyze(results, c1, n_boot=500).set_index("comparison")
    assert table.loc["mismatch_vs_latin1", "verdict"] == "contradicted"
    assert not table.loc["mismatch_vs_latin1", "published_in_ci"]
    assert (table["p_holm"] >= table["p_welch_log"]).all()
    null = table.loc["mismatch_vs_utf8mb4"]
    assert null["verdict"] == "inconclusive"
    assert f"about {int(null['n_needed_published'])} repetitions per side would show equivalence" in (
        null["verdict_note"])
    assert table.loc["utf8mb4_vs_latin1", "ci_method"] == "percentile, hierarchical"
    assert "BCa needs 5+ repetitions" in table.loc["utf8mb4_vs_latin1", "verdict_note"]


def test_comparisons_without_their_levels_are_not_tested():
    table = stats.analyze(c4_results(), CLAIMS["C3"], n_boot=200)
    assert (table["verdict"] == "not_tested").all()
    assert table["verdict_note"].str.contains("no rows of experiment insert_57_vs_80").all()
    table = stats.analyze(c4_results().assign(experiment="insert_57_vs_80"), CLAIMS["C3"], n_boot=200)
    assert "factor server absent" in table["verdict_note"].iloc[0]
    results = c4_results().assign(experiment="insert_57_vs_80", server="mysql80")
    table = stats.analyze(results, CLAIMS["C3"], n_boot=200).set_index("comparison")
    assert "no rows for server=mysql57 (present: server mysql80)" in table.loc[
        "v80_vs_v57_insert", "verdict_note"]
    assert "no bulk_insert/elapsed_s rows (present: workload insert_loop; metric elapsed_s)" in (
        table.loc["v80_vs_v57_bulk_insert", "verdict_note"])
    table = stats.analyze(c4_results(), CLAIMS["C2"], n_boot=200)
    assert table["verdict_note"].str.contains("no rows of experiment collation_cost").all()


def test_contention_rows_are_included_or_excluded_and_said():
    results = c4_results(contention_rate=0.1)
    busy = int(results["contention"].sum())
    kept = stats.analyze(results, CLAIMS["C4"], n_boot=200).iloc[0]
    dropped = stats.analyze(results, CLAIMS["C4"], n_boot=200, include_contention=False).iloc[0]
    assert kept["contention"] == "included" and f"included ({busy} of 80)" in kept["verdict_note"]
    assert dropped["contention"] == "excluded"
    assert f"{busy} contention rows excluded: seq " in dropped["verdict_note"]
    assert " iteration " in dropped["verdict_note"]
    assert dropped["n_obs_baseline"] + dropped["n_obs_treatment"] == 80 - busy


def test_outliers_and_unusable_rows_are_listed_not_silently_dropped():
    results = c4_results()
    spike = results.index[(results["condition"] == "binlog=off")][3]
    results.loc[spike, "value"] *= 5
    results.loc[results.index[0], "value"] = np.nan
    label = f"seq {results.loc[spike, 'seq']} iteration {results.loc[spike, 'iteration']}"
    kept = stats.analyze(results, CLAIMS["C4"], n_boot=200).iloc[0]
    assert "outliers flagged" in kept["verdict_note"] and f"kept: {label}" in kept["verdict_note"]
    assert "1 rows without a positive value excluded" in kept["verdict_note"]
    assert kept["n_obs_baseline"] + kept["n_obs_treatment"] == 79
    dropped = stats.analyze(results, CLAIMS["C4"], n_boot=200, exclude_outliers=True).iloc[0]
    assert f"excluded: {label}" in dropped["verdict_note"]
    assert dropped["n_obs_baseline"] + dropped["n_obs_treatment"] == 78


def test_one_repetition_falls_back_to_flat_and_stays_inconclusive():
    results = c4_results(n_blocks=1, n_iterations=10)
    row = stats.analyze(results, CLAIMS["C4"], n_boot=300).iloc[0]
    assert row["ci_method"].endswith("flat")
    assert row["verdict"] == "inconclusive"
    assert "one repetition on a side" in row["verdict_note"]
    assert "this interval alone would say supported" in row["verdict_note"]
    assert np.isnan(row["mde"]) and np.isnan(row["n_needed_published"])
    single = stats.analyze(c4_results(n_blocks=1, n_iterations=1), CLAIMS["C4"]).iloc[0]
    assert single["ci_method"] == "none" and single["verdict"] == "inconclusive"
    assert "no interval could be computed" in single["verdict_note"]


def test_targets_that_ran_both_sides_get_a_row_each():
    results = pd.concat([
        c4_results(seed=1).assign(target="mariadb"),
        c4_results(seed=2, ratio=1.5).assign(target="mysql80", server_version="8.0.40"),
    ])
    table = stats.analyze(results, CLAIMS["C4"], n_boot=200)
    assert table["target"].tolist() == ["mariadb", "mysql80"]
    assert "target differs" not in table["verdict_note"].iloc[1]


def test_a_server_restarted_mid_repetition_counts_as_two_processes():
    results = c4_results().assign(attempt=1)
    retried = (results["condition"] == "binlog=off") & (results["repetition"] == 2) & (
        results["iteration"] >= 3)
    results.loc[retried, "attempt"] = 2
    row = stats.analyze(results, CLAIMS["C4"], n_boot=200).iloc[0]
    assert (row["n_reps_baseline"], row["n_reps_treatment"], row["n_obs_baseline"]) == (9, 8, 40)


def test_missing_columns_are_a_data_error():
    with pytest.raises(DataError, match="seq"):
        stats.analyze(c4_results().drop(columns=["seq"]), CLAIMS["C4"])


# --------------------------------------------------------------------------- diagnostics


def test_diagnostics_find_drift_and_warmup():
    noise = Noise(between_sd=0.01, within_sd=0.01, drift=0.3, warmup=0.1)
    found = stats.diagnostics(c4_results(noise=noise, n_blocks=12))
    assert found.drift["flagged"].all()
    np.testing.assert_allclose(found.drift["change_per_100"], np.expm1(0.3 / 120 * 100), rtol=0.2)
    assert found.warmup["flagged"].all()
    np.testing.assert_allclose(found.warmup["first_vs_rest"], np.exp(0.1), rtol=0.02)
    quiet = stats.diagnostics(c4_results(noise=Noise(drift=0.0), n_blocks=12))
    assert not quiet.drift["flagged"].any() and not quiet.warmup["flagged"].any()
    assert quiet.outliers.empty


def test_diagnostics_list_outliers_and_the_contention_policy():
    results = c4_results(contention_rate=0.05)
    results.loc[results.index[5], "value"] *= 3
    found = stats.diagnostics(results)
    assert results.loc[results.index[5], "seq"] in found.outliers["seq"].tolist()
    assert found.outliers["rule"].str.contains("Iglewicz").all()
    assert (found.outliers["robust_z"].abs() > stats.OUTLIER_Z).all()
    busy = int(results["contention"].sum())
    assert found.contention == f"included: {busy} of 80 rows were taken on a busy machine"
    assert stats.diagnostics(results, include_contention=False).contention.startswith("excluded")


# --------------------------------------------------------------------------- sequential stopping


def test_boundaries_spend_alpha_as_designed():
    rule = stats.StopRule(min_blocks=3, max_blocks=20)
    assert stats.sequential_alpha(rule, 3) == pytest.approx(0.05, abs=0.002)
    levels = [stats.sequential_alpha(rule, blocks) for blocks in range(3, 21)]
    assert all(0.02 < level <= 0.0502 for level in levels)
    assert stats.sequential_alpha(rule, 50) == levels[-1]
    assert stats.obrien_fleming_spending(np.array([1.0]), 0.05)[0] == pytest.approx(0.05)


def test_should_stop_waits_decides_and_caps():
    rule = stats.StopRule(target_rel_width=0.02, min_blocks=3, max_blocks=8)
    c4 = CLAIMS["C4"]
    clear = c4_results(n_blocks=8)
    early = stats.should_stop(clear[clear["repetition"] < 2], c4, rule)
    assert not early.stop and "2 of at least 3 blocks" in early.reason
    decided = [stats.should_stop(clear[clear["repetition"] < k], c4, rule) for k in range(3, 9)]
    assert any(decision.stop and "decided" in decision.reason for decision in decided)
    refuted = stats.should_stop(c4_results(ratio=1.01, n_blocks=8), c4, rule)
    assert refuted.stop and "decided" in refuted.reason, "the published 2.85 is ruled out"
    two_sided = next(c for c in CLAIMS["C2"].comparisons if c.name == "unicode_vs_general")
    unclear = simulate_comparison(two_sided, true_ratio=1.02, claim="C2", n_blocks=8, seed=3)
    last = stats.should_stop(unclear, CLAIMS["C2"], rule)
    assert last.stop and "cap of 8 blocks" in last.reason and last.blocks == 8
    assert "open: unicode_vs_general" in last.reason
    assert not stats.should_stop(unclear[unclear["repetition"] < 5], CLAIMS["C2"], rule).stop
    nothing = stats.should_stop(clear, CLAIMS["C3"], rule)
    assert nothing.stop and "nothing to test: v80_vs_v57_insert: no rows of experiment" in nothing.reason
    one = stats.should_stop(clear[clear["repetition"] < 1], c4, rule)
    assert not one.stop and "1 of at least 3 blocks" in one.reason


def test_analyze_uses_the_level_the_stopping_rule_left():
    rule = stats.StopRule(min_blocks=3, max_blocks=20)
    row = stats.analyze(c4_results(), CLAIMS["C4"], n_boot=200, stop_rule=rule).iloc[0]
    assert row["confidence"] == pytest.approx(1 - stats.sequential_alpha(rule, 8))
    assert "sequential design (O'Brien-Fleming" in row["verdict_note"]
    assert "repeated confidence interval, valid however the run stopped: [" in row["verdict_note"]


def test_stop_rule_validation():
    with pytest.raises(ValueError, match="min_blocks"):
        stats.StopRule(min_blocks=1)
    with pytest.raises(ValueError, match="alpha"):
        stats.StopRule(alpha=0.5)
    with pytest.raises(ValueError, match="looks"):
        stats.StopRule(min_blocks=2, max_blocks=200)
