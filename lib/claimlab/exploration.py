"""What the analysts' exploration notebook calls: stored runs to pick from, their measurements
in one table, filters by claim, server and condition, and a comparison of any two conditions with
the statistics the reports use (stats.Sample, stats.ratio_interval, stats.welch_log_p).
Nothing here decides a verdict: a claim's verdict comes only from stats.analyze.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from . import stats
from .errors import DataError
from .store import find_run, list_runs, read_jsonl, read_results


def runs(data_root: Path | None = None) -> pd.DataFrame:
    """Every stored run (runs/ and the shipped data/raw), newest first, with the server versions
    it measured."""
    table = pd.DataFrame(list_runs(data_root))
    if table.empty:
        return table
    table["servers"] = [", ".join(sorted({str(r.get("version")) for r in read_jsonl(Path(p) / "servers.jsonl")}))
                        for p in table["path"]]
    return table.sort_values("created_at", ascending=False, ignore_index=True)


def load(run_ids: Iterable[str], data_root: Path | None = None) -> pd.DataFrame:
    """The measurements of several runs in one tidy table (column run_id tells them apart)."""
    frames = [read_results(find_run(r, data_root)) for r in run_ids]
    if not frames:
        raise DataError("no run ids given")
    return pd.concat(frames, ignore_index=True)


def select(results: pd.DataFrame, *, claim: str | None = None, server: str | None = None,
           conditions: Iterable[str] | None = None, metric: str | None = None,
           workload: str | None = None) -> pd.DataFrame:
    """Rows of one claim, of the servers whose version or target contains `server`, of the
    named conditions, metric and workload; None keeps everything."""
    keep = pd.Series(True, index=results.index)
    if claim is not None:
        keep &= results["claim"].astype(str) == claim
    if server is not None:
        keep &= (results["server_version"].astype(str).str.contains(server, case=False, regex=False)
                 | (results["target"].astype(str) == server))
    if conditions is not None:
        keep &= results["condition"].astype(str).isin(list(conditions))
    if metric is not None:
        keep &= results["metric"] == metric
    if workload is not None:
        keep &= results["workload"] == workload
    return results[keep]


def sample(rows: pd.DataFrame) -> stats.Sample:
    """One repetition per server process (run, target, repetition, attempt), iterations in order,
    as stats.analyze groups them."""
    rows = rows[np.isfinite(pd.to_numeric(rows["value"], errors="coerce"))]
    key = rows["run_id"].astype(str)
    for column in ["target", "repetition", *(["attempt"] if "attempt" in rows else [])]:
        key = key + "|" + rows[column].astype(str)
    ordered = rows.assign(_process=key).sort_values(["_process", "iteration"])
    return stats.Sample(tuple(g["value"].to_numpy(dtype=float) for _, g in ordered.groupby("_process", sort=True)))


def compare(results: pd.DataFrame, baseline: str, treatment: str, metric: str, *, workload: str | None = None,
            confidence: float = 0.95, n_boot: int = 2000, seed: int = 20261122) -> pd.Series:
    """treatment / baseline for one metric: ratio of means of repetition means with its
    hierarchical bootstrap interval (flat when a side has one server process; said in `design`)
    and Welch's test on log repetition means."""
    sides = {}
    for name in (baseline, treatment):
        rows = select(results, conditions=[name], metric=metric, workload=workload)
        if rows.empty:
            raise DataError(f"no measurements of {metric!r} for condition {name!r}")
        if rows["workload"].nunique() > 1:
            raise DataError(f"condition {name!r} has several workloads ({', '.join(sorted(rows['workload'].unique()))})"
                            "; name one")
        sides[name] = sample(rows)
    a, b = sides[baseline], sides[treatment]
    design = stats.design_for(a, b)
    interval = stats.ratio_interval(a, b, design=design, confidence=confidence, n_boot=n_boot,
                                    rng=np.random.default_rng(seed))
    units_a, units_b = a.units(design), b.units(design)
    p_value = stats.welch_log_p(units_a, units_b) if min(len(units_a), len(units_b)) >= 2 else float("nan")
    return pd.Series({"baseline": baseline, "treatment": treatment, "metric": metric,
                      "processes_baseline": a.n_repetitions, "processes_treatment": b.n_repetitions,
                      "mean_baseline": a.statistic("mean"), "mean_treatment": b.statistic("mean"),
                      "ratio": interval.estimate, "ci_low": interval.low, "ci_high": interval.high,
                      "confidence": confidence, "design": design, "method": interval.method,
                      "p_welch_log": p_value})
