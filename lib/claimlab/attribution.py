"""An ablation's attribution: each step's ratio to its reference and its share of the slow-to-fast
gap, each with its interval (`stats.ratio_interval`, `stats.share_interval`), read from the
ablation's stored run; and the table and lines a report shows of it. In log space, so cumulative
shares sum to exactly 1 and a ratio and its inverse get the same share.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import stats, wording
from .ablation import FACTOR, Ablation
from .errors import DataError


def samples(results: pd.DataFrame, metric: str) -> dict[str, stats.Sample]:
    """One Sample per condition level: values grouped by repetition, iterations in order."""
    rows = results[results["metric"] == metric]
    if rows.empty:
        raise DataError(f"no measurements of metric {metric!r}")
    out = {}
    for level, part in rows.groupby(FACTOR):
        reps = [g.sort_values("iteration")["value"].astype(float).to_numpy()
                for _, g in part.groupby("repetition")]
        out[str(level)] = stats.Sample.of(reps)
    return out


def attribute(results: pd.DataFrame, ablation: Ablation, *, confidence: float = 0.95, n_boot: int = 2000,
              seed: int = 20261122) -> pd.DataFrame:
    """One row per step: its ratio to its reference (slow for `one`, the previous step for
    `cumulative`, slow for `total`) and its share of the gap, each with an interval.
    `share_nonfinite` counts the bootstrap resamples left out of a share's interval (no finite
    share); `note` (the same on every row) says when shares are not meaningful or some were."""
    data = samples(results, ablation.metric)
    steps = ablation.steps()
    missing = sorted({s.condition for s in steps} - set(data))
    if missing:
        raise DataError(f"ablation {ablation.name}: no measurements for {', '.join(missing)}")
    rng = np.random.default_rng(seed)
    slow, fast = data["slow"], data["fast"]
    total = stats.ratio_interval(slow, fast, confidence=confidence)
    rows = [_row("total", "(all)", "fast", "slow", total, stats.ShareInterval(1.0, 1.0, 1.0, "by definition"), data)]
    previous = "slow"
    for step in steps:
        if step.kind not in ("one", "cumulative"):
            continue
        ref = "slow" if step.kind == "one" else previous
        ratio = stats.ratio_interval(data[ref], data[step.condition], confidence=confidence)
        share = stats.share_interval(slow, data[ref], data[step.condition], fast, confidence=confidence,
                                     n_boot=n_boot, rng=rng)
        rows.append(_row(step.kind, step.switched[-1], step.condition, ref, ratio, share, data))
        if step.kind == "cumulative":
            previous = step.condition
    table = pd.DataFrame(rows)
    table["note"] = _note(total, table, n_boot)
    return table


def _note(total: stats.Interval, table: pd.DataFrame, n_boot: int) -> str:
    notes = ["the total gap's interval contains 1: shares are not meaningful"] if total.contains(1.0) else []
    short = table[table["share_nonfinite"] > 0]
    if len(short):
        notes.append(f"up to {short['share_nonfinite'].max()} of {n_boot} bootstrap resamples of the shares "
                     f"of {', '.join(short['condition'])} had no finite share (a resampled gap of zero) "
                     "and are left out of their intervals")
    return "; ".join(notes)


def _row(kind, option, condition, reference, ratio, share: stats.ShareInterval, data) -> dict:
    return {"kind": kind, "option": option, "condition": condition, "reference": reference,
            "mean": data[condition].statistic("mean"), "ratio": ratio.estimate, "ratio_lo": ratio.low,
            "ratio_hi": ratio.high, "ratio_method": ratio.method, "share": share.estimate,
            "share_lo": share.low, "share_hi": share.high, "share_nonfinite": share.nonfinite}


def largest(table: pd.DataFrame, kind: str = "one") -> str:
    """The option whose switch alone takes the largest share of the gap."""
    part = table[table["kind"] == kind]
    return str(part.loc[part["share"].idxmax(), "option"])


def surprises(table: pd.DataFrame) -> list[str]:
    """Steps whose switch to the fast value made the metric worse beyond doubt (the whole share
    interval below 0): results a report must flag rather than pass over."""
    out = []
    for r in table[table["kind"].isin(["one", "cumulative"])].itertuples(index=False):
        if r.share_hi < 0:
            alone = "alone" if r.kind == "one" else "in the cumulative path"
            out.append(f"switching {r.option} to the fast value {alone} made the loop slower, not faster: "
                       f"share {wording.share_interval(r.share, r.share_lo, r.share_hi)} of the gap")
    return out


def attribution_html(table: pd.DataFrame) -> str:
    """The attribution table for people: each share said as the waterfall figure and the
    surprises say it (wording.share_interval), so that the page never rounds one share two ways."""
    shown = pd.DataFrame({
        "kind": table["kind"], "option": table["option"],
        "ratio after / before [95%]": [wording.interval(r.ratio, r.ratio_lo, r.ratio_hi) for r in table.itertuples()],
        "share of the gap [95%]": [wording.share_interval(r.share, r.share_lo, r.share_hi)
                                   for r in table.itertuples()]})
    return wording.table_html(shown)
