"""Costs per operation (stats.cost_table) as a person reads them: one readable scale per cost,
servers side by side, cells clipped at zero and marked where the values went below it.
"""

from __future__ import annotations

import html

import pandas as pd

from .wording import interval, level_words, missing, table_html, workload_words

COST_UNITS = {  # metric/op -> (words, unit: "s" for a time, else what is counted)
    "server_cpu_user_s/op": ("server CPU, user", "s"),
    "server_cpu_system_s/op": ("server CPU, system", "s"),
    "client_cpu_s/op": ("client CPU", "s"),
    "status.Innodb_os_log_fsyncs/op": ("redo log fsyncs", "fsyncs"),
    "status.Binlog_commits/op": ("binlog commits", "commits"),
    "server_ctx_voluntary/op": ("voluntary context switches", "switches"),
}
_TIME_SCALES = (("ms", 1e3), ("µs", 1e6), ("ns", 1e9))
_COUNT_SCALES = (("op", 1), ("1,000 ops", 1e3), ("million ops", 1e6))


def cost_scale(largest: float, unit: str) -> tuple[float, str]:
    """The factor and unit that put a cost's largest value at 1 or more (2.5 ns/op, not 0.0000025
    ms/op; 415 fsyncs per million ops, not 0.000415 fsyncs/op), the finest scale at most."""
    scales = _TIME_SCALES if unit == "s" else _COUNT_SCALES
    name, factor = next((s for s in scales if abs(largest) * s[1] >= 1), scales[-1])
    return factor, (f"{name}/op" if unit == "s" else f"{unit}/op" if factor == 1 else f"{unit} per {name}")


def cost_view(cost: pd.DataFrame, metrics=tuple(COST_UNITS)) -> pd.DataFrame:
    """stats.cost_table in units a person reads, one scale per cost (cost_scale): a row per cost
    and condition, a column of "mean [95% interval]" per server when the table has a `server` column
    (servers side by side, never averaged), the workload only when there are several. Costs that
    are zero in every condition (binlog commits with the binlog off) are left out."""
    chosen = cost[cost["metric"].isin(list(metrics))]
    servers = sorted(chosen["server"].unique()) if "server" in chosen.columns else [""]
    several_workloads = chosen["workload"].nunique() > 1
    rows: dict[tuple, dict] = {}
    for (workload, metric), part in chosen.groupby(["workload", "metric"], sort=False):
        label, unit = COST_UNITS[metric]
        if (part["mean"].abs() < 1e-12).all():
            continue
        factor, unit_text = cost_scale(part["mean"].abs().max(), unit)
        for r in part.sort_values("condition").to_dict("records"):
            row = rows.setdefault((workload, label, r["condition"]), {
                **({"workload": workload_words(workload)} if several_workloads else {}), "cost": label,
                "condition": level_words(r["condition"]), **{_server_column(s): "—" for s in servers},
                "unit": unit_text})
            row[_server_column(r.get("server", ""))] = _cost_cell(r["mean"], r["lo"], r["hi"], factor)
    return pd.DataFrame(list(rows.values()))


CLIPPED = "‡"
CLIPPED_NOTE = (f"{CLIPPED} Below zero before clipping at zero: a cost cannot be negative. Counts per operation "
                "are differences of per-thread counters, which fall when server threads end during a "
                "measurement; such a cell is not a measured zero, read it as not measured.")


def _cost_cell(mean: float, lo: float, hi: float, factor: float) -> str:
    """ "mean [low, high]", the interval intersected with what a cost can be (zero or more):
    where the values (and so the interval) went below zero the cell is clipped and marked, never
    shown as a negative count."""
    clipped = any(not missing(v) and v < 0 for v in (mean, lo, hi))
    mean, lo, hi = (v if missing(v) else max(v, 0.0) for v in (mean, lo, hi))
    cell = interval(mean * factor, lo * factor, hi * factor)
    return cell + (f" {CLIPPED}" if clipped else "")


def cost_html(cost: pd.DataFrame) -> str:
    """cost_view as the report's table, with the note on clipped cells when there are any."""
    view = cost_view(cost)
    text = table_html(view)
    if view.astype(str).apply(lambda c: c.str.endswith(CLIPPED)).any().any():
        text += f"<p class='small'>{html.escape(CLIPPED_NOTE)}</p>"
    return text


def _server_column(server: str) -> str:
    return server or "mean [95% interval]"

