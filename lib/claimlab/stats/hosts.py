"""Runs of one claim from several hosts, host as the top level: each host's ratio with its own
interval, the spread between hosts, the pooled ratio, and whether the claim holds on every host,
on some or on none.

Why hosts are pooled by random effects and not by putting every block in one pot: the size of a
slowdown belongs to the processor as much as to the server (MySQL's C2 collation ratio read 1.83
on one AMD host, 1.44 on another, 1.55-1.71 on an Intel one), so hosts differ by more than their
blocks' noise says. A fixed-effect pool would give a narrow interval around an average of
machines that describes none of them; the random-effects mean is the ratio of "a host like
these", and the between-host SD (tau) says how far one host may stray from it.

Method:
- each host's log ratio y_i and its variance v_i = se_i^2 come from that host's own analysis
  (`stats.analyze`: estimate, and se = sd_unit / sqrt(units), units being the host's runs when
  it has several, else its blocks), so the per-host rows are the host's own table;
- tau^2 by DerSimonian & Laird's moment estimator: DerSimonian R, Laird N, "Meta-analysis in
  clinical trials", Controlled Clinical Trials 7(3):177-188, 1986;
- the pooled interval by Hartung & Knapp: the weighted residual variance q = sum w*(y - mu)^2 /
  (k - 1) scales the variance of mu, with a t quantile on k - 1 df (Hartung J, Knapp G, "On
  tests of the overall treatment effect in meta-analysis with normally distributed responses",
  Statistics in Medicine 20(12):1771-1782, 2001), with q taken as at least 1: hosts that agree
  more closely than their own noise would otherwise buy an interval narrower than the sum of
  their information (Röver C, Knapp G, Friede T, "Hartung-Knapp-Sidik-Jonkman approach and its
  modification for random-effects meta-analysis with few studies", BMC Medical Research
  Methodology 15:99, 2015; seen here: two smoke runs pooled to an interval narrower than the
  better one's own). DerSimonian-Laird's own normal interval is too
  narrow with few studies (IntHout J, Ioannidis JPA, Borm GF, "The Hartung-Knapp-Sidik-Jonkman
  method for random effects meta-analysis is straightforward and considerably outperforms the
  standard DerSimonian-Laird method", BMC Medical Research Methodology 14:25, 2014), and a
  cluster has few hosts. With two hosts the t quantile has one df (12.7 at 95%): an honest,
  wide interval, not a defect;
- the verdict of the pooled interval uses the claim's own rule (`verdicts.verdict`); "holds on"
  counts the hosts whose own verdict is supported: every, some or none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import scipy

from .verdicts import verdict

HOST_COLUMNS = ("claim", "comparison", "target", "host", "processor", "estimate", "ci_low", "ci_high",
                "confidence", "log_ratio", "se", "df", "verdict", "verdict_label")
POOLED_COLUMNS = ("claim", "comparison", "target", "n_hosts", "estimate", "ci_low", "ci_high", "confidence",
                  "tau", "i2", "q", "p_hosts_differ", "host_low", "host_high", "verdict", "verdict_label",
                  "holds_on", "hosts_supported")


def per_host(tables: Mapping[str, pd.DataFrame], processors: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per (comparison, target, host) from each host's own analysis table."""
    rows = []
    for host, table in tables.items():
        for r in table.to_dict("records"):
            if r["verdict"] == "not_tested":   # no estimate on this host: nothing to pool
                continue
            units = int(r["n_runs"]) if int(r["n_runs"]) >= 2 else int(r["n_blocks"])
            finite = units >= 2 and math.isfinite(r["sd_unit"]) and r["estimate"] > 0
            rows.append({"claim": r["claim"], "comparison": r["comparison"], "target": r["target"], "host": host,
                         "processor": (processors or {}).get(host, ""), "estimate": r["estimate"],
                         "ci_low": r["ci_low"], "ci_high": r["ci_high"], "confidence": r["confidence"],
                         "log_ratio": math.log(r["estimate"]) if r["estimate"] > 0 else math.nan,
                         "se": r["sd_unit"] / math.sqrt(units) if finite else math.nan,
                         "df": float(units - 1) if finite else math.nan,
                         "verdict": r["verdict"], "verdict_label": r["verdict_label"]})
    return pd.DataFrame(rows, columns=list(HOST_COLUMNS))


def dersimonian_laird(y: np.ndarray, v: np.ndarray) -> tuple[float, float, float]:
    """(tau^2, Q, the fixed-effect mean) of log ratios `y` with variances `v`."""
    y, w = np.asarray(y, float), 1.0 / np.asarray(v, float)
    fixed = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - fixed) ** 2))
    c = float(np.sum(w) - np.sum(w ** 2) / np.sum(w))
    tau2 = max(0.0, (q - (len(y) - 1)) / c) if c > 0 else 0.0
    return tau2, q, fixed


def hartung_knapp(y: np.ndarray, v: np.ndarray, tau2: float, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high) on the log scale: the random-effects mean with Hartung and Knapp's
    interval, its scale factor at least 1 (the modification in the module's docstring)."""
    y, w = np.asarray(y, float), 1.0 / (np.asarray(v, float) + tau2)
    k = len(y)
    mu = float(np.sum(w * y) / np.sum(w))
    q = max(1.0, float(np.sum(w * (y - mu) ** 2) / (k - 1)))
    half = scipy.stats.t.ppf(0.5 + confidence / 2, k - 1) * math.sqrt(q / float(np.sum(w)))
    return mu, mu - half, mu + half


def pool(hosts: pd.DataFrame, claim, confidence: float | None = None) -> pd.DataFrame:
    """One row per (comparison, target): the pooled ratio over hosts and the verdicts.

    `claim` is the claims.Claim whose comparisons decide the verdict. A host without an
    interval (fewer than two units) still counts in "holds on" but not in the pool; a single
    host's pool is its own estimate and interval; where no host has one, the pooled estimate is
    the hosts' geometric mean, without an interval (inconclusive). The pool is at `confidence`,
    by default the hosts' own level (a family's member is at the level its family leaves; pooled
    at a fixed 95% it lost that, and one host's 97.5% interval was labelled 95%)."""
    comparisons = {c.name: c for c in claim.comparisons}
    rows = []
    for (name, target), group in hosts.groupby(["comparison", "target"], sort=False):
        comp = comparisons[name]
        usable = group[np.isfinite(group["se"]) & (group["se"] > 0)]
        k = len(usable)
        levels = pd.to_numeric(group["confidence"], errors="coerce").dropna()
        level = confidence if confidence is not None else float(levels.max()) if len(levels) else 0.95
        tau2 = q = i2 = p = math.nan
        if k >= 2:
            tau2, q, _ = dersimonian_laird(usable["log_ratio"], usable["se"] ** 2)
            mu, lo, hi = hartung_knapp(usable["log_ratio"], usable["se"] ** 2, tau2, level)
            i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
            p = float(scipy.stats.chi2.sf(q, k - 1))
        elif k == 1:   # its own numbers, not exp(log(x)), which can differ from x in the last digit
            one = usable.iloc[0]
            mu, lo, hi = one["log_ratio"], math.log(one["ci_low"]), math.log(one["ci_high"])
        else:   # no host has an interval (one block each): the hosts' mean ratio, undecided
            finite = group["log_ratio"][np.isfinite(group["log_ratio"])]
            mu, lo, hi = float(finite.mean()) if len(finite) else math.nan, math.nan, math.nan
        low, high = math.exp(lo), math.exp(hi)
        estimate = math.exp(mu)
        if k == 1:
            estimate, low, high = (float(usable.iloc[0][c]) for c in ("estimate", "ci_low", "ci_high"))
        v = verdict(comp.kind, comp.direction, comp.published_ratio, comp.equivalence_margin, low, high)
        supported = int((group["verdict"] == "supported").sum())
        holds = "every" if supported == len(group) else "none" if supported == 0 else "some"
        rows.append({"claim": claim.id, "comparison": name, "target": target, "n_hosts": len(group),
                     "estimate": estimate, "ci_low": low, "ci_high": high, "confidence": level,
                     "tau": math.sqrt(tau2) if math.isfinite(tau2) else math.nan, "i2": i2, "q": q,
                     "p_hosts_differ": p, "host_low": float(group["estimate"].min()),
                     "host_high": float(group["estimate"].max()), "verdict": v.word, "verdict_label": v.label,
                     "holds_on": holds, "hosts_supported": f"{supported} of {len(group)}"})
    return pd.DataFrame(rows, columns=list(POOLED_COLUMNS))
