"""Per-operation costs beside the verdicts: the mechanism (fsyncs per inserted row, server CPU
seconds per query), with two-level bootstrap intervals (Kalibera & Jones 2013, sec. 6).

Costs are arithmetic means, not the claims' ratio of geometric means: a cost can be exactly
zero (no binlog commits with the binlog off), and per-operation counters add up.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

COST_METRICS = ("server_cpu_user_s", "server_cpu_system_s", "server_ctx_voluntary", "server_ctx_involuntary",
                "client_cpu_s", "status.Innodb_os_log_fsyncs", "status.Innodb_data_fsyncs",
                "status.Innodb_os_log_written", "status.Binlog_commits", "status.Binlog_group_commits",
                "status.Handler_write", "status.Handler_read_rnd_next", "status.Questions", "disk_writes",
                "disk_flushes")


def per_operation(results: pd.DataFrame, metrics: Iterable[str] = COST_METRICS,
                  ops_metric: str = "operations") -> pd.DataFrame:
    """Each cost divided by the operations of the same measurement, as rows `<metric>/op`.

    The one place where costs become per-operation figures (fsyncs per inserted row, server CPU
    seconds per query), so that notebooks and reports never divide by hand."""
    keys = ["run_id", "experiment", "condition", "target", "workload", "repetition", "attempt", "iteration"]
    keys = [k for k in keys if k in results.columns]
    ops = results[results["metric"] == ops_metric][keys + ["value"]].rename(columns={"value": "_ops"})
    costs = results[results["metric"].isin(list(metrics))]
    merged = costs.merge(ops, on=keys, how="inner")
    merged = merged[merged["_ops"] > 0]
    return merged.assign(value=merged["value"] / merged["_ops"], metric=merged["metric"] + "/op",
                         unit=merged["unit"] + "/op").drop(columns="_ops")


def mean_interval(groups: Sequence[np.ndarray], *, n_boot: int, rng: np.random.Generator,
                  confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of repetition means with a two-level percentile bootstrap interval (restarts, then
    iterations within each; Kalibera & Jones 2013, sec. 6). Unlike `ratio_interval` it accepts
    zeros: a cost can be exactly nothing (no binlog commits with the binlog off)."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    estimate = float(np.mean([g.mean() for g in groups]))
    if len(groups) < 2:
        return estimate, math.nan, math.nan
    lengths = np.array([len(g) for g in groups])
    padded = np.zeros((len(groups), int(lengths.max())))
    for index, g in enumerate(groups):
        padded[index, : len(g)] = g
    picked = rng.integers(0, len(groups), size=(n_boot, len(groups)))
    picked_lengths = lengths[picked]
    within = (rng.random((*picked.shape, padded.shape[1])) * picked_lengths[..., None]).astype(int)
    values = padded[picked[..., None], within]
    used = np.arange(padded.shape[1]) < picked_lengths[..., None]
    draws = ((values * used).sum(-1) / picked_lengths).mean(-1)
    alpha = 1 - confidence
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return estimate, float(lo), float(hi)


def cost_table(results: pd.DataFrame, metrics: Iterable[str] = COST_METRICS, *, seed: int = 20261122,
               n_boot: int = 1000, confidence: float = 0.95, include_contention: bool = True) -> pd.DataFrame:
    """Per condition and workload, each cost per operation with its interval: the mechanism
    beside the verdict (e.g. fsyncs per inserted row with the binlog on and off)."""
    data = results if include_contention else results[~results["contention"]]
    per_op = per_operation(data, metrics)
    rows = []
    for (workload, condition, metric), part in per_op.groupby(["workload", "condition", "metric"], sort=True):
        rng = np.random.default_rng([seed, zlib.crc32(f"{workload}|{condition}|{metric}".encode())])
        groups = [g["value"].to_numpy() for _, g in part.groupby(["repetition", "attempt"], sort=True)]
        estimate, lo, hi = mean_interval(groups, n_boot=n_boot, rng=rng, confidence=confidence)
        rows.append({"workload": workload, "condition": condition, "metric": metric, "unit": part["unit"].iloc[0],
                     "n_reps": len(groups), "mean": estimate, "lo": lo, "hi": hi,
                     "contention": "included" if include_contention else "excluded"})
    return pd.DataFrame(rows, columns=["workload", "condition", "metric", "unit", "n_reps", "mean", "lo", "hi",
                                       "contention"])
