"""Where C3's 5.7 -> 8.0 gap goes: the binary log's share of it, and Yangsh888's toggles one at a time.

Yangsh888's post (WeChat, 2025-02-14; data/claims.yaml, C3 and C4) timed its insert loop at
6.07 s on MySQL 5.7 and 20.06 s on 8.0; 8.0 took 7.03 s with skip-log-bin, 14.75 s with
transaction_write_set_extraction=OFF and 19.87-20.32 s with each of five InnoDB and back_log
settings at 5.7's value ("no effect"). C4 concludes that 8.0's binlog default explains most of
the gap. Two answers to that, both read from stored runs:

- `binlog_shares`: a C3 run holding 5.7.23, 8.0.40 and 8.0.40 with skip-log-bin side by side
  (params/insert_57_vs_80.yaml on MySQL 9.7) gives the binlog's share of the gap on the log
  scale with Fieller's interval (`stats.level_share`), per run. The same run measures 9.7.4
  but no 9.7.4 without its binlog: for 9.7.4 the part is 5.7's values (binary log off and seed
  004's other settings), the settings' share of its gap, not the binlog's alone.
- `toggles_table`: the ablation params/ablation/seed004_toggles_mysql80.yaml (`claimlab ablate`:
  each setting alone on 8.0.40 against its defaults, `attribution.attribute`), beside the seed's
  own figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import ablation, attribution, stats, wording
from .errors import DataError
from .stats import equivalence_band

FACTOR, WORKLOAD, METRIC = "server", "insert_loop", "elapsed_s"
# Yangsh888's times in seconds, as data/claims.yaml lists them (C3's published figures).
SEED = {"5.7": 6.07, "8.0": 20.06, "skip-log-bin": 7.03, "transaction_write_set_extraction=OFF": 14.75,
        "five settings": (19.87, 20.32)}
FIVE_SETTINGS = ("innodb_autoinc_lock_mode", "innodb_undo_log_truncate", "innodb_max_dirty_pages_pct",
                 "innodb_max_dirty_pages_pct_lwm", "back_log")
NO_EFFECT = 0.05   # "no effect" within +-5% (the band of the claims' ratio verdicts)
MOST = 0.5         # C4's "most of the gap"


def seed_share(seconds: float) -> float:
    """The share of Yangsh888's 5.7 -> 8.0 gap (6.07 -> 20.06 s) that a setting taking 8.0 to
    `seconds` closes, on the log scale as the measured shares are."""
    return math.log(SEED["8.0"] / seconds) / math.log(SEED["8.0"] / SEED["5.7"])


@dataclass(frozen=True)
class Gap:
    """One gap of a C3 run: level `slow` against `fast`, and `without` (slow less one part)."""

    slow: str
    fast: str
    without: str
    change: str                        # what `without` changes, for a reader
    seed_share: float | None = None    # the seed's own figure of that share


GAPS = (Gap("mysql80", "mysql57", "mysql80_skip_log_bin", "without the binary log (skip-log-bin)",
            seed_share(SEED["skip-log-bin"])),
        Gap("defaults", "mysql57", "v57_values", "with 5.7's values (binary log off and Yangsh888's other settings)"))

SHARES_INTRO = (
    "## Where the 5.7 → 8.0 gap goes\n\n"
    "The run holds MySQL 5.7.23, 8.0.40 and 8.0.40 with skip-log-bin side by side in every block. The binary "
    "log's share of the gap is log(8.0.40 / 8.0.40 without it) ÷ log(8.0.40 / 5.7.23): 100% when the binary log "
    "is the whole gap, 0% when it is none of it, over 100% when 8.0.40 without it is faster than 5.7.23. Both "
    "ratios come from the same blocks, paired round by round; the 95% interval is Fieller's, "
    "unbounded when the run cannot tell the gap itself from none. C4 says the binlog explains *most* of the gap: "
    f"supported when the whole interval lies above {MOST:.0%}. The run has no 9.7.4 without its binary log, so "
    "for 9.7.4 the part removed is 5.7's values (binary log off and Yangsh888's other settings).")

TOGGLES_INTRO = (
    "## Yangsh888's toggles, one at a time\n\n"
    "Yangsh888 set each of these to 5.7's value on 8.0, one at a time: five changed nothing, "
    "transaction_write_set_extraction=OFF took its loop from 20.06 to 14.75 s, skip-log-bin to 7.03 s. The "
    "ablation `seed004_toggles_mysql80` does the same on 8.0.40: each setting alone against 8.0.40's defaults, "
    "all of them conditions of one run on fresh server processes (`claimlab ablate`). A ratio is the loop's time "
    "with the setting over without it, with a 95% Welch interval over server starts; a share is of this run's "
    "own gap, 8.0.40's defaults against 8.0.40 with every setting at 5.7's value, with a 95% percentile "
    "interval from resampling server starts, then rounds within them, widened for few starts (Hesterberg's "
    "expanded percentile interval). The seed's "
    "shares are of its 5.7 → 8.0 gap (6.07 → 20.06 s).")


def binlog_shares(results: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """One row per run and gap of `GAPS` whose three levels the run holds (none: an empty
    frame, and the report leaves the section out): the gap's ratio, the ratio the part closes,
    the share with Fieller's interval (`stats.level_share`: E. C. Fieller, "Some problems in
    interval estimation", JRSS B 16(2), 1954), the seed's share and C4's verdict
    (`stats.share_verdict`). Each run is its own answer: runs hours apart are not pooled."""
    rows = []
    loop = results[(results["workload"] == WORKLOAD) & (results["metric"] == METRIC)]
    for run_id, run in (loop.groupby("run_id", sort=True) if FACTOR in loop else ()):
        for gap in GAPS:
            if not {gap.slow, gap.fast, gap.without} <= set(run[FACTOR].astype(str)):
                continue
            row = {"run_id": run_id, "slow": _server(run, gap.slow), "fast": _server(run, gap.fast),
                   "change": gap.change, "seed_share": gap.seed_share}
            try:
                found = stats.level_share(run, FACTOR, gap.slow, gap.fast, gap.without, workload=WORKLOAD,
                                          metric=METRIC, confidence=confidence)
            except DataError as exc:   # said in the row (a run cut after one block), not left out
                rows.append(row | {"bounded": False, "n_blocks": 0, "most": "inconclusive", "most_reason": str(exc)})
                continue
            word, reason = stats.share_verdict(found.share, MOST)
            rows.append(row | {
                "gap": found.gap.estimate, "gap_lo": found.gap.low, "gap_hi": found.gap.high,
                "closed": found.part.estimate, "closed_lo": found.part.low, "closed_hi": found.part.high,
                "share": found.share.estimate, "share_lo": found.share.low, "share_hi": found.share.high,
                "bounded": found.share.bounded, "n_blocks": found.share.n_blocks, "most": word, "most_reason": reason})
    return pd.DataFrame(rows)


def _server(run: pd.DataFrame, level: str) -> str:
    versions = run.loc[run[FACTOR].astype(str) == level, "server_version"].dropna().astype(str).unique()
    return wording.server_name(", ".join(sorted(versions))) or wording.level_words(f"{FACTOR}={level}")


def share_words(r) -> str:
    """A share with its interval, or why there is none ("87% [80%, 93%]")."""
    if not r["bounded"]:
        return f"{wording.whole_percent(r['share'])} (interval unbounded: this run cannot say)"
    return wording.share_interval(r["share"], r["share_lo"], r["share_hi"])


def shares_html(table: pd.DataFrame) -> str:
    """The shares as a table for people, one row per run and gap."""
    shown = pd.DataFrame({
        "the gap [95%]": [f"{r['slow']} / {r['fast']}: {wording.interval(r['gap'], r['gap_lo'], r['gap_hi'])}"
                          for _, r in table.iterrows()],
        "changed": [f"{r['slow']} {r['change']}" for _, r in table.iterrows()],
        "how much faster [95%]": [wording.interval(r["closed"], r["closed_lo"], r["closed_hi"])
                                  for _, r in table.iterrows()],
        "share of the gap [95%]": [share_words(r) for _, r in table.iterrows()],
        "Yangsh888's share": [wording.whole_percent(s) if s is not None and pd.notna(s) else "—"
                             for s in table["seed_share"]],
        "most of the gap (C4)": table["most"],
        "blocks": table["n_blocks"]})
    if table["run_id"].nunique() > 1:
        shown.insert(0, "run", table["run_id"])
    return wording.table_html(shown)


def shares_markdown(table: pd.DataFrame, verdicts: pd.DataFrame | None = None) -> str:
    """What the shares say, a line per run and gap, then the verdict card against Yangsh888's
    1.15 (8.0 with skip-log-bin over 5.7) where the verdict table has it."""
    lines = []
    for _, r in table.iterrows():
        if not r["n_blocks"]:
            lines.append(f"- **{r['slow']} against {r['fast']}** (run `{r['run_id']}`): no share, {r['most_reason']}.")
            continue
        seed = r["seed_share"]
        against = ""
        if seed is not None and pd.notna(seed):
            where = ("inside the interval" if not r["bounded"] or r["share_lo"] <= seed <= r["share_hi"] else
                     "above the interval" if seed > r["share_hi"] else "below the interval")
            against = f" Yangsh888's own times give {wording.whole_percent(seed)}: {where}."
        lines.append(
            f"- **{r['slow']} against {r['fast']}** (run `{r['run_id']}`): {r['slow']} takes "
            f"{wording.number(r['gap'])}× {r['fast']}'s time; {r['change']} it is {wording.number(r['closed'])}× "
            f"faster, leaving {wording.number(r['gap'] / r['closed'])}× {r['fast']}'s time. "
            f"That is **{share_words(r)}** of the gap.{against} Most of the gap (C4): **{r['most']}**, "
            f"{r['most_reason']}.")
    if verdicts is not None and len(verdicts):
        skip = verdicts[verdicts["comparison"] == "v80_skiplogbin_vs_v57_insert"]
        for _, v in skip[skip["verdict"] != "not_tested"].iterrows():
            lines.append(f"- Yangsh888's post: skip-log-bin brings 8.0 to 1.15× 5.7's time. Here "
                         f"{wording.interval(v['estimate'], v['ci_low'], v['ci_high'])}: **{v['verdict_label']}** "
                         "(its card above).")
    return "\n".join(lines)


# -- the toggles --------------------------------------------------------------------------------

def stored_toggles(name: str, run_id: str | None, data_root: Path | None) -> Path | None:
    """The ablation run a claim report shows: `run_id` when the render phase names one, else
    the newest stored run of `name`; None when none is stored (the report says "not run")."""
    if run_id:
        from .store import find_run
        return find_run(run_id, data_root)
    return ablation.newest_run(name, data_root)


def not_run_markdown(name: str) -> str:
    return (f"**Not run.** No stored run of the ablation `{name}` was found. "
            f"`claimlab ablate {name}` measures it on MySQL 8.0.40 from a tarball mirror (CLAIMLAB_MYSQL_MIRROR) "
            "and stores it; the next report shows it here.")


def _seed(option: str) -> tuple[str, float | tuple[float, float] | None]:
    """What Yangsh888 saw when it set `option` alone on 8.0, and the ratio that is."""
    if option == "log_bin":
        return f"{SEED['8.0']:g} → {SEED['skip-log-bin']:g} s", SEED["skip-log-bin"] / SEED["8.0"]
    if option == "transaction_write_set_extraction":
        after = SEED["transaction_write_set_extraction=OFF"]
        return f"{SEED['8.0']:g} → {after:g} s", after / SEED["8.0"]
    if option in FIVE_SETTINGS:
        low, high = SEED["five settings"]
        return f"no effect ({low:g}–{high:g} s)", (low / SEED["8.0"], high / SEED["8.0"])
    return "—", None


def against_seed(seed: float | tuple[float, float] | None, low: float, high: float) -> str:
    """A toggle's ratio interval against the seed's figure: a ratio the seed measured is inside
    the interval or not; a setting the seed found no effect of is within +-5% (`NO_EFFECT`),
    beyond it (an effect the seed did not see) or neither (this run cannot say)."""
    if seed is None:
        return "—"
    if isinstance(seed, tuple):
        band_low, band_high = equivalence_band(NO_EFFECT)
        if band_low <= low and high <= band_high:
            return f"no effect within ±{NO_EFFECT:.0%}, as Yangsh888 found"
        if low > band_high or high < band_low:
            return "an effect Yangsh888 did not see"
        return f"cannot say at ±{NO_EFFECT:.0%}"
    if low <= seed <= high:
        return "as Yangsh888 found"
    return "a smaller effect than Yangsh888's" if low > seed else "a larger effect than Yangsh888's"


def toggles_of_run(run_dir: Path, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A stored toggles run's table (`toggles_table`) and its shares, from the ablation the
    run measured (`ablation.of_run`), whatever its file says now."""
    from .store import read_results
    measured = ablation.of_run(run_dir)
    shares = attribution.attribute(read_results(run_dir), measured, seed=seed)
    return toggles_table(shares, measured), shares


def toggles_table(shares: pd.DataFrame, abl: ablation.Ablation) -> pd.DataFrame:
    """Each setting alone (`attribution.attribute`'s rows of kind one) and all of them together,
    with the seed's figures beside: what a claim report shows of the toggles."""
    fast = ablation.option_values(abl.fast)
    rows = []
    for r in shares[shares["kind"].isin(["one", "total"])].itertuples(index=False):
        alone = r.kind == "one"
        seed_text, seed_ratio = _seed(r.option) if alone else ("—", None)
        if not alone:
            setting = "all of them together"
        elif r.option == "log_bin" and fast.get("log_bin") is False:
            setting = "skip-log-bin"
        else:
            value = fast.get(r.option)
            setting = f"{r.option} = {'the server default' if value is None else _option(value)}"
        rows.append({"setting": setting, "alone": alone, "ratio": r.ratio, "ratio_lo": r.ratio_lo,
                     "ratio_hi": r.ratio_hi, "share": r.share, "share_lo": r.share_lo, "share_hi": r.share_hi,
                     "seed": seed_text, "seed_ratio": seed_ratio, "seed_share": _seed_share(r.option) if alone else "—",
                     "against_seed": against_seed(seed_ratio, r.ratio_lo, r.ratio_hi)})
    return pd.DataFrame(rows)


def _option(value) -> str:
    """A setting's value as an option file spells it (80, not 80.0)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _seed_share(option: str) -> str:
    seed = _seed(option)[1]
    if seed is None:
        return "—"
    if isinstance(seed, tuple):
        low, high = sorted(seed_share(SEED["8.0"] * s) for s in seed)
        return f"{low:.0%} to {high:.0%}"
    return wording.whole_percent(seed_share(SEED["8.0"] * seed))


def toggles_html(table: pd.DataFrame) -> str:
    def seed_ratio(value) -> str:
        return "—" if value is None else (f"{wording.number(value[0])}–{wording.number(value[1])}"
                                          if isinstance(value, tuple) else wording.number(value))
    shown = pd.DataFrame({
        "setting at 5.7's value": table["setting"],
        "ratio alone [95%]": [wording.interval(r.ratio, r.ratio_lo, r.ratio_hi) for r in table.itertuples()],
        "share of this run's gap [95%]": [wording.share_interval(r.share, r.share_lo, r.share_hi)
                                          if r.alone else "100%: the gap itself" for r in table.itertuples()],
        "Yangsh888 on 8.0": table["seed"], "Yangsh888's ratio": [seed_ratio(v) for v in table["seed_ratio"]],
        "Yangsh888's share of the 5.7 → 8.0 gap": table["seed_share"],
        "against Yangsh888": table["against_seed"]})
    return wording.table_html(shown)


def toggles_markdown(table: pd.DataFrame, shares: pd.DataFrame) -> str:
    """What the toggles say: the largest share alone, each seed figure's fate, and what the
    ablation's own notes and surprises flag."""
    alone = table[table["alone"]]
    lines = [f"- Largest share alone: **{alone.loc[alone['share'].idxmax(), 'setting']}**."] if len(alone) else []
    lines += [f"- **{r.setting}**: {r.against_seed}." for r in alone.itertuples() if r.against_seed != "—"]
    note = shares["note"].iloc[0] if len(shares) else ""
    lines += [f"- {note}."] if note else []
    lines += [f"- **Unexplained by this run:** {s}." for s in attribution.surprises(shares)]
    return "\n".join(lines)
