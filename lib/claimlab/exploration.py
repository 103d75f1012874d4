"""What the analysts' exploration notebook calls: stored runs to pick from, their measurements
in one table, filters by claim, server and condition, and a comparison of any two conditions with
the statistics the reports use (stats.analyze).
Nothing here decides a verdict: a claim's verdict comes only from stats.analyze.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

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
    named conditions, metric and workload; None keeps everything. A filter that keeps nothing is
    an error naming what the rows hold: an analyst's typo, not an empty plot further down."""
    filters = [
        ("claim", claim, ["claim"], lambda r: r["claim"].astype(str) == claim),
        ("server", server, ["server_version", "target"],
         lambda r: r["server_version"].astype(str).str.contains(server, case=False, regex=False)
         | (r["target"].astype(str) == server)),
        ("conditions", conditions, ["condition"], lambda r: r["condition"].astype(str).isin(list(conditions))),
        ("metric", metric, ["metric"], lambda r: r["metric"] == metric),
        ("workload", workload, ["workload"], lambda r: r["workload"] == workload),
    ]
    for name, value, columns, test in filters:
        if value is None:
            continue
        kept = results[test(results)]
        if kept.empty:
            have = sorted({str(v) for column in columns for v in results[column].unique()})
            shown = ", ".join(have[:12]) + (", ..." if len(have) > 12 else "")
            raise DataError(f"{name} {value!r}: no such rows here (they have: {shown})")
        results = kept
    return results


def compare(results: pd.DataFrame, baseline: str, treatment: str, metric: str, *, workload: str | None = None,
            confidence: float = 0.95) -> pd.DataFrame:
    """treatment / baseline for one metric, per server: the very analysis a claim's verdict uses
    (stats.analyze with an ad-hoc two-sided comparison), so the numbers match the reports'."""
    from .claims import Claim, Comparison, Condition
    picked = {}
    for name in (baseline, treatment):
        rows = select(results, conditions=[name], metric=metric, workload=workload)
        if rows["workload"].nunique() > 1:
            raise DataError(f"condition {name!r} has several workloads ({', '.join(sorted(rows['workload'].unique()))})"
                            "; name one")
        picked[name] = rows
    levels = {name: dict(part.split("=", 1) for part in name.split(",")) for name in (baseline, treatment)}
    comparison = Comparison(name="exploration", experiment=str(results["experiment"].iloc[0]),
                            workload=str(picked[baseline]["workload"].iloc[0]), metric=metric,
                            baseline=Condition.of(levels[baseline]), treatment=Condition.of(levels[treatment]),
                            kind="effect", source_target="(none)", direction="two_sided")
    claim = Claim(id=str(results["claim"].iloc[0]), title="exploration", sources=("(exploration)",),
                  source_target="(none)", setup="", published=(), comparisons=(comparison,))
    return stats.analyze(results, claim, confidence=confidence)
