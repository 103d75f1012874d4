"""What could bias a comparison, shown rather than silently corrected: drift over run order,
warm-up, outliers and the contention policy."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy

from .observations import CONDITION_KEYS, OUTLIER_Z, outlier_rule, prepare

DRIFT_FLAG_P = 0.01


@dataclass(frozen=True, eq=False)
class Diagnostics:
    """What could bias a comparison, shown rather than silently corrected."""

    drift: pd.DataFrame
    outliers: pd.DataFrame
    warmup: pd.DataFrame
    contention: str


def diagnostics(
    results: pd.DataFrame,
    *,
    include_contention: bool = True,
    outlier_threshold: float = OUTLIER_Z,
    metrics: Iterable[str] | None = None,
) -> Diagnostics:
    """Drift over run order, outliers and warm-up, per run, experiment, workload, metric, condition.

    - drift: Spearman correlation of repetition means with their run order (rank-based, so one
      slow restart does not make a trend), and the Theil-Sen slope as relative change per 100
      measurements; flagged when p < DRIFT_FLAG_P.
    - warmup: per repetition, iteration 0 against the mean of the later ones (log ratio), its
      geometric mean over repetitions and a Wilcoxon signed-rank p; flagged when p < DRIFT_FLAG_P.
    - outliers: rows whose modified z (`robust_z` column) exceeds `outlier_threshold`, with
      the rule (`outlier_rule`).
    """
    if metrics is not None:   # e.g. the claim's own metrics, not every recorded cost counter
        results = results[results["metric"].isin(list(metrics))]
    data = prepare(results, outlier_threshold)
    busy = int((data["contention"] & data["_usable"]).sum())
    usable = data[data["_usable"]]
    if include_contention:
        contention = f"included: {busy} of {len(usable)} rows were taken on a busy machine"
    else:
        usable = usable[~usable["contention"]]
        contention = f"excluded: {busy} rows taken on a busy machine left out"
    keys = list(CONDITION_KEYS)
    drift, warmup = [], []
    for key, rows in usable.groupby(keys, sort=True):
        drift.append(dict(zip(keys, key), **_drift(rows)))
        warmup.append(dict(zip(keys, key), **_warmup(rows)))
    outliers = usable[usable["_outlier"]].drop(columns=["_server", "_usable", "_outlier", "_label"])
    return Diagnostics(
        drift=pd.DataFrame(drift, columns=keys + ["n", "spearman_rho", "p_value",
                                                  "change_per_100", "flagged"]),
        outliers=outliers.assign(rule=outlier_rule(outlier_threshold)),
        warmup=pd.DataFrame(warmup, columns=keys + ["n_repetitions", "first_vs_rest",
                                                    "p_value", "flagged"]),
        contention=contention,
    )


def _drift(rows: pd.DataFrame) -> dict[str, Any]:
    """Trend of repetition means over their mean run order.

    Restarts are the units: correlating every iteration with `seq` would count each restart's
    own level once per iteration and call ordinary between-restart noise a trend.
    """
    reps = rows.assign(log=np.log(rows["value"].astype(float))).groupby("_server")
    seq, logs = reps["seq"].mean().to_numpy(dtype=float), reps["log"].mean().to_numpy()
    if len(logs) < 3 or np.ptp(logs) == 0:
        return {"n": len(logs), "spearman_rho": math.nan, "p_value": math.nan,
                "change_per_100": math.nan, "flagged": False}
    rho, p = scipy.stats.spearmanr(seq, logs)
    slope = scipy.stats.theilslopes(logs, seq).slope
    return {"n": len(logs), "spearman_rho": float(rho), "p_value": float(p),
            "change_per_100": math.expm1(100 * slope), "flagged": bool(p < DRIFT_FLAG_P)}


def _warmup(rows: pd.DataFrame) -> dict[str, Any]:
    """First measured iteration of each server process against the rest, paired within it."""
    gaps = []
    for _, rep in rows.sort_values("iteration").groupby("_server"):
        logs = np.log(rep["value"].to_numpy(dtype=float))
        if len(logs) >= 2:
            gaps.append(logs[0] - logs[1:].mean())
    gaps = np.array(gaps)
    if len(gaps) < 2:
        p = math.nan
    elif np.all(gaps == 0):
        p = 1.0
    else:
        p = float(scipy.stats.wilcoxon(gaps).pvalue)
    return {"n_repetitions": len(gaps),
            "first_vs_rest": float(np.exp(gaps.mean())) if len(gaps) else math.nan,
            "p_value": p, "flagged": bool(p < DRIFT_FLAG_P)}
