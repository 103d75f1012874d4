"""The statistics' building blocks and the verdict table, on data whose right answer is known.

Calibration (coverage, A/A rates, sequential stopping) lives in test_simulation.py.
"""

import dataclasses
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from claimlab import stats
from claimlab.claims import Claim, Comparison, Condition, load_claims
from claimlab.errors import DataError
from claimlab.simulation import Noise, SlowState, simulate_comparison, simulate_results
from claimlab.stats.sequential import _boundaries
from claimlab.stats.verdicts import decided

CLAIMS = load_claims(Path(__file__).resolve().parents[2] / "data" / "claims.yaml")
MARIADB = "10.11.19-MariaDB-0+deb12u1"
SMALLER = "inconclusive (smaller than published)"


def comparison(**fields):
    base = dict(name="test", experiment="e", workload="w", metric="m",
                baseline=Condition.of({"f": "a"}), treatment=Condition.of({"f": "b"}),
                kind="effect", source_target="MySQL 8.0", direction="two_sided")
    return Comparison(**{**base, **fields})


# --------------------------------------------------------------------------- verdict rules


@pytest.mark.parametrize(("fields", "low", "high", "word", "label"), [
    (dict(published_ratio=2.85, direction="higher"), 2.5, 3.1, "supported", "supported, as published"),
    (dict(published_ratio=2.85, direction="higher"), 2.07, 2.65, "supported", "supported, smaller than published"),
    (dict(published_ratio=2.85, direction="higher"), 3.0, 3.5, "supported", "supported, larger than published"),
    (dict(published_ratio=2.85, direction="higher"), 1.03, 1.5, "inconclusive", SMALLER),
    (dict(published_ratio=2.85, direction="higher"), 0.97, 1.04, "contradicted", "contradicted: no effect"),
    (dict(published_ratio=2.85, direction="higher"), 0.7, 0.9, "contradicted", "contradicted: opposite direction"),
    (dict(published_ratio=0.7509, direction="lower"), 0.83, 0.999, "inconclusive", SMALLER),
    (dict(published_ratio=0.7509, direction="lower"), 0.83, 1.001, "inconclusive", SMALLER),
    (dict(published_ratio=0.7509, direction="lower"), 0.70, 0.80, "supported", "supported, as published"),
    (dict(published_ratio=0.7509, direction="lower"), 0.85, 0.90, "supported", "supported, smaller than published"),
    (dict(published_ratio=0.7509, direction="lower"), 1.01, 1.2, "contradicted", "contradicted: opposite direction"),
    # a directional claim is contradicted by the band's edge on its side, whatever the other end
    # does (C3 defaults / 5.7 values on MariaDB, against the published 3.3x)
    (dict(published_ratio=3.3, direction="higher"), 0.914, 1.016, "contradicted", "contradicted: no effect"),
    (dict(published_ratio=3.3, direction="higher"), 0.90, 1.06, "inconclusive", SMALLER),
    (dict(published_ratio=0.7509, direction="lower"), 0.96, 1.20, "contradicted", "contradicted: no effect"),
    (dict(published_ratio=0.7509, direction="lower"), 0.94, 1.20, "inconclusive", SMALLER),
    (dict(published_ratio=2.85, direction="higher"), 0.96, 0.99, "contradicted", "contradicted: opposite direction"),
    (dict(published_ratio=2.85, direction="higher"), 0.96, 1.01, "contradicted", "contradicted: no effect"),
    (dict(published_ratio=1.025, direction="higher", equivalence_margin=0.0125), 0.99, 1.03,
     "inconclusive", "inconclusive"),
    (dict(published_ratio=1.025, direction="higher", equivalence_margin=0.0125), 0.99, 1.02,
     "inconclusive", SMALLER),
    (dict(published_ratio=1.025, direction="higher", equivalence_margin=0.0125), 0.99, 1.01,
     "contradicted", "contradicted: no effect"),
    (dict(published_ratio=1.025, direction="higher", equivalence_margin=0.0125), 1.015, 1.03,
     "supported", "supported, as published"),
    (dict(published_ratio=1.025, direction="higher", equivalence_margin=0.0125), 1.06, 1.1,
     "supported", "supported, larger than published"),
    (dict(direction="lower"), 0.80, 0.90, "supported", "supported (no published size)"),
    (dict(direction="lower"), 0.90, 1.02, "inconclusive", "inconclusive"),
    (dict(direction="two_sided"), 0.90, 0.94, "supported", "supported: lower"),
    (dict(direction="two_sided"), 0.97, 1.04, "contradicted", "contradicted: no effect"),
    (dict(direction="two_sided"), 0.90, 1.10, "inconclusive", "inconclusive"),
    (dict(kind="null", direction=None), 0.97, 1.04, "supported", "supported: no difference within ±5%"),
    (dict(kind="null", direction=None), 0.70, 0.80, "contradicted", "contradicted: lower than 0.9524"),
    (dict(kind="null", direction=None), 0.90, 1.01, "inconclusive", "inconclusive"),
])
def test_verdict_rules(fields, low, high, word, label):
    comp = comparison(**fields)
    found = stats.verdict(comp.kind, comp.direction, comp.published_ratio, comp.equivalence_margin,
                          low, high)
    assert (found.word, found.label) == (word, label)
    assert stats.verdict(comp.kind, comp.direction, comp.published_ratio, 0.05, math.nan, 1.0).word == (
        "inconclusive")


GRID = np.exp(np.linspace(np.log(0.6), np.log(3.5), 61))
CASES = [("effect", "higher", 2.85), ("effect", "higher", 1.025), ("effect", "higher", None),
         ("effect", "lower", 0.7509), ("effect", "lower", None), ("effect", "two_sided", None),
         ("null", None, None)]


@pytest.mark.parametrize(("kind", "direction", "published"), CASES)
@pytest.mark.parametrize("margin", [0.01, 0.05, 0.2])
def test_widening_an_interval_never_strengthens_the_verdict(kind, direction, published, margin):
    """Exhaustive over a 61-point grid: every one-step widening keeps the verdict or makes it
    inconclusive (so, by chaining, every widening does), and sweeping either bound outward
    visits each label in one unbroken stretch."""
    def judged(i, j):
        return stats.verdict(kind, direction, published, margin, GRID[i], GRID[j])

    n = len(GRID)
    table = {(i, j): judged(i, j) for i in range(n) for j in range(i, n)}
    for (i, j), found in table.items():
        for wider in ((i - 1, j), (i, j + 1)):
            if wider in table:
                assert table[wider].word in (found.word, "inconclusive"), (GRID[i], GRID[j], wider)
    sweeps = [[table[(i, j)].label for i in range(j, -1, -1)] for j in range(n)]
    sweeps += [[table[(i, j)].label for j in range(i, n)] for i in range(n)]
    for labels in sweeps:
        runs = [label for label, _ in itertools.groupby(labels)]
        assert len(runs) == len(set(runs)), runs


@pytest.mark.parametrize(("kind", "direction", "published"), CASES)
@pytest.mark.parametrize("margin", [0.01, 0.05, 0.2])
def test_decided_and_labels_over_arrays_are_the_verdicts_word_and_label(kind, direction, published, margin):
    """`decided` and `Labeller.labels` (the simulations' vectorized reads) against `verdict`,
    interval by interval: the grid's every pair, bounds exactly on the band's edges and the
    published ratio, random intervals about them, and intervals with no finite bound."""
    edges = [*stats.equivalence_band(margin), 1.0] + ([published] if published else [])
    points = np.concatenate([GRID, edges])
    low, high = (a.ravel() for a in np.meshgrid(points, points))
    keep = low <= high
    rng = np.random.default_rng(20261127)
    centre, half = rng.choice(np.log(edges), 4000) + rng.normal(0, 0.05, 4000), rng.exponential(0.03, 4000)
    low = np.concatenate([low[keep], np.exp(centre - half), [math.nan, 0.9, math.nan]])
    high = np.concatenate([high[keep], np.exp(centre + half), [1.1, math.inf, math.nan]])
    verdicts = [stats.verdict(kind, direction, published, margin, lo, hi) for lo, hi in zip(low, high)]
    found = decided(kind, direction, published, margin, low, high)
    assert found.tolist() == [v.word != "inconclusive" for v in verdicts]
    assert 0 < found.mean() < 1
    labels = stats.labeller(kind, direction, published, margin).labels(low, high)
    assert labels.tolist() == [v.label for v in verdicts]
    assert len(set(labels)) >= 3


def test_the_old_rule_flip_is_gone():
    """[0.83, 0.999] and the weaker [0.83, 1.001] used to be inconclusive and contradicted."""
    c1 = CLAIMS["C1"].comparisons[0]
    words = {stats.verdict(c1.kind, c1.direction, c1.published_ratio, c1.equivalence_margin, 0.83, hi).word
             for hi in (0.999, 1.001)}
    assert words == {"inconclusive"}


@pytest.mark.parametrize(("fields", "low", "high", "edge"), [
    # a C2 run on MySQL: 1.009 [0.999, 1.020], published 1.025 just outside
    (dict(published_ratio=1.025, direction="higher", equivalence_margin=0.0125), 0.999, 1.020,
     "inconclusive"),
    # C2 on MariaDB, unicode vs general: 1.070 [1.041, 1.099], the band's edge 1.05 just inside
    (dict(direction="two_sided"), 1.041, 1.099, "supported: higher"),
    # C4: 2.26 [2.18, 2.34] against 2.85, far from every edge
    (dict(published_ratio=2.85, direction="higher"), 2.18, 2.34, ""),
    (dict(kind="null", direction=None), 0.98, 1.02, ""),
    (dict(kind="null", direction=None), 0.96, 1.045, "inconclusive"),
])
def test_a_verdict_near_a_decision_edge_names_the_other_side(fields, low, high, edge):
    comp = comparison(**fields)
    args = (comp.kind, comp.direction, comp.published_ratio, comp.equivalence_margin)
    assert stats.edge_label(*args, low, high) == edge
    assert stats.edge_label(*args, math.nan, high) == ""


@pytest.mark.parametrize(("kind", "direction", "published"), CASES)
def test_an_edge_never_jumps_from_one_decision_to_the_other(kind, direction, published):
    """Across an edge lies "inconclusive" or another label of the same decision, never the
    opposite decision: an interval 1.5x as wide or as narrow cannot skip the inconclusive region."""
    def word(label):
        return re.split(r"[,:( ]", label)[0]

    seen = set()
    for i in range(0, len(GRID), 2):
        for j in range(i, len(GRID), 2):
            found = stats.verdict(kind, direction, published, 0.05, GRID[i], GRID[j])
            edge = stats.edge_label(kind, direction, published, 0.05, GRID[i], GRID[j])
            if edge:
                seen.add(found.word)
                assert {word(edge), found.word} != {"supported", "contradicted"}, (GRID[i], GRID[j], edge)
    assert seen, "no interval on the grid is near an edge"


def test_target_note():
    assert stats.target_note("MySQL 8.0", ["8.0.40"]) == ""
    assert stats.target_note("MySQL 5.7 and 8.0 (default configs)", ["5.7.44", "8.0.40"]) == ""
    assert "target differs" in stats.target_note("MySQL 8.0", [MARIADB])
    assert "target differs" in stats.target_note("MySQL 5.7.28", ["5.7.44"])


# --------------------------------------------------------------------------- intervals, tests, power


def test_log_ratio_one_run_is_the_paired_t():
    blocks = np.array([0.10, 0.12, 0.08, 0.15, 0.11])
    summary = stats.log_ratio(blocks[None, :])
    low, high = summary.interval(0.05)
    reference = sps.ttest_1samp(blocks, 0.0)
    ci = reference.confidence_interval(0.95)
    assert (float(low), float(high)) == pytest.approx((math.exp(ci.low), math.exp(ci.high)))
    assert float(summary.p_value()) == pytest.approx(reference.pvalue)
    assert (int(summary.n_runs), int(summary.n_blocks), float(summary.df)) == (1, 5, 4.0)


def test_log_ratio_several_runs_uses_run_means():
    blocks = np.array([[0.1, 0.2, np.nan], [0.3, 0.3, 0.3], [0.0, 0.2, 0.1]])
    summary = stats.log_ratio(blocks)
    means = np.array([0.15, 0.3, 0.1])
    assert float(summary.mean) == pytest.approx(means.mean())
    assert float(summary.se) == pytest.approx(means.std(ddof=1) / math.sqrt(3))
    assert (int(summary.n_runs), int(summary.n_blocks), float(summary.df)) == (3, 8, 2.0)
    assert np.isnan(stats.log_ratio(np.array([[0.1, np.nan]])).p_value())


def test_run_components_separate_between_and_within_run_spread():
    rng = np.random.default_rng(0)
    blocks = rng.normal(0, 0.05, (40, 8)) + rng.normal(0, 0.1, (40, 1))
    parts = stats.run_components(blocks)
    assert parts["within_sd"] == pytest.approx(0.05, rel=0.05)
    assert parts["between_sd"] == pytest.approx(0.1, rel=0.25)
    assert parts["p_runs_differ"] < 1e-6
    agree = stats.run_components(rng.normal(0, 0.05, (4, 8)))
    assert agree["p_runs_differ"] > 0.01 and agree["between_sd"] < 0.03


def test_holm_adjustment_and_a_missing_p_value_is_refused():
    np.testing.assert_allclose(stats.holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="every member"):
        stats.holm([0.01, np.nan])


def test_power_mde_and_blocks_needed_agree_and_never_hide_nan():
    mde = stats.minimal_detectable_effect(0.04, 10, 0.05)
    assert stats.paired_power(np.log1p(mde), 0.04, 10, 0.05) == pytest.approx(0.8, abs=1e-6)
    assert stats.paired_power(np.log(3.0), 0.04, 10, 0.05) == pytest.approx(1.0)
    # scipy's nct.cdf is NaN here; the power must still be a number, near 1
    assert stats.paired_power(np.log(2.5), 0.088, 4, 0.05) == pytest.approx(1.0, abs=1e-6)
    needed = stats.blocks_needed(np.log(1.05), 0.04, 0.05)
    assert stats.paired_power(np.log(1.05), 0.04, int(needed), 0.05) >= 0.8
    assert stats.paired_power(np.log(1.05), 0.04, int(needed) - 1, 0.05) < 0.8
    assert np.isnan(stats.blocks_needed(np.log(1.0001), 0.5, 0.05))
    assert np.isnan(stats.paired_power(0.1, 0.04, 1, 0.05))
    assert stats.blocks_for_margin(0.04, 0.05, 0.05) > stats.blocks_for_margin(0.02, 0.05, 0.05)
    # two blocks in a family of four (alpha 0.0125): the bracket once fell short and brentq raised
    for n, alpha in [(2, 0.0125), (2, 0.001), (3, 0.0125)]:
        mde = stats.minimal_detectable_effect(0.05, n, alpha)
        assert stats.paired_power(np.log1p(mde), 0.05, n, alpha) == pytest.approx(0.8, abs=1e-6)


EDGE_RATIO = math.log(1.06)   # 1% beyond the 1.05 edge of a 5% equivalence margin


_null_label = stats.labeller("null", None, None, 0.05)   # a 5% equivalence margin's rule


def test_label_chances_match_runs_simulated_through_the_librarys_own_interval():
    # 3000 runs of 12 normal block log ratios (fixed seed), each analysed by log_ratio and
    # verdict as analyze does: the label shares must match label_chances' model of them
    rng = np.random.default_rng(7)
    mu, sd, n = math.log(1.06), 0.016, 12
    summary = stats.log_ratio(rng.normal(mu, sd, size=(3000, 1, n)))
    lows, highs = summary.interval(0.05)
    simulated = pd.Series([_null_label(lo, hi) for lo, hi in zip(lows, highs)]).value_counts(normalize=True)
    chances = stats.label_chances(_null_label, mu, sd, n, 0.95)
    assert set(chances) <= set(simulated.index)
    for label, share in simulated.items():
        assert chances.get(label, 0.0) == pytest.approx(share, abs=0.03), label
    # and two runs agree as often as the simulated label shares say
    assert stats.agreement_chance(chances) == pytest.approx(simulated.pow(2).sum(), abs=0.03)
    with pytest.raises(ValueError, match="2 blocks"):
        stats.label_chances(_null_label, mu, sd, 1, 0.95)
    # the labeller is the verdict rule's label, interval by interval
    for low, high in ((1.01, 1.04), (1.03, 1.07), (1.06, 1.09)):
        assert _null_label(low, high) == stats.verdict("null", None, None, 0.05, low, high).label


def test_agreement_is_not_monotone_in_blocks_and_the_search_starts_at_the_design():
    def chance(n, mu=EDGE_RATIO, between=0.0):
        return stats.agreement_chance(stats.label_chances(_null_label, mu, 0.016, n, 0.95, between))

    # two blocks rarely decide, so two such runs agree, on "inconclusive"; 12 blocks split
    assert chance(2) > 0.8 and chance(12) < 0.6 and chance(64) > 0.95
    needed = stats.blocks_for_agreement(_null_label, math.log(1.06), 0.016, 0.95, 12)
    assert 12 < needed < 200 and chance(int(needed)) >= 0.95 and chance(int(needed) - 1) < 0.95
    # far from every edge the design's own count is enough
    assert stats.blocks_for_agreement(_null_label, 0.0, 0.016, 0.95, 6) == 6
    assert chance(6, mu=0.0) > 0.99
    # a between-run spread blocks cannot average away keeps agreement short of the goal
    assert math.isnan(stats.blocks_for_agreement(_null_label, math.log(1.06), 0.016, 0.95, 12, between=0.01))
    assert chance(4096, between=0.01) < 0.95


def test_analyze_gives_each_verdict_its_chance_on_a_rerun():
    c2 = dataclasses.replace(CLAIMS["C2"], comparisons=tuple(
        dataclasses.replace(c, statistic="mean") for c in CLAIMS["C2"].comparisons))
    two_sided = next(c for c in c2.comparisons if c.name == "unicode_vs_general")
    claim = dataclasses.replace(c2, comparisons=(two_sided,))
    tables = {ratio: stats.analyze(simulate_comparison(two_sided, true_ratio=ratio, claim="C2", n_blocks=8,
                                                       seed=3), claim) for ratio in (1.5, 1.06)}
    firm, edge = tables[1.5].iloc[0], tables[1.06].iloc[0]
    assert firm["verdict_label"] == "supported: higher" and firm["rerun_chance"] > 0.99
    assert "rerun" not in firm["verdict_note"]
    # the plug-in: the row's own estimate, spread and blocks through label_chances
    n = int(edge["n_blocks"])
    again = stats.label_chances(stats.labeller("effect", "two_sided", None, 0.05),
                                math.log(edge["estimate"]), edge["sd_unit"], n, edge["confidence"])
    assert edge["rerun_chance"] == pytest.approx(again[edge["verdict_label"]])
    assert edge["rerun_chance"] < 0.95 and "with a chance of about" in edge["verdict_note"]
    untested = stats.analyze(simulate_comparison(two_sided, true_ratio=1.5, claim="C2", n_blocks=1, seed=3), claim)
    assert math.isnan(untested.iloc[0]["rerun_chance"])


def test_unpaired_ratio_interval_is_welch_on_log_start_means():
    a = stats.Sample.of([[1.0, 1.1], [1.2], [0.9, 1.0]])
    b = stats.Sample.of([[2.0], [2.4, 2.2], [1.9]])
    found = stats.ratio_interval(a, b)
    reference = sps.ttest_ind(b.log_means, a.log_means, equal_var=False).confidence_interval(0.95)
    assert (found.low, found.high) == pytest.approx((math.exp(reference.low), math.exp(reference.high)))
    with pytest.raises(ValueError, match="two or more"):
        stats.ratio_interval(stats.Sample.of([[1.0]]), b)


# --------------------------------------------------------------------------- speed witness


def test_speed_flags_find_the_slow_state_in_bimodal_data():
    results = simulate_comparison(CLAIMS["C4"].comparisons[0], true_ratio=2.0, claim="C4", n_blocks=20,
                                  n_iterations=10, paired=True, probes=True, seed=4,
                                  slow=SlowState(share=0.25, mean_length=5))
    flags = stats.speed_flags(results)
    assert flags.index.equals(results.index) and flags.notna().all()
    timings = results["metric"] == "elapsed_s"
    keys = ["repetition", "iteration", "condition"]
    truth = results[timings].merge(_slow_truth(results), on=keys)["slow"].to_numpy()
    found = flags[timings].to_numpy(dtype=bool)
    assert 0.15 < truth.mean() < 0.35
    assert (found == truth).mean() > 0.99
    assert stats.flagged_share(flags[timings]) == pytest.approx(truth.mean(), abs=0.01)


def test_slow_probes_count_each_measurements_slow_probes_and_agree_with_the_flags():
    results = simulate_comparison(CLAIMS["C4"].comparisons[0], true_ratio=2.0, claim="C4", n_blocks=20,
                                  n_iterations=10, paired=True, probes=True, seed=4,
                                  slow=SlowState(share=0.25, mean_length=5))
    # one measurement with only its after-probe slow, one with neither probe recorded
    first, second = ((results["repetition"] == 0) & (results["iteration"] == i) & (results["condition"] == c)
                     for i, c in ((0, results["condition"].iloc[0]), (1, results["condition"].iloc[0])))
    results.loc[first & (results["metric"] == "probe_before_s"), "value"] = 0.010
    results.loc[first & (results["metric"] == "probe_after_s"), "value"] = 0.050
    results = results[~(second & results["metric"].isin(stats.PROBE_METRICS))]
    counts = stats.slow_probes(results)
    assert set(counts.dropna().unique()) == {0.0, 1.0, 2.0}

    def first_of(per_measurement):
        return per_measurement.xs((0, 0, results["condition"].iloc[0]), level=("repetition", "iteration", "condition"))

    assert first_of(counts).item() == 1
    sides = stats.slow_probe_sides(results)
    assert list(sides.columns) == list(stats.PROBE_METRICS) and sides.index.equals(counts.index)
    assert first_of(sides).to_numpy().tolist() == [[0.0, 1.0]]     # the probe after, not before
    assert sides.sum(axis=1).equals(counts.fillna(0)) and sides.isna().any(axis=1).sum() == counts.isna().sum()
    flags = stats.speed_flags(results)
    per_measurement = flags.groupby([results[k] for k in counts.index.names]).first()
    seen = counts.dropna()
    assert ((seen > 0) == per_measurement.reindex(seen.index).astype(bool)).all()
    assert stats.slow_probes(results[~results["metric"].isin(stats.PROBE_METRICS)]) is None


def _slow_truth(results):
    """Which simulated measurements were slow: their probes are about twice the normal 10 ms."""
    probes = results[results["metric"] == "probe_before_s"]
    return probes.assign(slow=probes["value"] > 0.015)[["repetition", "iteration", "condition", "slow"]]


def test_idle_time_flags_a_busy_workloads_slow_state_that_its_probes_miss():
    # as seen on one Intel host: C1's QPS fell with the busy share while every probe stayed normal
    options = dict(claim="C1", n_blocks=10, n_iterations=4, paired=True, seed=7,
                   slow=SlowState(share=0.3, mean_length=3))
    comparison = CLAIMS["C1"].comparisons[0]
    results = simulate_comparison(comparison, true_ratio=0.8, busy=0.99, **options)
    flags = stats.speed_flags(results)
    measured = results["metric"] == comparison.metric
    busy = results[results["metric"] == "machine_busy_share"]
    truth = results[measured].merge(busy.assign(slow=busy["value"] < 0.9)[
        ["repetition", "iteration", "condition", "slow"]], on=["repetition", "iteration", "condition"])["slow"]
    assert 0.15 < truth.mean() < 0.45
    assert (flags[measured].to_numpy(dtype=bool) == truth.to_numpy()).all()

    # a workload that waits by design (a scan on one of two vCPUs) has no idle-time witness
    waiting = simulate_comparison(comparison, true_ratio=0.8, busy=0.5, **options)
    assert stats.speed_flags(waiting).isna().all()
    row = stats.analyze(waiting, CLAIMS["C1"]).iloc[0]
    assert math.isnan(row["flagged_share"]) and "no witness" in row["verdict_note"]

    # with probes too, a measurement is slow when either witness says so: in the first five blocks
    # only the probes see the slow state, in the others only the busy share
    both = simulate_comparison(comparison, true_ratio=0.8, busy=0.99, probes=True, **options)
    early = both["repetition"] < 5
    both.loc[early & (both["metric"] == "machine_busy_share"), "value"] = 0.99
    both.loc[~early & both["metric"].isin(stats.PROBE_METRICS), "value"] = 0.01
    measured_early = results.loc[measured, "repetition"].to_numpy() < 5
    assert truth[measured_early].any() and truth[~measured_early].any()
    either = stats.speed_flags(both)
    assert (either[both["metric"] == comparison.metric].to_numpy(dtype=bool) == truth.to_numpy()).all()
    every = stats.analyze(results, CLAIMS["C1"]).iloc[0]
    normal = stats.analyze(results, CLAIMS["C1"], normal_only=True).iloc[0]
    assert every["flagged_share"] == normal["flagged_share"] == pytest.approx(truth.mean())
    assert normal["n_obs_baseline"] < every["n_obs_baseline"] and "only normal-state" in normal["verdict_note"]


def test_no_probes_means_no_witness():
    results = simulate_comparison(CLAIMS["C4"].comparisons[0], true_ratio=2.0, claim="C4", n_blocks=4)
    flags = stats.speed_flags(results)
    assert flags.isna().all() and math.isnan(stats.flagged_share(flags))
    row = stats.analyze(results, CLAIMS["C4"]).iloc[0]
    assert math.isnan(row["flagged_share"]) and "no witness" in row["verdict_note"]


def test_analyze_can_use_normal_state_measurements_only_and_says_so():
    results = simulate_comparison(CLAIMS["C4"].comparisons[0], true_ratio=2.0, claim="C4", n_blocks=8,
                                  n_iterations=6, paired=True, probes=True, seed=6,
                                  slow=SlowState(share=0.3, mean_length=3))
    every = stats.analyze(results, CLAIMS["C4"]).iloc[0]
    normal = stats.analyze(results, CLAIMS["C4"], normal_only=True).iloc[0]
    assert 0.1 < every["flagged_share"] < 0.5 and normal["flagged_share"] == every["flagged_share"]
    assert normal["speed_state"] == "normal only" and "only normal-state measurements used" in (
        normal["verdict_note"])
    assert normal["n_obs_baseline"] < every["n_obs_baseline"]
    assert "round(s) with one side missing or excluded" in normal["verdict_note"]
    assert normal["ci_high"] / normal["ci_low"] < every["ci_high"] / every["ci_low"]


# --------------------------------------------------------------------------- analyze


def c4_results(ratio=2.85, **options):
    defaults = dict(claim="C4", n_blocks=8, n_iterations=5, server_version=MARIADB, seed=11)
    return simulate_comparison(CLAIMS["C4"].comparisons[0], true_ratio=ratio, **{**defaults, **options})


def test_analyze_row_has_the_contract_columns_and_the_paired_t():
    results = c4_results()
    table = stats.analyze(results, CLAIMS["C4"])
    assert list(table.columns) == list(stats.TABLE_COLUMNS)
    row = table.iloc[0]
    logs = results.assign(log=np.log(results["value"])).groupby(["repetition", "condition"])["log"].mean()
    blocks = (logs.xs("binlog=on", level="condition") - logs.xs("binlog=off", level="condition")).to_numpy()
    reference = sps.ttest_1samp(blocks, 0.0)
    ci = reference.confidence_interval(0.95)
    assert row["estimate"] == pytest.approx(math.exp(blocks.mean()))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((math.exp(ci.low), math.exp(ci.high)))
    assert row["p_value"] == pytest.approx(reference.pvalue)
    assert (row["n_runs"], row["n_blocks"], row["pairing"]) == (1, 8, "blocks")
    assert row["verdict"] == "supported" and row["verdict_label"].startswith("supported")
    assert "target differs" in row["verdict_note"] and "contention rows included (0 of 80)" in row["verdict_note"]


def test_a_run_holding_one_side_only_is_neither_paired_nor_named():
    """C3's `defaults` level is MariaDB in MariaDB's run and 9.7 in MySQL's: a comparison of 9.7
    with 5.7 pairs MySQL's blocks only, and its server column must not name MariaDB."""
    both = c4_results()
    lone = c4_results(seed=12, server_version="10.11.19-MariaDB")
    lone = lone[lone["condition"] == "binlog=on"].assign(run_id="other-run")
    alone = stats.analyze(both, CLAIMS["C4"]).iloc[0]
    mixed = stats.analyze(pd.concat([both, lone], ignore_index=True), CLAIMS["C4"]).iloc[0]
    assert mixed["server_version"] == alone["server_version"] == MARIADB
    assert (mixed["estimate"], mixed["n_blocks"]) == (alone["estimate"], alone["n_blocks"])


def test_paired_rounds_cancel_what_both_sides_share():
    """One server start per block, both sides alternating: the start's level cancels, so the
    interval is far narrower than with separate starts of the same noise."""
    noise = Noise(between_sd=0.1, within_sd=0.01, interaction_sd=0.0)
    paired = stats.analyze(c4_results(ratio=1.1, paired=True, noise=noise), CLAIMS["C4"]).iloc[0]
    separate = stats.analyze(c4_results(ratio=1.1, noise=noise), CLAIMS["C4"]).iloc[0]
    assert paired["pairing"] == "rounds" and separate["pairing"] == "blocks"
    assert paired["ci_high"] / paired["ci_low"] < 1.02 < separate["ci_high"] / separate["ci_low"]


def test_unset_factors_are_strata_paired_within_the_block():
    """A factor the comparison does not set (ps) must not pool two server starts as one unit."""
    levels = {Condition.of({"binlog": b, "ps": p}): (2.0 if b == "on" else 1.0) * (3.0 if p == "on" else 1.0)
              for b in ("off", "on") for p in ("off", "on")}
    results = simulate_results(levels, claim="C4", experiment="binlog_default", workload="insert_loop",
                               metric="elapsed_s", n_blocks=6, n_iterations=4,
                               noise=Noise(between_sd=0.02, within_sd=0.01), seed=2)
    row = stats.analyze(results, CLAIMS["C4"]).iloc[0]
    assert row["estimate"] == pytest.approx(2.0, rel=0.03)
    assert row["n_blocks"] == 6 and row["ci_high"] / row["ci_low"] < 1.1


def test_the_note_gives_the_range_of_the_blocks_ratios():
    """Two of six starts in a state of their own (a whole start 8% slower on the treatment side, as
    MySQL's unicode scan at some code addresses) show in the note's per-start range."""
    results = c4_results(ratio=2.0, paired=True, noise=Noise(between_sd=0.0, within_sd=0.002, interaction_sd=0.0))
    slow = (results["repetition"].isin([1, 4])) & (results["binlog"] == "on")
    results.loc[slow, "value"] *= 1.08
    row = stats.analyze(results, CLAIMS["C4"]).iloc[0]
    low, high = (float(x) for x in re.search(r"ratio per block ([\d.]+) to ([\d.]+)\)",
                                             row["verdict_note"]).groups())
    assert low == pytest.approx(2.0, rel=0.01) and high == pytest.approx(2.16, rel=0.01)


def test_several_runs_are_the_top_level():
    results = pd.concat([c4_results(seed=s).assign(run_id=f"run{s}") for s in (1, 2, 3)])
    row = stats.analyze(results, CLAIMS["C4"]).iloc[0]
    assert (row["n_runs"], row["n_blocks"]) == (3, 24)
    assert "t interval over 3 runs (df 2, ratio per block " in row["verdict_note"]
    spread = stats.between_runs(results, CLAIMS["C4"])[0]
    assert list(spread.columns) == list(stats.SPREAD_COLUMNS) and spread["n_runs"].iloc[0] == 3
    levels = stats.run_levels(results, CLAIMS["C4"])
    assert list(levels.columns) == list(stats.RUN_COLUMNS) and list(levels["run_id"]) == ["run1", "run2", "run3"]
    both = stats.between_runs(results, CLAIMS["C4"])   # the two tables from one pass
    pd.testing.assert_frame_equal(both[0], spread)
    pd.testing.assert_frame_equal(both[1], levels)
    # each run's estimate is the one `analyze` gives that run alone
    for run_id, estimate in zip(levels["run_id"], levels["estimate"]):
        alone = stats.analyze(results[results["run_id"] == run_id], CLAIMS["C4"]).iloc[0]
        assert estimate == pytest.approx(alone["estimate"], rel=1e-9)


def test_runs_together_near_an_edge_say_how_many_runs_would_settle_it():
    """Four runs of C4 at 1.055-1.085 (binlog's claimed 2.85 far off; the band's edge 1.05 near):
    pooled, the interval reaches into the band and a 1.5x narrower one would not. runs_to_settle is
    the fewest runs at which two such analyses read alike with 95% chance at these runs' spread,
    so one run fewer does not; runs far from any edge, and a single run, get none."""
    quiet = Noise(between_sd=0.001, within_sd=0.002, interaction_sd=0.0)

    def runs(ratios):
        return pd.concat([c4_results(ratio=r, seed=i, noise=quiet).assign(run_id=f"run{i}")
                          for i, r in enumerate(ratios)])

    row = stats.analyze(runs((1.055, 1.07, 1.085, 1.06)), CLAIMS["C4"]).iloc[0]
    assert row["n_runs"] == 4 and row["verdict"] == "inconclusive" and row["edge_label"].startswith("supported")
    decide = stats.labeller("effect", "higher", 2.85, 0.05)
    settle = row["runs_to_settle"]
    assert settle > 4 and settle == stats.blocks_for_agreement(
        decide, math.log(row["estimate"]), row["sd_unit"], row["confidence"], 4)

    def agreement(n):
        return stats.agreement_chance(stats.label_chances(decide, math.log(row["estimate"]), row["sd_unit"],
                                                          int(n), row["confidence"]))

    assert agreement(settle) >= 0.95 > agreement(settle - 1)
    assert f"about {settle:.0f} runs analysed together would read alike with 95% chance" in row["verdict_note"]
    firm = stats.analyze(runs((2.8, 2.9, 2.85)), CLAIMS["C4"]).iloc[0]
    assert firm["edge_label"] == "" and math.isnan(firm["runs_to_settle"])
    single = stats.analyze(runs((1.06,)), CLAIMS["C4"]).iloc[0]
    assert single["n_runs"] == 1 and math.isnan(single["runs_to_settle"])


def test_the_runs_spread_says_each_runs_baseline_level_and_whether_the_estimates_follow_it():
    """Four runs whose baseline levels are 1.0-1.6x apart, the ratio rising with the level (2.0 at
    1.0, 2.3 at 1.6), as C1's ratio follows the machine's speed on one vCPU. Each run's baseline is
    its geometric mean, and the correlation over runs is strongly positive; with two runs, none."""
    runs = []
    for number, speed in enumerate((1.0, 1.2, 1.4, 1.6)):
        run = c4_results(ratio=2.0 + 0.5 * (speed - 1.0), seed=number,
                         noise=Noise(between_sd=0.002, within_sd=0.002, interaction_sd=0.0))
        runs.append(run.assign(run_id=f"run{number}", value=run["value"] * speed))
    spread = stats.between_runs(pd.concat(runs), CLAIMS["C4"])[0].iloc[0]
    assert spread["baseline"] == "binlog=off insert_loop/elapsed_s"
    levels = stats.run_levels(pd.concat(runs), CLAIMS["C4"])
    assert set(levels["baseline"]) == {spread["baseline"]}
    base = [float(np.exp(np.log(r.loc[r["condition"] == "binlog=off", "value"]).mean())) for r in runs]
    assert list(levels["baseline_level"]) == pytest.approx(base, rel=1e-9)
    assert spread["baseline_corr"] > 0.95
    assert math.isnan(stats.between_runs(pd.concat(runs[:2]), CLAIMS["C4"])[0].iloc[0]["baseline_corr"])


def test_families_split_alpha_and_a_missing_p_value_stays_in_the_family():
    c1 = CLAIMS["C1"]
    conditions = {c1.comparisons[0].baseline: 1.0, c1.comparisons[0].treatment: 0.8,
                  c1.comparisons[1].baseline: 0.8}
    results = simulate_results(conditions, claim="C1", experiment="charset_mismatch", workload="oltp",
                               metric="qps", unit="queries/s", n_blocks=6, n_iterations=3, seed=5)
    table = stats.analyze(results, c1).set_index("comparison")
    effects = table.loc[["mismatch_vs_latin1", "utf8mb4_vs_latin1"]]
    assert (effects["family_size"] == 2).all()
    np.testing.assert_allclose(effects["confidence"], 0.975)
    assert table.loc["mismatch_vs_utf8mb4", "family_size"] == 1
    assert table.loc["mismatch_vs_utf8mb4", "confidence"] == pytest.approx(0.95)
    np.testing.assert_allclose(effects["p_family"], stats.holm(effects["p_value"].tolist()))
    lonely = results[~((results["condition"] == "charset=utf8mb4") & (results["repetition"] > 0))]
    table = stats.analyze(lonely, c1).set_index("comparison")
    assert np.isnan(table.loc["utf8mb4_vs_latin1", "p_value"])
    assert "no p-value for utf8mb4_vs_latin1: counted as p = 1" in table.loc["mismatch_vs_latin1", "verdict_note"]
    assert table.loc["mismatch_vs_latin1", "p_family"] == pytest.approx(
        min(1.0, 2 * table.loc["mismatch_vs_latin1", "p_value"]))


def test_a_family_measured_in_one_run_on_several_servers_is_one_family():
    # C3's run on MySQL 9.7 measures its insert-loop family on 9.7.4's option sets ("mysql") and on
    # the tarball servers its levels start ("mysql57+mysql80"). Keyed by target it split in two,
    # each member at 97.5% where the family of four leaves 98.75%.
    c3 = CLAIMS["C3"]
    servers = {"defaults": ("mysql", 3.0), "v57_values": ("mysql", 1.0), "v80_binlog": ("mysql", 3.0),
               "mysql57": ("mysql57", 1.0), "mysql80": ("mysql80", 3.0), "mysql80_skip_log_bin": ("mysql80", 1.2)}
    results = simulate_results({Condition.of({"server": s}): r for s, (_, r) in servers.items()}, claim="C3",
                               experiment="insert_57_vs_80", workload="insert_loop", metric="elapsed_s",
                               n_blocks=6, n_iterations=3, paired=True, seed=3)
    results["target"] = results["server"].map({s: t for s, (t, _) in servers.items()})
    table = stats.analyze(results, c3)
    family = table[(table["family"] == "insert_loop") & (table["verdict"] != "not_tested")]
    assert {"mysql", "mysql57+mysql80"} <= set(family["target"]) and len(family) >= 3
    assert (family["family_size"] == len(family)).all()
    np.testing.assert_allclose(family["confidence"], 1 - 0.05 / len(family))
    np.testing.assert_allclose(family["p_family"], stats.holm(family["p_value"].tolist()))
    # the notes say a family by its size, never by its key (insert_loop, a workload's)
    assert family["verdict_note"].str.contains(f"one of {len(family)} comparisons sharing one error rate").all()
    assert not family["verdict_note"].str.contains("insert_loop").any()
    # another run of the family (another server's) is a family of its own
    other = results.assign(run_id="sim-other", target="mariadb")
    other = other[other["server"].isin(["defaults", "v57_values", "v80_binlog"])]
    both = stats.analyze(pd.concat([results, other], ignore_index=True), c3)
    on_mariadb = both[(both["family"] == "insert_loop") & (both["target"] == "mariadb")
                      & (both["verdict"] != "not_tested")]
    assert len(on_mariadb) and (on_mariadb["family_size"] == len(on_mariadb)).all()
    assert (both[(both["family"] == "insert_loop") & (both["target"] != "mariadb")
                 & (both["verdict"] != "not_tested")]["family_size"] == len(family)).all()


def test_a_family_mixing_equivalence_and_effects_is_refused():
    with pytest.raises(ValueError, match="mixes effect and null"):
        Claim(id="C9", title="t", sources=("s",), source_target="x", setup="", published=(),
              comparisons=(comparison(name="a", family="f"),
                           comparison(name="b", family="f", kind="null", direction=None)))
    assert comparison(name="solo").family == "solo"


def test_comparisons_without_their_levels_are_not_tested():
    table = stats.analyze(c4_results(), CLAIMS["C3"])
    assert (table["verdict"] == "not_tested").all()
    assert table["verdict_note"].str.contains("no rows of experiment insert_57_vs_80").all()
    results = c4_results().assign(experiment="insert_57_vs_80", server="mysql80")
    table = stats.analyze(results, CLAIMS["C3"]).set_index("comparison")
    # said as a reader names the levels: the note reaches the report
    assert "no rows for MySQL 5.7.23 (present: server MySQL 8.0.40)" in table.loc["v80_vs_v57_insert", "verdict_note"]


def test_levels_on_different_targets_are_compared_across_them():
    results = c4_results()
    results["target"] = np.where(results["condition"] == "binlog=on", "mysql80", "mysql57")
    row = stats.analyze(results, CLAIMS["C4"]).iloc[0]
    assert row["target"] == "mysql57+mysql80" and row["verdict"] == "supported"


def test_exclusions_are_listed_not_silent():
    results = c4_results(contention_rate=0.1)
    busy = int(results["contention"].sum())
    spike = results.index[results["condition"] == "binlog=off"][3]
    results.loc[spike, "value"] *= 5
    results.loc[results.index[0], "value"] = np.nan
    kept = stats.analyze(results, CLAIMS["C4"]).iloc[0]
    assert "outliers flagged" in kept["verdict_note"] and "kept: seq" in kept["verdict_note"]
    assert "1 row without a positive value excluded" in kept["verdict_note"]   # not "1 rows"
    assert f"contention rows included ({busy - results.loc[results.index[0], 'contention']}" in kept["verdict_note"]
    dropped = stats.analyze(results, CLAIMS["C4"], include_contention=False, exclude_outliers=True).iloc[0]
    assert "contention rows excluded: seq" in dropped["verdict_note"] and "excluded: seq" in dropped["verdict_note"]
    assert dropped["n_obs_baseline"] + dropped["n_obs_treatment"] < kept["n_obs_baseline"] + kept["n_obs_treatment"]
    # a note counts every row of a kind but names the first ten, then says how many more
    crowded = c4_results(contention_rate=0.6)
    busy = int(crowded["contention"].sum())
    note = stats.analyze(crowded, CLAIMS["C4"], include_contention=False).iloc[0]["verdict_note"]
    named = note.split(f"{busy} contention rows excluded: ")[1].split(";")[0]
    assert busy > 12 and named.count("seq ") == 10 and named.endswith(f" and {busy - 10} more"), named


def test_a_side_emptied_by_exclusions_says_which_first():
    # Before: the reason began with the outliers' note (kept, not excluded), so `claimlab analyze`,
    # which prints a note's first clause, said outliers where contention had emptied the side.
    results = c4_results(contention_rate=1.0)
    row = stats.analyze(results, CLAIMS["C4"], include_contention=False).iloc[0]
    assert row["verdict"] == "not_tested"
    first = row["verdict_note"].removeprefix("not tested: ").split(";")[0]
    assert first == f"every row of one side excluded ({int(results['contention'].sum())} under contention)", first


def test_outlier_lists_name_each_level_as_a_reader_does():
    # Before: "kept: seq 2 iteration 1 server=mysql57", a condition's key in a reader's note.
    results = c4_results().assign(experiment="insert_57_vs_80", server_version="5.7.23")
    results["server"] = results.pop("binlog").map({"on": "mysql80", "off": "mysql57"})
    results["condition"] = "server=" + results["server"]
    spike = results.index[results["server"] == "mysql57"][3]
    results.loc[spike, "value"] *= 5
    comp = dataclasses.replace(CLAIMS["C4"].comparisons[0], experiment="insert_57_vs_80",
                               baseline=Condition.of({"server": "mysql57"}),
                               treatment=Condition.of({"server": "mysql80"}))
    note = stats.analyze(results, dataclasses.replace(CLAIMS["C4"], comparisons=(comp,))).iloc[0]["verdict_note"]
    kept = note.split("kept: ", 1)[1].split(";")[0]
    assert f"seq {results.loc[spike, 'seq']} iteration {results.loc[spike, 'iteration']} (MySQL 5.7.23)" in kept
    assert "server=" not in note.split("kept: ", 1)[1]


def test_a_comparison_measured_mostly_in_the_slow_state_says_it_was_a_slow_hour():
    # a quarter of the scans slow (a quiet hour) against nine tenths (BG's MySQL C2 kept 7% fast)
    main = next(c for c in CLAIMS["C2"].comparisons if c.name == "uca_ai_vs_utf8mb3")
    claim = dataclasses.replace(CLAIMS["C2"], comparisons=(main,))
    rows = {share: stats.analyze(simulate_comparison(
        main, true_ratio=1.12, claim="C2", n_blocks=12, n_iterations=14, paired=True, seed=5,
        server_version=MARIADB, slow=SlowState(share=share, mean_length=8)), claim).iloc[0] for share in (0.25, 0.9)}
    quiet, slow = rows[0.25], rows[0.9]
    assert quiet["fast_share"] > 0.5 and "a slow hour" not in quiet["verdict_note"], quiet["fast_share"]
    assert slow["fast_share"] < stats.SLOW_HOUR, slow["fast_share"]
    assert f"a slow hour: only {slow['fast_share']:.0%} of the values were in the fast state" in slow["verdict_note"]
    # a plain mean has no fast state to count
    plain = dataclasses.replace(main, statistic="mean")
    mean_row = stats.analyze(simulate_comparison(plain, true_ratio=1.12, claim="C2", n_blocks=4, seed=5),
                             dataclasses.replace(claim, comparisons=(plain,))).iloc[0]
    assert math.isnan(mean_row["fast_share"]) and "a slow hour" not in mean_row["verdict_note"]


def test_a_mild_slow_state_on_one_side_is_flagged_in_the_row_and_its_note():
    """x1.1 on 40% of the treatment's values and 10% of the baseline's, which the fast-state band
    keeps (10 blocks x 15 rounds, within-start spread 2%): the row flags it with the bound of its
    bias and the note says so; the same run without it is not flagged."""
    main = next(c for c in CLAIMS["C2"].comparisons if c.name == "uca_ai_vs_utf8mb3")
    claim = dataclasses.replace(CLAIMS["C2"], comparisons=(main,))
    clean = simulate_comparison(main, true_ratio=1.0, claim="C2", n_blocks=10, n_iterations=15, paired=True,
                                seed=8, server_version=MARIADB, noise=Noise(within_sd=0.02))
    rng = np.random.default_rng(8)
    treated = (clean["condition"] == main.treatment.label).to_numpy()
    slowed = rng.random(len(clean)) < np.where(treated, 0.4, 0.1)
    frames = {"clean": clean, "slowed": clean.assign(value=clean["value"] * np.where(slowed, 1.1, 1.0))}
    rows = {name: stats.analyze(frame, claim).iloc[0] for name, frame in frames.items()}
    assert rows["slowed"]["side_state_p"] < 0.05 and "a slow state on one side" in rows["slowed"]["verdict_note"]
    assert 0.015 < rows["slowed"]["side_bias_bound"] < 0.1
    assert f"biased by up to {rows['slowed']['side_bias_bound']:.1%}" in rows["slowed"]["verdict_note"]
    assert rows["clean"]["side_state_p"] >= 0.05 and "a slow state on one side" not in rows["clean"]["verdict_note"]
    assert rows["clean"]["side_bias_bound"] < rows["slowed"]["side_bias_bound"]


def test_one_block_gives_no_interval_and_stays_inconclusive():
    row = stats.analyze(c4_results(n_blocks=1), CLAIMS["C4"]).iloc[0]
    assert row["verdict"] == "inconclusive" and np.isnan(row["ci_low"])
    assert "fewer than two blocks" in row["verdict_note"]


def test_missing_columns_are_a_data_error():
    with pytest.raises(DataError, match="seq"):
        stats.analyze(c4_results().drop(columns=["seq"]), CLAIMS["C4"])


# --------------------------------------------------------------------------- diagnostics


def test_diagnostics_find_drift_warmup_and_outliers():
    noise = Noise(between_sd=0.01, within_sd=0.01, drift=0.3, warmup=0.1)
    found = stats.diagnostics(c4_results(noise=noise, n_blocks=12))
    assert found.drift["flagged"].all() and found.warmup["flagged"].all()
    np.testing.assert_allclose(found.warmup["first_vs_rest"], np.exp(0.1), rtol=0.02)
    quiet = stats.diagnostics(c4_results(noise=Noise(drift=0.0), n_blocks=12))
    assert not quiet.drift["flagged"].any() and not quiet.warmup["flagged"].any()
    results = c4_results()
    results.loc[results.index[5], "value"] *= 3
    outliers = stats.diagnostics(results).outliers
    assert results.loc[results.index[5], "seq"] in outliers["seq"].tolist()
    assert (outliers["robust_z"].abs() > stats.OUTLIER_Z).all()


# --------------------------------------------------------------------------- sequential stopping


def test_boundaries_spend_alpha_as_designed():
    rule = stats.StopRule(min_blocks=3, max_blocks=20)
    _, final = _boundaries(3, 20, 0.05)
    assert 2 * sps.t.sf(final[0], 2) == pytest.approx(0.05, abs=0.002)   # the first look leaves it all
    # a run that stops before the cap is read at a calibrated level below what the looks left
    # (tests/unit/test_simulation.py: the A/A rate at or under 5% at every spread); at the cap, not
    assert 0.035 < stats.sequential_alpha(rule, 3) < 0.05
    assert stats.sequential_alpha(rule, 20) == pytest.approx(2 * sps.t.sf(final[-1], 19))
    levels = [stats.sequential_alpha(rule, blocks) for blocks in range(3, 21)]
    assert all(0.02 < level <= 0.0502 for level in levels)
    assert stats.sequential_alpha(rule, 50) == levels[-1]
    assert stats.sequential_alpha(rule, 20, family_size=2) < levels[-1]


def test_after_a_sequential_design_the_p_value_crosses_its_level_where_the_interval_crosses_one():
    # Before: the fixed-sample p (under 0.05 in about 6% of A/A runs, where the interval excluded 1
    # in under 5%), e.g. p = 0.039 beside an interval containing 1.
    rule = stats.StopRule()
    agree = []
    for seed in range(16):
        results = c4_results(ratio=1.03, n_blocks=6, noise=Noise(interaction_sd=0.03), seed=seed)
        row = stats.analyze(results, CLAIMS["C4"], stop_rule=rule).iloc[0]
        assert row["confidence"] > 0.95        # the level the design leaves at its last look
        excludes = not row["ci_low"] <= 1 <= row["ci_high"]
        agree.append((row["p_value"] < 0.05) == excludes)
        fixed = stats.analyze(results, CLAIMS["C4"]).iloc[0]     # a fixed design's p is the t test's own
        assert row["p_value"] == pytest.approx(min(1.0, fixed["p_value"] * 0.05 / (1 - row["confidence"])))
    assert all(agree)


def test_blocks_whose_ratios_do_not_differ_decide_nothing():
    # Before: a point interval, p = 0 and a rerun chance of 1 from two identical blocks (and, at an
    # estimate equal to the published 2.85, a rounding-made "smaller than published")
    results = c4_results(ratio=2.85, n_blocks=2, n_iterations=3, paired=True, noise=Noise(0, 0, 0, 0, 0, 0))
    row = stats.analyze(results, CLAIMS["C4"]).iloc[0]
    assert row["verdict"] == "inconclusive" and row["n_blocks"] == 2
    assert all(math.isnan(row[c]) for c in ("ci_low", "ci_high", "p_value", "mde", "rerun_chance"))
    assert "the blocks' ratios do not differ at all" in row["verdict_note"]


def test_a_comparison_no_block_measured_on_both_sides_says_only_that():
    # Before: "target differs: ... this ran on " (no server) and "t interval over 1 blocks (df 0)"
    results = c4_results(n_blocks=4, n_iterations=3, paired=True, seed=3)
    apart = ((results["condition"] == "binlog=off") & (results["repetition"] >= 2)) | \
        ((results["condition"] == "binlog=on") & (results["repetition"] < 2))
    row = stats.analyze(results[~apart], CLAIMS["C4"]).iloc[0]
    assert row["verdict"] == "inconclusive" and row["n_blocks"] == 0
    assert "fewer than two blocks" in row["verdict_note"]
    assert "this ran on" not in row["verdict_note"] and "t interval over" not in row["verdict_note"]


def test_should_stop_waits_decides_and_caps():
    rule = stats.StopRule(target_rel_width=0.02, min_blocks=3, max_blocks=8)
    c4 = CLAIMS["C4"]
    clear = c4_results(n_blocks=8)
    early = stats.should_stop(clear[clear["repetition"] < 2], c4, rule)
    assert not early.stop and "2 of at least 3 blocks" in early.reason
    decided = [stats.should_stop(clear[clear["repetition"] < k], c4, rule) for k in range(3, 9)]
    assert any(decision.stop and "decided" in decision.reason for decision in decided)
    # geometric means: the simulated starts differ by 4%, beyond what C2's fast-state band assumes
    c2 = dataclasses.replace(CLAIMS["C2"], comparisons=tuple(
        dataclasses.replace(c, statistic="mean") for c in CLAIMS["C2"].comparisons))
    two_sided = next(c for c in c2.comparisons if c.name == "unicode_vs_general")
    unclear = simulate_comparison(two_sided, true_ratio=1.06, claim="C2", n_blocks=8, seed=3)
    last = stats.should_stop(unclear, c2, rule)
    assert last.stop and "cap of 8 blocks" in last.reason and last.blocks == 8
    assert not stats.should_stop(unclear[unclear["repetition"] < 5], c2, rule).stop
    nothing = stats.should_stop(clear, CLAIMS["C3"], rule)
    assert nothing.stop and "nothing to test" in nothing.reason
    # decided is not enough for a comparison whose precision is a goal: it stays open until narrow
    stopped = next(d for d in decided if d.stop)
    precise = dataclasses.replace(rule, precise=("binlog_on_vs_off",))
    held = stats.should_stop(clear[clear["repetition"] < stopped.blocks], c4, precise)
    assert not held.stop and "open: binlog_on_vs_off" in held.reason, held
    assert "decided:" not in held.reason
    loose = dataclasses.replace(precise, target_rel_width=10.0)
    assert stats.should_stop(clear[clear["repetition"] < 3], c4, loose).stop


def test_stop_callback_looks_at_the_results_it_is_given_and_reads_nothing(tmp_path, monkeypatch):
    import claimlab.store

    def no_reading(*args, **kwargs):
        raise AssertionError("a look read from disk")

    monkeypatch.setattr(claimlab.store, "read_results", no_reading)
    monkeypatch.setattr(pd, "read_csv", no_reading)
    rule = stats.StopRule(target_rel_width=0.02, min_blocks=3, max_blocks=8)
    callback = stats.stop_callback(CLAIMS["C4"], rule)
    assert callback(c4_results(n_blocks=2)) == (False, "2 of at least 3 blocks")
    decided = stats.should_stop(c4_results(n_blocks=8), CLAIMS["C4"], rule)
    assert decided.stop and callback(c4_results(n_blocks=8)) == (True, decided.reason)


def test_analyze_uses_the_level_the_stopping_rule_left():
    rule = stats.StopRule(min_blocks=3, max_blocks=20)
    row = stats.analyze(c4_results(), CLAIMS["C4"], stop_rule=rule).iloc[0]
    assert row["confidence"] == pytest.approx(1 - stats.sequential_alpha(rule, 8))
    assert "sequential design (O'Brien-Fleming" in row["verdict_note"]
    # its rerun chance is the sequential design's, from the row's own estimate and spread
    again = stats.sequential_label_chances(CLAIMS["C4"].comparisons[0], math.log(row["estimate"]),
                                           row["sd_unit"], rule, int(row["family_size"]))
    assert row["rerun_chance"] == pytest.approx(again[row["verdict_label"]])


def test_each_run_is_analysed_at_its_own_designs_level():
    # one claim's runs on two servers may differ in design: a sequential run on one, a fixed one
    # on the other; each comparison takes the rule of the runs it reads, by run id
    rule = stats.StopRule(min_blocks=3, max_blocks=20)
    seq = c4_results().assign(run_id="seq", target="mariadb")
    fixed = c4_results(seed=12).assign(run_id="fixed", target="mysql")
    table = stats.analyze(pd.concat([seq, fixed], ignore_index=True), CLAIMS["C4"],
                          stop_rule={"seq": rule, "fixed": None}).set_index("target")
    assert table.loc["mariadb", "confidence"] == pytest.approx(1 - stats.sequential_alpha(rule, 8))
    assert "sequential design" in table.loc["mariadb", "verdict_note"]
    assert table.loc["mysql", "confidence"] == pytest.approx(0.95)
    assert "sequential design" not in table.loc["mysql", "verdict_note"]
    # analysed together (runs as the top level), the stricter level of the two
    both = stats.analyze(pd.concat([seq, fixed.assign(target="mariadb")], ignore_index=True), CLAIMS["C4"],
                         stop_rule={"seq": rule, "fixed": None}).iloc[0]
    assert both["n_runs"] == 2
    assert both["confidence"] == pytest.approx(1 - min(0.05, stats.sequential_alpha(rule, 8)))



def test_a_precision_target_stops_a_claims_runs_no_later_and_a_near_edge_comparison_keeps_them_going():
    # C2's three comparisons at the levels an Intel host read (main far from any edge, the other two
    # near 1.05), block SD 3%: what params/collation_cost.yaml cites for its MariaDB rule
    comparisons = CLAIMS["C2"].comparisons
    levels = [math.log(1.125), math.log(1.039), math.log(1.065)]
    narrow = stats.StopRule(target_rel_width=0.002, min_blocks=12, max_blocks=36)
    wide = dataclasses.replace(narrow, target_rel_width=0.06)
    off = stats.simulate_sequential(comparisons, levels, 0.03, narrow, draws=400)
    on = stats.simulate_sequential(comparisons, levels, 0.03, wide, draws=400)
    assert (on.blocks <= off.blocks).all() and on.blocks.mean() < 0.6 * off.blocks.mean()
    assert off.blocks.mean() > 30 and 14 < on.blocks.mean() < 20, (off.blocks.mean(), on.blocks.mean())
    # the main comparison alone decides at the first look nearly always; the claim's runs go on for the others
    main = stats.simulate_sequential(comparisons[:1], levels[:1], 0.03, narrow, draws=400)
    assert (main.blocks == 12).mean() > 0.95, (main.blocks == 12).mean()
    assert on.half_widths[comparisons[0].name].mean() < main.half_widths[comparisons[0].name].mean()
    assert on.label_chances(comparisons[0].name) == {"supported, smaller than published": 1.0}
    # followed alone, a comparison's labels are sequential_label_chances'
    alone = stats.simulate_sequential(comparisons[1:2], levels[1:2], 0.03, wide, draws=400)
    assert alone.label_chances(comparisons[1].name) == stats.sequential_label_chances(
        comparisons[1], levels[1], 0.03, wide, draws=400)


def test_sequential_label_chances_match_runs_stopped_through_the_librarys_own_looks():
    # 1500 runs of normal block log ratios (fixed seed), each looked at block by block through
    # sequential_look, stopped when it decides or at the cap, then read at sequential_alpha as
    # analyze reads a stopped run: the label shares must match sequential_label_chances' model
    rule = stats.StopRule(target_rel_width=0.002, min_blocks=12, max_blocks=24)
    equivalence = next(c for c in CLAIMS["C2"].comparisons if c.kind == "null")
    rng = np.random.default_rng(11)
    labels = []
    for path in rng.normal(EDGE_RATIO, 0.016, size=(1500, rule.max_blocks)):
        n = next((n for n in range(rule.min_blocks, rule.max_blocks)
                  if stats.sequential_look(path[:n], equivalence, rule).done), rule.max_blocks)
        summary = stats.log_ratio(path[:n].reshape(1, n))
        low, high = summary.interval(stats.sequential_alpha(rule, n))
        labels.append(_null_label(float(low), float(high)))
    simulated = pd.Series(labels).value_counts(normalize=True)
    chances = stats.sequential_label_chances(equivalence, EDGE_RATIO, 0.016, rule)
    for label in set(chances) | set(simulated.index):
        share = simulated.get(label, 0.0)
        assert chances.get(label, 0.0) == pytest.approx(share, abs=0.03), label
    # on the edge, looking on until decided is what makes two runs agree: twelve fixed blocks
    # split, and the more looks the design allows, the likelier two runs read the same
    fixed = stats.agreement_chance(stats.label_chances(_null_label, EDGE_RATIO, 0.016, 12, 0.95))
    longer = dataclasses.replace(rule, max_blocks=48)
    assert fixed < 0.55 < stats.agreement_chance(chances) < 0.9 < stats.agreement_chance(
        stats.sequential_label_chances(equivalence, EDGE_RATIO, 0.016, longer))
    # one look is the fixed design at its level
    once = stats.StopRule(target_rel_width=0.002, min_blocks=12, max_blocks=12)
    alone = stats.sequential_label_chances(equivalence, EDGE_RATIO, 0.016, once)
    for label, chance in stats.label_chances(_null_label, EDGE_RATIO, 0.016, 12, 0.95).items():
        assert alone.get(label, 0.0) == pytest.approx(chance, abs=0.03), label


def test_stop_rule_validation_and_manifest():
    with pytest.raises(ValueError, match="min_blocks"):
        stats.StopRule(min_blocks=1)
    with pytest.raises(ValueError, match="alpha"):
        stats.StopRule(alpha=0.5)
    assert stats.StopRule.of_manifest({"design": {"sequential": None}}) is None
    assert stats.StopRule.of_manifest({"design": {"sequential": {"max_blocks": 9}}}).max_blocks == 9
    # a comparison needs no more blocks once decided, or once no wider than the target (inclusive)
    rule = stats.StopRule(target_rel_width=0.06)
    assert rule.settles(True, math.inf) and rule.settles(False, 0.06)
    assert not rule.settles(False, 0.0601) and not rule.settles(False, math.inf)
    # a comparison of `precise` needs the width, decided or not; the others are unchanged
    precise = stats.StopRule(target_rel_width=0.06, precise=["uca_ai_vs_utf8mb3"])
    assert precise.precise == ("uca_ai_vs_utf8mb3",)            # a manifest's list, as a tuple
    assert not precise.settles(True, 0.0601, "uca_ai_vs_utf8mb3") and precise.settles(True, 0.06, "uca_ai_vs_utf8mb3")
    assert precise.settles(True, math.inf, "unicode_vs_general") and precise.settles(True, math.inf)
    assert list(precise.settles(np.array([True, True, False]), np.array([0.05, 0.07, 0.05]), "uca_ai_vs_utf8mb3")) == \
        [True, False, True]
    assert stats.StopRule.of_manifest({"design": {"sequential": {"precise": ["x"]}}}).precise == ("x",)
    with pytest.raises(ValueError, match="precise"):
        stats.StopRule(precise=[""])


def test_leave_one_out_residuals_are_each_value_less_the_median_of_the_rest_of_its_group():
    """The residuals `robust_z` scales, computed by group size at once, against the definition
    value by value: groups of one to seven values in shuffled order, ties, and rows in no group."""
    from claimlab.stats.observations import _leave_one_out_residuals
    rng = np.random.default_rng(20261201)
    group = rng.permutation(np.repeat(np.arange(12), [1, 2, 3, 3, 4, 5, 5, 6, 7, 7, 7, 3])).astype(float)
    values = rng.normal(0, 1, len(group)).round(1)      # rounded: ties within groups
    group[[0, 9]] = np.nan
    found = _leave_one_out_residuals(values, group)
    for i, (value, g) in enumerate(zip(values, group)):
        members = np.flatnonzero(group == g)
        if np.isnan(g) or len(members) < 3:
            assert np.isnan(found[i])
        else:
            assert found[i] == value - np.median(values[members[members != i]])
    assert np.isfinite(found).sum() > 40
