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
from claimlab.records import BASE_COLUMNS, TAIL_COLUMNS
from claimlab.stopping import FAST_BAND, FAST_GATE
from claimlab.wording import level_words, server_family

REQUIRED_COLUMNS = (
    "run_id", "claim", "experiment", "condition", "target", "server_version", "workload",
    "repetition", "iteration", "seq", "metric", "value", "unit", "contention",
)
OUTLIER_Z = 3.5
CONDITION_KEYS = ("run_id", "experiment", "target", "workload", "metric", "condition")
BLOCK_KEYS = ("run_id", "repetition")
# A comparison with less than this share of its values in the fast state was measured in a slow
# hour. On one host C2's comparisons kept 17-49% in ordinary hours and 6-17% in slow ones, whose
# main intervals reached +-3.6-4.5% and one MySQL estimate sat 8% from the others.
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
                      + " (" + _condition_words(data) + ")")
    return data


def _condition_words(data: pd.DataFrame) -> pd.Series:
    """Each row's condition as a reader names it on the server that measured it ("MySQL
    5.7.23", not `server=mysql57`): the labels reach the verdict notes a reader opens."""
    pairs = data[["condition", "server_version"]].astype(str)
    said = {pair: level_words(pair[0], server_family(pair[1]))
            for pair in pairs.drop_duplicates().itertuples(index=False, name=None)}
    return pd.Series([said[pair] for pair in pairs.itertuples(index=False, name=None)], index=data.index)


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
    server = pd.concat([results[list(CONDITION_KEYS)], results["_server"]], axis=1).groupby(
        [*CONDITION_KEYS, "_server"], sort=False).ngroup().to_numpy()
    residual = pd.Series(_leave_one_out_residuals(logs.to_numpy(), server), index=results.index)
    mad = residual.abs().groupby(condition).transform("median")
    return 0.6745 * residual / mad.where(mad > 0)


def _leave_one_out_residuals(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Each value less the median of the other values of its group (NaN in groups under three),
    the groups of one size at a time, as a matrix."""
    out = np.full(len(values), np.nan)
    known = ~np.isnan(group)
    if not known.any():
        return out
    group = group[known].astype(np.intp)
    rows = np.flatnonzero(known)
    order = np.argsort(group, kind="stable")
    sizes = np.bincount(group)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for size in np.unique(sizes[sizes >= 3]):
        chosen = np.flatnonzero(sizes == size)
        members = rows[order[(starts[chosen][:, None] + np.arange(size)).ravel()]].reshape(len(chosen), size)
        matrix = values[members]
        others = np.stack([np.delete(matrix, i, axis=1) for i in range(size)], axis=1)   # (groups, size, size - 1)
        out[members] = matrix - np.median(others, axis=2)
    return out


def outlier_rule(threshold: float = OUTLIER_Z) -> str:
    """The outlier rule in words, as notes and diagnostics cite it (see `robust_z`)."""
    return (f"|modified z| > {threshold:g}: log value against the median of the rest of its "
            "server start, scaled by the condition's MAD (Iglewicz & Hoaglin 1993)")


def block_log_ratios(base: pd.DataFrame, treat: pd.DataFrame, strata: list[str],
                     statistic: str = "mean", fast: tuple[pd.Series, pd.Series] | None = None) -> pd.DataFrame:
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
    block: the machine's speed there, a covariate for runs made in different states). `fast`: each
    side's `side_fast_state`, when the caller has it already.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, not {statistic!r}")
    keys = [*BLOCK_KEYS, *strata]
    rounds = [*keys, "seq", "attempt", "iteration"]
    sides = [side.assign(_log=np.log(side["value"].to_numpy(dtype=float)))
             for side in (base, treat)]
    outside = {}
    if statistic != "mean":
        fast = fast or [side_fast_state(side, strata, statistic) for side in sides]
        both = pd.concat([side.loc[~keep, keys] for side, keep in zip(sides, fast)])
        outside = both.groupby(list(BLOCK_KEYS)).size().to_dict() if len(both) else {}
        sides = [side[keep] for side, keep in zip(sides, fast)]
    # Every row's block, stratum and round as a number (groups in sorted order, both sides
    # numbered alike), then sums per group with bincount: the pandas groupbys this replaces cost
    # a millisecond each whatever the rows, and an analysis makes thousands of them.
    rows = pd.concat([side[rounds] for side in sides], ignore_index=True)
    groups = [rows.groupby(columns, sort=True) for columns in (list(BLOCK_KEYS), keys, rounds)]
    codes = [group.ngroup().to_numpy() for group in groups]
    kept = ~np.isnan(codes[2])                   # a key left empty belongs to no group (as in groupby)
    block, stratum, round_ = (np.where(kept, code, 0).astype(np.intp) for code in codes)
    log = np.concatenate([side["_log"].to_numpy(dtype=float) for side in sides])
    is_treat = np.arange(len(rows)) >= len(sides[0])
    n_rounds, n_strata = int(round_.max(initial=-1)) + 1, int(stratum.max(initial=-1)) + 1

    def per(code, n, weights, side):   # sums over one side's rows (`side`: its mask); counts without weights
        mask = kept & side
        return np.bincount(code[mask], None if weights is None else weights[mask], minlength=n)

    stratum_of_round = np.zeros(n_rounds, dtype=np.intp)
    stratum_of_round[round_[kept]] = stratum[kept]
    block_of_stratum = np.zeros(n_strata, dtype=np.intp)
    block_of_stratum[stratum[kept]] = block[kept]
    with np.errstate(invalid="ignore", divide="ignore"):
        round_mean = [per(round_, n_rounds, log, side) / per(round_, n_rounds, None, side)
                      for side in (~is_treat, is_treat)]
        side_mean = [per(stratum, n_strata, log, side) / per(stratum, n_strata, None, side)
                     for side in (~is_treat, is_treat)]
    has_b, has_t = (~np.isnan(mean) for mean in round_mean)
    matched = has_b & has_t

    def over_strata(values):
        return np.bincount(stratum_of_round, values.astype(float), minlength=n_strata)

    n_pairs, unmatched = over_strata(matched), over_strata(has_b ^ has_t)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = over_strata(np.where(matched, round_mean[1] - round_mean[0], 0.0)) / n_pairs
    both_sides = (over_strata(has_b) > 0) & (over_strata(has_t) > 0)
    paired = n_pairs > 0
    by_rounds = paired & (statistic == "mean")
    log_ratio = np.where(both_sides, np.where(by_rounds, diff, side_mean[1] - side_mean[0]), np.nan)
    used = ~np.isnan(log_ratio)
    blocks_of = block_of_stratum[used]
    n_blocks = int(block.max(initial=-1)) + 1
    count = np.bincount(blocks_of, minlength=n_blocks)
    present = count > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = pd.DataFrame({
            "log_ratio": np.bincount(blocks_of, log_ratio[used], n_blocks) / count,
            "paired": np.bincount(blocks_of, ~paired[used], n_blocks) == 0,
            "n_pairs": np.bincount(blocks_of, np.where(by_rounds, n_pairs, 0)[used], n_blocks).astype(np.int64),
            "unmatched": np.bincount(blocks_of, np.where(by_rounds, unmatched, 0)[used], n_blocks).astype(np.int64),
            "baseline_log": np.bincount(blocks_of, side_mean[0][used], n_blocks) / count})[present]
    names = groups[0].size().index.to_frame(index=False)   # the blocks, in the order of their codes
    out = pd.concat([names[present].reset_index(drop=True), out.reset_index(drop=True)], axis=1)
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
    (docs/method.md, "What a block contributes"); the fastest values are the undisturbed ones (Chen & Revels,
    "Robust benchmarking in noisy environments", arXiv:1608.04295, 2016), and the fast state's
    own spread is a few percent. The band is drawn from each start's own fastest because starts
    settle at levels of their own (up to 5-6% apart on one Intel host): a band drawn
    from the run's single fastest value cut through the slower starts' fast state, by a run-wide
    amount that their blocks shared, and the interval under-covered (85% at 36 blocks in
    tests/unit/test_simulation.py). The gate keeps a start spent wholly in a slow stretch out,
    so it contributes nothing rather than a slow value; the quartile, not the minimum, keeps one
    lucky start from setting it. The mean over the band, not the single minimum, keeps one
    lucky value from setting a block's ratio.
    """
    keyed = (logs if statistic == "near_min" else -logs).to_numpy(dtype=float)   # smaller is faster
    band = np.log1p(FAST_BAND)
    frame = pd.concat([groups.add_prefix("_g_"), starts.add_prefix("_s_")], axis=1)
    group_cols = [c for c in frame.columns if c.startswith("_g_")]
    start_cols = group_cols + [c for c in frame.columns if c.startswith("_s_")]
    group, start = (frame.groupby(columns, sort=True).ngroup().to_numpy() for columns in (group_cols, start_cols))
    known = ~np.isnan(start) & ~np.isnan(keyed)   # as groupby: a value or a key left empty is in no group
    start_of = start[known].astype(np.intp)
    best_of = np.full(int(start_of.max(initial=-1)) + 1, np.inf)
    np.minimum.at(best_of, start_of, keyed[known])
    best = np.full(len(keyed), np.nan)
    best[known] = best_of[start_of]
    group_of_start = np.full(len(best_of), -1, dtype=np.intp)
    group_of_start[start_of] = group[known].astype(np.intp)
    level_of = np.full(int(np.nanmax(group, initial=-1)) + 1, np.nan)   # the FAST_GATE quantile of its starts' fastest
    for g in np.unique(group_of_start[group_of_start >= 0]):
        level_of[g] = np.quantile(best_of[group_of_start == g], FAST_GATE)
    level = np.full(len(keyed), np.nan)
    level[known] = level_of[group[known].astype(np.intp)]
    with np.errstate(invalid="ignore"):
        return pd.Series((keyed <= best + band) & (best <= level + band), index=logs.index)


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
