"""The measurements a comparison is made of: the checked results table, outliers, and blocks.

The design the analysis assumes has three levels (Kalibera & Jones, "Rigorous Benchmarking in
Reasonable Time", ISMM 2013, sec. 5, call them the levels of a benchmark experiment):

- a **run** (`run_id`): one `claimlab run`, hours or days apart from the next, maybe on another
  machine; the top level.
- a **block** (`run_id`, `repetition`): one repetition index of a run. Within a block either one
  server start measures every within-server condition (paired design: both sides share `seq`,
  `attempt`, and `iteration` is the round, each condition measured once per round), or each
  condition has its own server start (v1 runs, and levels that need their own server).
- an **iteration** (round) within a server start.

Treatment and baseline are paired within a block; when both sides share a server process they
are also paired round by round. A block contributes one log ratio (see `block_log_ratios`);
factors a comparison does not set (e.g. prepared-statement mode beside charset) are strata
paired level by level inside the block and averaged, so no two server processes are ever
pooled as one unit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from claimlab.claims import STATISTICS
from claimlab.errors import DataError
from claimlab.stopping import FAST_BAND, FAST_GATE
from claimlab.store import BASE_COLUMNS, TAIL_COLUMNS

REQUIRED_COLUMNS = (
    "run_id", "claim", "experiment", "condition", "target", "server_version", "workload",
    "repetition", "iteration", "seq", "metric", "value", "unit", "contention",
)
OUTLIER_Z = 3.5
CONDITION_KEYS = ("run_id", "experiment", "target", "workload", "metric", "condition")
BLOCK_KEYS = ("run_id", "repetition")
# A comparison with less than this share of its values in the fast state was measured in a slow
# hour. On the Intel host of 2026-11-26/27 C2's comparisons kept 17-49% in builds BC-BE and 6-17%
# in the slow hours of BF, BG and BI, whose main intervals reached +-3.6-4.5% and whose BG MySQL
# estimate sat 8% from the others (data/README.md, "A slow hour").
SLOW_HOUR = 0.20
_DERIVED = ("robust_z", "slow")


def factor_columns(results: pd.DataFrame) -> list[str]:
    """The experiment's factor columns: every column the store did not define."""
    known = set(BASE_COLUMNS) | set(TAIL_COLUMNS) | set(_DERIVED)
    return [c for c in results.columns if c not in known and not str(c).startswith("_")]


def prepare(results: pd.DataFrame, outlier_threshold: float = OUTLIER_Z) -> pd.DataFrame:
    """A copy of the results with the columns the analysis works from; nothing dropped.

    `_server` names the server process a row was measured in (run, target, condition,
    repetition, attempt, seq): a repetition whose server was restarted counts once per process.
    `_label` names a row in notes; `_usable` (finite, positive value) and `_outlier` say what
    may be excluded.
    """
    missing = [column for column in REQUIRED_COLUMNS if column not in results.columns]
    if missing:
        raise DataError(f"results lack column(s) {', '.join(missing)}")
    data = results.reset_index(drop=True)
    value = pd.to_numeric(data["value"], errors="coerce")
    data = data.assign(value=value, contention=data["contention"].astype(bool))
    if "attempt" not in data:
        data["attempt"] = 1
    data["_server"] = data["run_id"].astype(str)
    for column in ("target", "condition", "repetition", "attempt", "seq"):
        data["_server"] += "|" + data[column].astype(str)
    data["_usable"] = np.isfinite(value) & (value > 0)
    data["robust_z"] = robust_z(data[data["_usable"]])
    data["_outlier"] = data["robust_z"].abs() > outlier_threshold
    several_runs = data["run_id"].nunique() > 1
    data["_label"] = ((data["run_id"].astype(str) + ": " if several_runs else "") + "seq "
                      + data["seq"].astype(str) + " iteration " + data["iteration"].astype(str)
                      + " " + data["condition"].astype(str))
    return data


def robust_z(results: pd.DataFrame) -> pd.Series:
    """Modified z-score of each log value against the rest of its server process.

    An iteration is compared with the median of the other iterations of its server start: a
    start that settled at its own level is block variance, which the analysis already carries,
    not an outlier. Leaving the value out matters: residuals from a median that includes them
    shrink, and the false-alarm rate at 3.5 grows from 0.05% to ~1.4% with five iterations.
    The scale is the MAD of those residuals over the whole condition, since a handful of
    iterations cannot give a stable MAD (modified z: Iglewicz & Hoaglin, "How to Detect and
    Handle Outliers", 1993). Server starts with fewer than three iterations are never flagged.
    """
    condition = [results[key] for key in CONDITION_KEYS]
    logs = np.log(results["value"].astype(float))
    residual = logs.groupby([*condition, results["_server"]]).transform(_leave_one_out_residual)
    mad = residual.abs().groupby(condition).transform("median")
    return 0.6745 * residual / mad.where(mad > 0)


def _leave_one_out_residual(logs: pd.Series) -> np.ndarray:
    values = logs.to_numpy()
    if len(values) < 3:
        return np.full(len(values), np.nan)
    return values - np.array([np.median(np.delete(values, i)) for i in range(len(values))])


def outlier_rule(threshold: float = OUTLIER_Z) -> str:
    """The outlier rule in words, as notes and diagnostics cite it (see `robust_z`)."""
    return (f"|modified z| > {threshold:g}: log value against the median of the rest of its "
            "server start, scaled by the condition's MAD (Iglewicz & Hoaglin 1993)")


def block_log_ratios(base: pd.DataFrame, treat: pd.DataFrame, strata: list[str],
                     statistic: str = "mean") -> pd.DataFrame:
    """One log ratio log(treatment) - log(baseline) per block, and how it was paired.

    Within a block and stratum (a level combination of the factors the comparison does not
    set), with `statistic` "mean": when both sides were measured in the same server process
    (same `seq` and `attempt`), rounds are paired by `iteration` and the log ratios of matched
    rounds averaged (a round with one side missing or excluded is left out, and counted);
    otherwise the ratio is of the two sides' geometric means. With "near_min" ("near_max"):
    the ratio of each side's geometric mean over its fast-state values only, see
    `fast_state`. The block's log ratio is the mean over its strata. Blocks with one side only
    are left out, and counted. Columns: run_id, repetition, log_ratio, paired (rounds matched
    in every stratum), n_pairs (matched rounds), unmatched (rounds left out), outside_band
    (values outside the fast state, left out), baseline_log (the baseline's mean log value in the
    block: the machine's speed there, a covariate for runs made in different states).
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, not {statistic!r}")
    keys = [*BLOCK_KEYS, *strata]
    rounds = [*keys, "seq", "attempt", "iteration"]
    sides = [side.assign(_log=np.log(side["value"].to_numpy(dtype=float)))
             for side in (base, treat)]
    outside = {}
    if statistic != "mean":
        fast = [side_fast_state(side, strata, statistic) for side in sides]
        both = pd.concat([side.loc[~keep, keys] for side, keep in zip(sides, fast)])
        outside = both.groupby(list(BLOCK_KEYS)).size().to_dict() if len(both) else {}
        sides = [side[keep] for side, keep in zip(sides, fast)]
    b, t = (side.groupby(rounds, sort=True)["_log"].mean().rename(name)
            for side, name in zip(sides, ("b", "t")))
    side_means = [side.groupby(keys, sort=False)["_log"].mean() for side in sides]   # per block and stratum
    matched = pd.concat([b, t], axis=1, join="inner")
    paired_strata = set(matched.reset_index().groupby(keys).groups) if len(matched) else set()
    strata_rows = []
    for key, part in pd.concat([b, t], axis=1).reset_index().groupby(keys, sort=True):
        has_b, has_t = part["b"].notna(), part["t"].notna()
        base_log = side_means[0].get(key, np.nan)
        if not (has_b.any() and has_t.any()):
            strata_rows.append((*key, np.nan, False, 0, 0, np.nan))
        elif key in paired_strata and statistic == "mean":
            both_sides = has_b & has_t
            diff = (part["t"] - part["b"])[both_sides]
            strata_rows.append((*key, diff.mean(), True, int(both_sides.sum()),
                                int((has_b ^ has_t).sum()), base_log))
        else:
            strata_rows.append((*key, side_means[1].get(key, np.nan) - base_log,
                                key in paired_strata, 0, 0, base_log))
    frame = pd.DataFrame(strata_rows, columns=[*keys, "log_ratio", "paired", "n_pairs", "unmatched",
                                               "baseline_log"])
    frame = frame.dropna(subset=["log_ratio"])
    out = frame.groupby(list(BLOCK_KEYS), sort=True).agg(
        log_ratio=("log_ratio", "mean"), paired=("paired", "all"), n_pairs=("n_pairs", "sum"),
        unmatched=("unmatched", "sum"), baseline_log=("baseline_log", "mean")).reset_index()
    out["outside_band"] = [outside.get((run, rep), 0) for run, rep in zip(out["run_id"], out["repetition"])]
    return out


def fast_state(logs: pd.Series, groups: pd.DataFrame, starts: pd.DataFrame, statistic: str) -> pd.Series:
    """Which values were measured in the machine's fast (normal) state: within FAST_BAND (15%)
    of the fastest value of their server start (`starts`: its columns name a start within a
    group), in a start whose fastest is itself within FAST_BAND of the group's fast level, the
    lower quartile of its starts' fastest values (`stopping.fast_level`). Groups are a run and
    stratum; fastest is smallest for "near_min" (a time), largest for "near_max" (a rate).

    Why: on these virtual machines the noise only slows CPU-bound work, by up to about 2x in
    stretches of 0.05 s to minutes that no probe outside the measured work reliably sees
    (README, "The slow state"); the fastest values are the undisturbed ones (Chen & Revels,
    "Robust benchmarking in noisy environments", arXiv:1608.04295, 2016), and the fast state's
    own spread is a few percent. The band is drawn from each start's own fastest because starts
    settle at levels of their own (up to 5-6% apart on the Intel host of 2026-11-26): a band drawn
    from the run's single fastest value cut through the slower starts' fast state, by a run-wide
    amount that their blocks shared, and the interval under-covered (85% at 36 blocks in
    tests/unit/test_simulation.py). The gate keeps a start spent wholly in a slow stretch out,
    so it contributes nothing rather than a slow value; the quartile, not the minimum, keeps one
    lucky start from setting it. The mean over the band, not the single minimum, keeps one
    lucky value from setting a block's ratio.
    """
    keyed = (logs if statistic == "near_min" else -logs).rename("_keyed")   # smaller is faster
    band = np.log1p(FAST_BAND)
    frame = pd.concat([groups.add_prefix("_g_"), starts.add_prefix("_s_"), keyed], axis=1)
    group_cols = [c for c in frame.columns if c.startswith("_g_")]
    start_cols = group_cols + [c for c in frame.columns if c.startswith("_s_")]
    best = frame.groupby(start_cols)["_keyed"].transform("min")
    bests = frame[start_cols].assign(_best=best).drop_duplicates(start_cols)
    level = bests.groupby(group_cols)["_best"].quantile(FAST_GATE).rename("_level")
    run_level = frame[group_cols].join(level, on=group_cols)["_level"]
    return (keyed <= best + band) & (best <= run_level + band)


def side_fast_state(side: pd.DataFrame, strata: list[str], statistic: str) -> pd.Series:
    """`fast_state` of one comparison side's rows (results columns), per run and stratum."""
    logs = side["_log"] if "_log" in side else np.log(side["value"].to_numpy(dtype=float))
    return fast_state(pd.Series(logs, index=side.index), side[["run_id", *strata]],
                      side[["repetition", "seq", "attempt"]], statistic)


def slow_hour_note(share: float) -> str:
    """What a reader should make of a comparison measured with few fast-state values ('' if not)."""
    if not share < SLOW_HOUR:
        return ""
    return (f"a slow hour: only {share:.0%} of the values were in the fast state (under {SLOW_HOUR:.0%}), so "
            "the interval rests on fewer server starts and the estimate may sit at a level of its own; "
            "rerun at another time and compare the runs (claimlab analyze RUN RUN gives each run's estimate "
            "and whether they differ)")


def block_statistic_rule(statistic: str) -> str:
    """What a block contributes under a fast-state statistic, in words, for verdict notes."""
    which = "fastest (smallest)" if statistic == "near_min" else "fastest (largest)"
    return (f"each side's geometric mean over its fast-state values: within {FAST_BAND:.0%} of its "
            f"server start's {which} value of its condition, in starts whose {which.split()[0]} "
            f"value lies within {FAST_BAND:.0%} of the run's fast level (the lower quartile of its "
            "starts'; the machine's noise only slows CPU-bound work; Chen & Revels, "
            "arXiv:1608.04295, 2016)")


def as_matrix(blocks: pd.DataFrame) -> np.ndarray:
    """Block log ratios as a (runs, blocks) array, NaN-padded where a run has fewer blocks."""
    runs = [part["log_ratio"].to_numpy(dtype=float) for _, part in blocks.groupby("run_id", sort=True)]
    width = max((len(run) for run in runs), default=0)
    matrix = np.full((len(runs), width), np.nan)
    for index, run in enumerate(runs):
        matrix[index, : len(run)] = run
    return matrix
