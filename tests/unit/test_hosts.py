"""Pooling by host: DerSimonian-Laird and Hartung-Knapp checked against their closed forms with
equal variances, the interval's coverage on simulated hosts, and the every/some/none verdict on
hosts simulated from a fixed seed."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from claimlab.claims import load_claims
from claimlab.stats import hosts
from claimlab.stats.verdicts import verdict
from conftest import ROOT

C4 = load_claims(ROOT / "data" / "claims.yaml")["C4"]
COMP = C4.comparisons[0]


def _host_table(rng, true_ratio: float, blocks: int = 8, sd: float = 0.05,
                confidence: float = 0.95) -> pd.DataFrame:
    """A host's own analysis row, as stats.analyze makes it: blocks' log ratios, a paired t interval."""
    y = rng.normal(math.log(true_ratio), sd, blocks)
    mean, s = y.mean(), y.std(ddof=1)
    half = st.t.ppf((1 + confidence) / 2, blocks - 1) * s / math.sqrt(blocks)
    low, high = math.exp(mean - half), math.exp(mean + half)
    v = verdict(COMP.kind, COMP.direction, COMP.published_ratio, COMP.equivalence_margin, low, high)
    return pd.DataFrame([{"claim": "C4", "comparison": COMP.name, "target": "mariadb", "n_runs": 1,
                          "n_blocks": blocks, "estimate": math.exp(mean), "sd_unit": s, "ci_low": low,
                          "ci_high": high, "confidence": confidence, "verdict": v.word,
                          "verdict_label": v.label}])


def test_dersimonian_laird_with_equal_variances_is_the_spread_beyond_the_noise():
    rng = np.random.default_rng(52)
    y, v = rng.normal(0.5, 0.2, 6), np.full(6, 0.01)
    tau2, q, fixed = hosts.dersimonian_laird(y, v)
    assert tau2 == pytest.approx(max(0.0, y.var(ddof=1) - 0.01))
    assert q == pytest.approx((len(y) - 1) * y.var(ddof=1) / 0.01)
    assert fixed == pytest.approx(y.mean())
    assert hosts.dersimonian_laird(np.full(4, 0.3), np.full(4, 0.01))[0] == 0.0


def test_hartung_knapp_with_equal_variances_is_the_t_interval_of_host_means():
    rng = np.random.default_rng(7)
    y, v = rng.normal(0.4, 0.1, 5), np.full(5, 0.002)
    tau2, _, _ = hosts.dersimonian_laird(y, v)
    mu, lo, hi = hosts.hartung_knapp(y, v, tau2)
    half = st.t.ppf(0.975, 4) * y.std(ddof=1) / math.sqrt(5)
    assert (mu, lo, hi) == pytest.approx((y.mean(), y.mean() - half, y.mean() + half))


def test_hartung_knapp_is_never_narrower_than_the_hosts_information():
    """Hosts that agree more closely than their noise: the scale factor stays 1, so the interval
    is the random-effects mean's own with a t quantile, never narrower (here tau^2 is 0)."""
    y, v = np.array([0.70, 0.7001]), np.array([0.04, 0.0004])
    tau2, _, _ = hosts.dersimonian_laird(y, v)
    mu, lo, hi = hosts.hartung_knapp(y, v, tau2)
    assert tau2 == 0.0
    assert hi - mu == pytest.approx(st.t.ppf(0.975, 1) * math.sqrt(1 / np.sum(1 / v)))


def test_hartung_knapp_covers_the_mean_of_hosts_that_differ():
    """Five hosts whose true ratios spread (tau 0.1) far beyond each one's noise (se 0.02): a
    fixed-effect or normal interval covers the mean of hosts far less than 95% of the time."""
    rng = np.random.default_rng(20261206)
    mu_true, covered, reps = math.log(1.5), 0, 400
    for _ in range(reps):
        se = rng.uniform(0.01, 0.03, 5)
        y = rng.normal(mu_true, 0.1, 5) + rng.normal(0, se)
        tau2, _, _ = hosts.dersimonian_laird(y, se ** 2)
        _, lo, hi = hosts.hartung_knapp(y, se ** 2, tau2)
        covered += lo <= mu_true <= hi
    assert 0.90 <= covered / reps <= 0.99


def test_per_host_takes_each_hosts_own_estimate_and_standard_error():
    rng = np.random.default_rng(1)
    table = _host_table(rng, 2.5)
    row = hosts.per_host({"bench-a": table}, {"bench-a": "AMD EPYC"}).iloc[0]
    assert row["host"] == "bench-a" and row["processor"] == "AMD EPYC"
    assert row["log_ratio"] == pytest.approx(math.log(table["estimate"].iloc[0]))
    assert row["se"] == pytest.approx(table["sd_unit"].iloc[0] / math.sqrt(8))
    assert row["df"] == 7


def test_a_comparison_a_host_did_not_test_is_left_out_of_its_rows():
    """A claim's comparison that a host's runs do not measure reads "not tested" there, with no
    runs or blocks to count: it adds no row, and the host's tested comparisons still do."""
    table = _host_table(np.random.default_rng(2), 2.5)
    untested = table.assign(comparison="other", n_runs=math.nan, n_blocks=math.nan, estimate=math.nan,
                            sd_unit=math.nan, ci_low=math.nan, ci_high=math.nan, verdict="not_tested",
                            verdict_label="not tested")
    rows = hosts.per_host({"bench-a": pd.concat([untested, table], ignore_index=True)})
    assert list(rows["comparison"]) == [COMP.name]


@pytest.mark.parametrize("ratios, holds", [((2.6, 2.4, 2.9), "every"), ((2.6, 1.0, 2.7), "some"),
                                           ((1.0, 0.98, 1.01), "none")])
def test_verdict_says_on_which_hosts_the_claim_holds(ratios, holds):
    rng = np.random.default_rng(52)
    tables = {f"host-{i}": _host_table(rng, r) for i, r in enumerate(ratios)}
    per = hosts.per_host(tables)
    pooled = hosts.pool(per, C4).iloc[0]
    assert pooled["holds_on"] == holds
    assert pooled["n_hosts"] == 3
    assert pooled["host_low"] == pytest.approx(per["estimate"].min())
    # the pooled interval contains the pooled estimate and lies on the log scale around it
    assert pooled["ci_low"] < pooled["estimate"] < pooled["ci_high"]
    if holds == "every":
        assert pooled["verdict"] == "supported" and pooled["tau"] < 0.2
    if holds == "none":
        assert pooled["verdict"] == "contradicted"
    if holds == "some":   # one host at 1.0 among two at 2.6: the hosts differ, the pool cannot decide
        assert pooled["p_hosts_differ"] < 0.001 and pooled["verdict"] == "inconclusive"
        assert pooled["i2"] > 0.9


def test_the_pool_keeps_the_level_of_its_hosts_family():
    # Before: pooled at a fixed 95% (and one host's own 97.5% interval labelled 95%)
    rng = np.random.default_rng(5)
    tables = {f"host-{i}": _host_table(rng, r, confidence=0.975) for i, r in enumerate((2.5, 2.7))}
    per = hosts.per_host(tables)
    pooled = hosts.pool(per, C4).iloc[0]
    tau2, _, _ = hosts.dersimonian_laird(per["log_ratio"], per["se"] ** 2)
    _, lo, hi = hosts.hartung_knapp(per["log_ratio"], per["se"] ** 2, tau2, 0.975)
    assert pooled["confidence"] == 0.975
    assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx((math.exp(lo), math.exp(hi)))
    one = hosts.pool(hosts.per_host({"only": tables["host-0"]}), C4).iloc[0]
    assert one["confidence"] == 0.975 and one["ci_low"] == tables["host-0"]["ci_low"].iloc[0]


def test_one_host_pools_to_its_own_interval():
    rng = np.random.default_rng(3)
    table = _host_table(rng, 2.0)
    pooled = hosts.pool(hosts.per_host({"only": table}), C4).iloc[0]
    assert (pooled["estimate"], pooled["ci_low"], pooled["ci_high"]) == \
        (table["estimate"].iloc[0], table["ci_low"].iloc[0], table["ci_high"].iloc[0])
    assert math.isnan(pooled["tau"]) and pooled["verdict"] == table["verdict"].iloc[0]


def test_hosts_without_intervals_pool_to_their_mean_undecided():
    """A smoke run's comparison of one block (no interval) on each host."""
    rng = np.random.default_rng(4)
    tables = {h: _host_table(rng, r).assign(n_blocks=1, sd_unit=math.nan, ci_low=math.nan, ci_high=math.nan)
              for h, r in (("a", 2.0), ("b", 3.0))}
    per = hosts.per_host(tables)
    pooled = hosts.pool(per, C4).iloc[0]
    assert per["se"].isna().all()
    assert pooled["estimate"] == pytest.approx(math.exp(per["log_ratio"].mean()))
    assert math.isnan(pooled["ci_low"]) and pooled["verdict"] == "inconclusive"
