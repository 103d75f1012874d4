"""Figures for the claim notebooks (seaborn). They draw; they compute nothing a reader must trust.

Every figure shows the data it summarises: observations are drawn individually over the box,
effects carry their interval and the published value, and the run order is shown so drift and
neighbours' noise are visible rather than averaged away.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib import ticker

from . import wording
from .gap import MOST

# Sources and labels may be Chinese: matplotlib falls back glyph by glyph along this list, so a
# CJK title draws in Noto Sans CJK (fonts-noto-cjk, installed by `make setup`) instead of boxes.
FONTS = ["DejaVu Sans", "Noto Sans CJK SC", "Noto Sans CJK JP"]
sns.set_theme(style="whitegrid", context="notebook", rc={"font.family": FONTS})
# Okabe & Ito's qualitative palette (colour-blind safe), without its yellow, which white paper
# hides: at most seven series are told apart by colour, each with a marker of its own too.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
_VERDICT_COLOURS = {"supported": "#1b7837", "contradicted": "#b2182b", "inconclusive": "#8c8c8c",
                    "not_tested": "#d0d0d0"}


def save(fig: plt.Figure, directory: str | Path, name: str) -> None:
    """Write PNG and SVG side by side; the notebook still shows the figure inline."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fig.savefig(directory / f"{name}.png", dpi=120, bbox_inches="tight")
    fig.savefig(directory / f"{name}.svg", bbox_inches="tight")


def _conditions_order(results: pd.DataFrame) -> list[str]:
    return sorted(results["condition"].unique())


def _by_server(results: pd.DataFrame) -> pd.DataFrame:
    """`results` with a `server` column (wording.server_name per target): servers are drawn
    apart, never pooled."""
    return results.assign(server=results["target"].map(wording.server_names(results)))


def _panel_title(server: str, text: str, servers: int) -> str:
    return f"{server}\n{text}" if servers > 1 else text


def _family(server: str) -> str | None:
    """The server family of a panel's server name, for its levels' names (None: not known)."""
    return wording.server_family(server) if server.startswith(("MariaDB", "MySQL")) else None


def series(condition: str) -> str:
    """The series a condition is drawn in when a figure has more conditions than colours can
    tell apart: an ablation's steps by kind (each switch alone, or cumulatively), else the
    condition itself."""
    level = str(condition).split("=", 1)[-1]
    if level.startswith("only-"):
        return "one option switched"
    if level.startswith("upto-"):
        return "options switched cumulatively"
    return wording.level_words(condition)


def observations(results: pd.DataFrame, metrics: list[str] | None = None) -> plt.Figure:
    """Every observation per condition (strip) over its distribution (box), one panel per
    server, workload and metric (a row per workload and metric, its servers side by side)."""
    data = _by_server(results if metrics is None else results[results["metric"].isin(metrics)])
    panels = data[["server", "workload", "metric"]].drop_duplicates().sort_values(["workload", "metric", "server"])
    panels = panels.values.tolist()
    servers = data["server"].nunique()
    order = _conditions_order(data)
    columns = servers if 1 < servers <= 3 else min(3, len(panels))   # a row per workload: its servers side by side
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(max(5, 4.2 * columns), (0.6 * len(order) + 2.2) * rows),
                             squeeze=False)
    for ax, (server, workload, metric) in zip(axes.flat, panels):
        panel = data[(data["server"] == server) & (data["workload"] == workload) & (data["metric"] == metric)]
        unit = panel["unit"].iloc[0]
        sns.boxplot(data=panel, x="value", y="condition", order=order, ax=ax, color="#e8e8e8",
                    showfliers=False, width=0.6)
        sns.stripplot(data=panel, x="value", y="condition", order=order, ax=ax, hue="repetition",
                      palette="viridis", size=4, jitter=0.2, legend=False)
        ax.set_yticks(range(len(order)), [wording.level_words(c, _family(server)) for c in order])
        what = f"{wording.workload_words(workload)}: {wording.metric_words(metric)}"
        ax.set_title(_panel_title(server, what, servers), fontsize=11)
        ax.set_xlabel(f"{wording.metric_words(metric)} ({unit})")
        ax.set_ylabel("")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("Every measurement (colour: repetition = server process)", y=1.02, fontsize=11)
    fig.tight_layout()
    return fig


_RATIO_TICKS = (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)


def effect_labels(table: pd.DataFrame) -> list[str]:
    """A forest plot's row labels: which comparison on which server ("utf8mb4_0900_ai_ci vs
    utf8mb3_general_ci — MySQL 9.7.4"), with the claim first when the table has several."""
    several = table["claim"].nunique() > 1
    workload = wording.several_workloads(table)
    return [(f"{r['claim']} " if several else "") + wording.comparison_words(r, workload=workload) + " — "
            + (wording.server_name(r["server_version"]) or "not measured")
            for _, r in table.iterrows()]


def effects(table: pd.DataFrame, title: str = "") -> plt.Figure:
    """Forest plot: each comparison's ratio with its interval, and the published ratio beside it."""
    rows = table.reset_index(drop=True)
    labels = effect_labels(rows)
    levels = sorted({wording.level(c) for c in rows["confidence"].dropna()}, key=lambda t: float(t[:-1]))
    interval = (f"{levels[0]} interval" if len(levels) == 1 else
                f"intervals at {' or '.join(levels)}, as the table says" if levels else "interval")
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(rows) + 1.6))
    for y, r in enumerate(rows.itertuples()):
        colour = _VERDICT_COLOURS.get(r.verdict, "#333333")
        if pd.notna(r.ci_low):
            ax.errorbar(r.estimate, y, xerr=[[r.estimate - r.ci_low], [r.ci_high - r.estimate]],
                        fmt="o", color=colour, capsize=4, label=f"measured ({interval})" if y == 0 else None)
        if pd.notna(r.published_ratio):
            ax.plot(r.published_ratio, y, marker="X", color="#d95f02", markersize=9, linestyle="none",
                    label="published" if y == rows.index[rows["published_ratio"].notna()].min() else None)
        ax.text(1.01, y, r.verdict.replace("_", " "), transform=ax.get_yaxis_transform(),
                va="center", fontsize=9, color=colour)
    ax.axvline(1.0, color="#555555", linewidth=1, linestyle="--")
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    # Labelled ticks at round ratios only: matplotlib's minor log labels collide (0.70.80.9).
    ax.xaxis.set_major_locator(ticker.FixedLocator([t for t in _RATIO_TICKS if low <= t <= high] or [1.0]))
    ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlabel("ratio treatment / baseline (log scale; 1 = no effect)")
    handles, names = ax.get_legend_handles_labels()
    if handles:   # right above the axes, under the title: next to the markers, hiding none of them
        ax.legend(handles, names, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(handles), fontsize=10,
                  frameon=False, borderaxespad=0.2, handletextpad=0.3, columnspacing=1.5)
    ax.set_title(title or "Measured effects and the published values", pad=28 if handles else 6)
    fig.tight_layout()
    return fig


def run_order(results: pd.DataFrame, metric: str | None = None) -> plt.Figure:
    """Measurements in the order they were taken: drift and disturbances show as trends or jumps.
    Each condition (or, past seven, each `series`) has a colour and a marker of its own."""
    data = _by_server(results[results["metric"] == (metric or results["metric"].iloc[0])])
    conditions = _conditions_order(data)
    name = series if len(conditions) > len(PALETTE) else wording.level_words
    data = data.assign(series=data["condition"].map(name))
    order = list(dict.fromkeys(name(c) for c in conditions))
    # Past seven series that are not an ablation's steps (C3's versions side by side), colours
    # repeat, each time with the next marker, so no two series share both.
    colours = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(order)}
    markers = {s: MARKERS[(i + i // len(MARKERS)) % len(MARKERS)] for i, s in enumerate(order)}
    panels = data[["server", "workload"]].drop_duplicates().sort_values(["workload", "server"]).values.tolist()
    servers = data["server"].nunique()
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.8 * len(panels)), squeeze=False)
    for i, (ax, (server, workload)) in enumerate(zip(axes[:, 0], panels)):
        panel = data[(data["server"] == server) & (data["workload"] == workload)]
        # by start time where stored: side by side, a round's conditions ran on different servers
        panel = panel.sort_values([c for c in ("run_id", "started_at", "seq", "iteration") if c in panel]
                                  ).reset_index(drop=True)
        panel = panel.assign(order=range(len(panel)))
        sns.scatterplot(data=panel, x="order", y="value", hue="series", hue_order=order, palette=colours,
                        style="series", style_order=order, markers=markers, ax=ax, s=28, legend=i == 0)
        what = wording.metric_words(panel["metric"].iloc[0])
        ax.set_title(_panel_title(server, f"{wording.workload_words(workload)}: {what} in run order", servers),
                     fontsize=11)
        ax.set_xlabel("measurement, in the order taken")
        ax.set_ylabel(f"{what} ({panel['unit'].iloc[0]})")
        if i == 0:   # one legend for every panel, above the first: it hides no point and squeezes no axes
            handles, labels = ax.get_legend_handles_labels()
            ax.get_legend().remove()
    fig.tight_layout()
    fig.legend(handles, labels, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2 if len(labels) > 3 else 3,
               fontsize=10, frameon=False, title="condition", alignment="left")
    return fig


def costs(table: pd.DataFrame, metrics: list[str] | None = None) -> plt.Figure:
    """Per-operation costs by condition with their intervals (stats.cost_table), one panel each."""
    data = table if metrics is None else table[table["metric"].isin(metrics)]
    panels = data[["workload", "metric"]].drop_duplicates().values.tolist()
    if not panels:   # a run stored before claimlab recorded costs
        fig, ax = plt.subplots(figsize=(6, 1))
        ax.text(0.5, 0.5, "no per-operation costs recorded in this run", ha="center", va="center")
        ax.set_axis_off()
        return fig
    columns = min(3, max(1, len(panels)))
    rows = -(-len(panels) // columns)
    height = (0.5 * data["condition"].nunique() + 2.2) * rows
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, height), squeeze=False)
    for ax, (workload, metric) in zip(axes.flat, panels):
        part = data[(data["workload"] == workload) & (data["metric"] == metric)].sort_values("condition")
        y = range(len(part))
        ax.errorbar(part["mean"], list(y), xerr=[(part["mean"] - part["lo"]).fillna(0).clip(lower=0),
                                                 (part["hi"] - part["mean"]).fillna(0).clip(lower=0)],
                    fmt="o", capsize=3, color="#2166ac")
        ax.set_yticks(list(y), part["condition"])
        ax.set_title(f"{workload}: {metric}", fontsize=9)
        ax.set_xlabel(part["unit"].iloc[0])
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("What each operation cost (mean of repetitions, 95% interval)", y=1.01, fontsize=10)
    fig.tight_layout()
    return fig


def waterfall(table: pd.DataFrame, metric: str = "elapsed_s", title: str = "") -> plt.Figure:
    """An ablation (attribution.attribute's table), slow to fast in the cumulative order, drawn
    across: each bar is one switch's change of the metric (relative to slow), and its share of
    the gap with its interval is written in a column of its own at the right, one line per bar,
    so no label can run into another however many switches there are."""
    steps = table[table["kind"] == "cumulative"].reset_index(drop=True)
    slow_mean = float(table.loc[table["kind"] == "total", "mean"].iloc[0]) / float(
        table.loc[table["kind"] == "total", "ratio"].iloc[0])
    fig, ax = plt.subplots(figsize=(10, 0.45 * (len(steps) + 2) + 1.4))
    level = 1.0
    ax.barh(0, 1.0, color="#b2182b", height=0.6)
    shares = [""]
    for i, r in enumerate(steps.itertuples(index=False), start=1):
        new = r.mean / slow_mean
        ax.barh(i, new - level, left=level, height=0.6, color="#1b7837" if new < level else "#d6604d")
        shares.append(wording.share_interval(r.share, r.share_lo, r.share_hi))
        level = new
    ax.barh(len(steps) + 1, level, color="#2166ac", height=0.6)
    shares.append("")
    ax.set_yticks(range(len(steps) + 2), ["slow", *[f"+ {o}" for o in steps["option"]], "fast"])
    ax.invert_yaxis()
    for y, text in enumerate(shares):
        ax.text(1.02, y, text, transform=ax.get_yaxis_transform(), va="center", fontsize=9)
    ax.text(1.02, -0.9, "share of the gap\n[95% interval]", transform=ax.get_yaxis_transform(), va="bottom",
            fontsize=9, fontweight="bold")
    ax.set_xlabel(f"{wording.metric_words(metric)} relative to slow")
    ax.set_xlim(0, 1.05 * max(1.2, ax.get_xlim()[1]))   # room past the longest bar
    ax.set_title(title or "Cumulative ablation: each switch's step from slow to fast")
    fig.tight_layout()
    return fig


# Denser than the forest plot's (one panel may span 0.87 to 1), roundest first: a panel keeps
# the roundest that are spread enough.
_LADDER_TICKS = (1.0, 2.0, 0.5, 3.0, 1.5, 5.0, 0.75, 1.25, 2.5, 4.0, 0.25, 0.8, 0.9, 1.1, 1.2, 1.3, 1.4, 0.6, 0.7,
                 1.75, 3.5)


def _spaced_ticks(low: float, high: float, most: int = 7) -> list[float]:
    """Round ratios between `low` and `high`, at most about `most` of them, evenly spread on the
    log scale, the roundest first: 1, 1.1, 1.25, 1.4 for 0.98-1.46; 1, 1.5, 2, 3 for 0.95-3.5."""
    import math
    inside = [t for t in _LADDER_TICKS if low <= t <= high]
    gap = math.log(high / low) / most
    kept: list[float] = []
    for t in inside:
        if all(abs(math.log(t / k)) >= gap for k in kept):
            kept.append(t)
    return sorted(kept) or [1.0]


def ladder(rungs: pd.DataFrame, title: str = "") -> plt.Figure:
    """The version ladder (`claimlab.ladder`): a panel per claim, its main comparison's ratio and
    interval on each server in release order, MySQL's releases left to right, MariaDB's apart
    behind a rule, a dashed line at the published ratio and a grey one at 1 (no effect). A
    between-server ratio's base server is an open circle at 1."""
    claims = list(dict.fromkeys(rungs["claim"]))
    fig, axes = plt.subplots(len(claims), 1, figsize=(10, 2.6 * len(claims) + 0.8), squeeze=False)
    for ax, claim in zip(axes[:, 0], claims):
        part = rungs[rungs["claim"] == claim].reset_index(drop=True)
        mysql = part["family"] == "mysql"
        x = [i + (0.6 if not m and mysql.any() else 0) for i, m in enumerate(mysql)]   # MariaDB apart
        for xi, r in zip(x, part.itertuples()):
            if r.role == "base":
                ax.plot(xi, 1.0, marker="o", markerfacecolor="white", color="#333333", markersize=8, linestyle="none")
                continue
            colour = _VERDICT_COLOURS.get(r.verdict, "#333333")
            if pd.notna(r.ci_low):
                ax.errorbar(xi, r.estimate, yerr=[[r.estimate - r.ci_low], [r.ci_high - r.estimate]], fmt="o",
                            color=colour, capsize=5, markersize=7)
            else:
                ax.plot(xi, r.estimate, marker="o", color=colour, linestyle="none")
            top = r.ci_high if pd.notna(r.ci_high) else r.estimate   # above its interval: clear of its neighbours
            ax.annotate(f"{wording.number(r.estimate)} {str(r.verdict).replace('_', ' ')}", (xi, top),
                        xytext=(0, 5), textcoords="offset points", ha="center", va="bottom", fontsize=8.5,
                        color=colour)
        published = part["published_ratio"].dropna()
        if len(published):
            ax.axhline(float(published.iloc[0]), color="#d95f02", linestyle="--", linewidth=1.2,
                       label=f"published {wording.published(float(published.iloc[0]))}")
        ax.axhline(1.0, color="#888888", linewidth=0.8)
        if mysql.any() and not mysql.all():
            ax.axvline((x[int(mysql.sum()) - 1] + x[int(mysql.sum())]) / 2, color="#555555", linewidth=0.8)
        labels = [r.server.replace(" (", "\n(") + ("\nbase of the ratios" if r.role == "base" else
                              f"\nagainst {r.relative_to}" if r.relative_to else
                              "\n(apart)" if r.family != "mysql" and mysql.any() else "") for r in part.itertuples()]
        ax.set_xticks(x, labels, fontsize=9)
        ax.set_xlim(min(x) - 0.6, max(x) + 0.6)
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        high *= (high / low) ** 0.15   # room for the labels above the highest interval
        ax.set_ylim(low, high)
        ax.yaxis.set_major_locator(ticker.FixedLocator(_spaced_ticks(low, high)))
        ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        first = part[part["role"] == "measured"].iloc[0]
        base = part.loc[part["relative_to"] != "", "relative_to"]
        what = (f"{wording.workload_words(first['workload'])}, {wording.metric_words(first['metric'])}: each server "
                f"against {base.iloc[0]}" if len(base) else wording.comparison_words(first.to_dict(), family=""))
        ax.set_title(f"{claim}: {what}", fontsize=11, loc="left")
        ax.set_ylabel("ratio (log)")
        if len(published):
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9, frameon=False)
    fig.suptitle(title or "Each claim's main ratio by server, in release order (MariaDB apart)", fontsize=12)
    fig.tight_layout()
    return fig


def gap_shares(table: pd.DataFrame, title: str = "") -> plt.Figure:
    """Where C3's gap goes (`gap.binlog_shares`): each share of a gap with its interval, on one
    axis from none of the gap to all of it, a dashed line at half (C4's "most of the gap") and
    Yangsh888's own share as a cross. An unbounded interval is drawn as a grey band across the
    axis, said in words: this run cannot tell the gap from none."""
    rows = table.reset_index(drop=True)
    ends = [v for v in (*rows["share"], *rows.loc[rows["bounded"], "share_lo"], *rows.loc[rows["bounded"], "share_hi"])
            if pd.notna(v)]
    left, right = max(-1.0, min([-0.1, *ends]) - 0.05), min(2.0, max([1.1, *ends]) + 0.05)
    fig, ax = plt.subplots(figsize=(10, 0.9 * len(rows) + 1.6))
    for y, r in enumerate(rows.itertuples()):
        colour = _VERDICT_COLOURS.get(r.most, "#333333")
        if r.bounded:
            low, high = max(r.share_lo, left), min(r.share_hi, right)
            ax.errorbar(min(max(r.share, left), right), y, xerr=[[max(r.share - low, 0)], [max(high - r.share, 0)]],
                        fmt="o", color=colour, capsize=5, label="measured (95% interval)" if y == 0 else None)
        else:
            ax.axhspan(y - 0.2, y + 0.2, color="#e0e0e0")
            ax.text((left + right) / 2, y, "interval unbounded: this run cannot say", ha="center", va="center",
                    fontsize=9, color="#555555")
        if r.seed_share is not None and pd.notna(r.seed_share):
            ax.plot(r.seed_share, y, marker="X", color="#d95f02", markersize=9, linestyle="none",
                    label="Yangsh888's own times" if y == rows.index[rows["seed_share"].notna()].min() else None)
        ax.text(1.01, y, r.most, transform=ax.get_yaxis_transform(), va="center", fontsize=9, color=colour)
    ax.axvline(MOST, color="#555555", linestyle="--", linewidth=1, label="half the gap (C4: \"most\")")
    for edge in (0.0, 1.0):
        ax.axvline(edge, color="#aaaaaa", linewidth=0.8)
    ax.set_xlim(left, right)
    ax.xaxis.set_major_formatter(ticker.PercentFormatter(1.0))
    several = rows["run_id"].nunique() > 1
    labels = [f"{r.slow}\n" + textwrap.fill(r.change, 40, break_on_hyphens=False)
              + (f"\n(run {r.run_id})" if several else "") for r in rows.itertuples()]
    ax.set_yticks(range(len(rows)), labels, fontsize=9)
    ax.set_ylim(len(rows) - 0.5, -0.5)   # one row each, the first on top
    ax.set_xlabel("share of the gap to 5.7.23, log scale (0% = none of it, 100% = all of it)")
    handles, names = ax.get_legend_handles_labels()
    ax.legend(handles, names, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(handles), fontsize=9,
              frameon=False, borderaxespad=0.2)
    ax.set_title(title or "Where the 5.7 → 8.0 gap goes", pad=26)
    fig.tight_layout()
    return fig
