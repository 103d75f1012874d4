"""What a person reads in a report: verdict cards, tables formatted for people, method and
settings paragraphs. Pure functions of the verdict table (contract 5 columns: claim, comparison,
kind, target, server_version, baseline, treatment, metric, estimate, ci_low, ci_high,
confidence, p_value, published_ratio, verdict, verdict_label, edge_label, rerun_chance,
flagged_share, fast_share, n_runs, n_blocks, verdict_note; for runs analysed together also sd_unit
and runs_to_settle) and of stored run files; the notebooks and the index call them, compute nothing.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .claims import Claim
from .provenance import cpu_label
from .stats.observations import SLOW_HOUR
from .stats.slow_side import SIDE_ALPHA
from .stats.verdicts import EDGE_FACTOR, EDGE_MARK
from .store import read_jsonl, read_manifest, read_variables

CARD_COLUMNS = ("claim", "comparison", "kind", "target", "server_version", "baseline", "treatment", "metric",
                "estimate", "ci_low", "ci_high", "confidence", "p_value", "published_ratio", "verdict",
                "verdict_label", "edge_label", "rerun_chance", "flagged_share", "fast_share", "n_runs",
                "n_blocks", "verdict_note")
SETTINGS_SHOWN = ("log_bin", "sync_binlog", "innodb_flush_log_at_trx_commit", "binlog_format",
                  "character_set_server", "collation_server", "innodb_buffer_pool_size", "innodb_doublewrite",
                  "performance_schema")
METRIC_WORDS = {"qps": "queries per second", "tps": "transactions per second", "elapsed_s": "elapsed time",
                "seconds": "elapsed time", "rows_per_s": "rows per second"}
_FAMILY_NAMES = {"mariadb": "MariaDB", "mysql": "MySQL"}
_VERDICT_CLASS = {"supported": "supported", "contradicted": "contradicted", "inconclusive": "inconclusive",
                  "not_tested": "not-tested"}


# -- numbers for people -------------------------------------------------------------------------

def _missing(value) -> bool:
    """None or NaN: shown as a dash by every formatter below."""
    return value is None or isinstance(value, float) and math.isnan(value)


def number(value, digits: int = 3) -> str:
    """`digits` significant digits in plain decimal notation (never 1.2e-05), thousands grouped;
    a dash for a missing value, yes/no for a truth value."""
    if _missing(value):
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)) and abs(int(value)) < 10 ** digits:
        return f"{int(value):,}"   # a count: 10, not 10.0
    if not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return str(value)
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    rounded = round(value, digits - 1 - math.floor(math.log10(abs(value))))   # 98272 -> 98300
    # The magnitude after rounding: 0.000099996 is 0.000100, not 0.0001000 (one digit too many).
    magnitude = math.floor(math.log10(abs(rounded)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{rounded:,.{decimals}f}"


def published(value) -> str:
    """A published ratio as the claims file states it (1.025, 0.7509), never rounded to 1.02."""
    return "—" if _missing(value) else f"{value:g}"


def percent(value, digits: int = 2) -> str:
    return "—" if _missing(value) else f"{number(100 * value, digits)}%"


def whole_percent(value) -> str:
    """A share as a whole percent: 0.07 -> "7%" (percent() keeps two digits: "7.0%")."""
    return "—" if _missing(value) else f"{value:.0%}"


def ratio_change(ratio: float) -> str:
    """0.75 -> "25% lower", 1.3 -> "30% higher"."""
    if ratio is None or not math.isfinite(ratio):
        return "—"
    change = ratio - 1
    return "no change" if abs(change) < 0.0005 else f"{percent(abs(change))} {'higher' if change > 0 else 'lower'}"


def share_points(value) -> str:
    """A share already in percent, one decimal (12.9, 0.9, a dash for none): the columns of a
    top-functions table line up and read alike."""
    if _missing(value):
        return "—"
    return "—" if value == 0 else f"{value:.1f}"


def table_html(df: pd.DataFrame, formats: dict[str, Callable] | None = None, labels: dict[str, str] | None = None,
               caption: str = "", default: Callable | None = None) -> str:
    """An HTML table for people: no index, every cell formatted (numbers by `number`, or by
    `default`, unless `formats` says otherwise), headers relabelled; wraps instead of overflowing
    (see the report CSS)."""
    formats, labels = formats or {}, labels or {}
    head = "".join(f"<th>{html.escape(labels.get(c, c if ' ' in c else c.replace('_', ' ')))}</th>"
                   for c in df.columns)
    rows = []
    for record in df.itertuples(index=False):
        cells = []
        for column, value in zip(df.columns, record):
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            text = (formats[column](value) if column in formats else
                    default(value) if default and numeric else _cell(value))
            css = " class=num" if numeric else " class=long" if _LONG_WORD.search(text) else ""
            cells.append(f"<td{css}>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table class='people'>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


# A cell that may break inside a word (a C++ symbol), unlike "cumulative" or "O_DIRECT".
_LONG_WORD = re.compile(r"\S{25}")
_PADDED_DECIMAL = re.compile(r"(-?\d+)(?:\.0{4,}|(\.\d*?[1-9])0{4,})")   # a server's "90.000000"


def _cell(value) -> str:
    if _missing(value):
        return "—"
    if isinstance(value, (bool, int, float)):
        return number(value)
    padded = _PADDED_DECIMAL.fullmatch(str(value))
    return padded.group(1) + (padded.group(2) or "") if padded else str(value)


# -- levels and comparisons in words -------------------------------------------------------------

# What each factor level of the params files is, as a reader names it: a level is a key (`uca_ai`,
# `v80_binlog`) chosen to be short in code, never shown. A level that is a role filled differently
# per server family maps the family to what ran there.
LEVEL_WORDS: dict[str, dict[str, str | dict[str, str]]] = {
    "charset": {"latin1": "latin1 throughout", "utf8mb4": "utf8mb4 throughout",
                "mismatch": "latin1 client, utf8mb4 server"},
    "collation": {"uca_ai": {"mysql": "utf8mb4_0900_ai_ci", "mariadb": "utf8mb4_uca1400_ai_ci"}},
    "binlog": {"on": "binary log on", "off": "binary log off"},
    "server": {"defaults": "the server's own defaults", "v57_values": "5.7 values",
               "v80_binlog": "8.0 binlog defaults", "mysql57": "MySQL 5.7.44", "mysql80": "MySQL 8.0.40",
               "mysql80_skip_log_bin": "MySQL 8.0.40, binary log off"},
}
WORKLOAD_WORDS = {"insert_loop": "insert loop", "bulk_insert": "bulk insert", "join": "join",
                  "varchar_scan": "varchar scan", "oltp": "sysbench oltp_read_write"}
_STEP = re.compile(r"(only|upto)-(.+)")


def level_words(condition, family: str | None = None) -> str:
    """A condition ("collation=uca_ai", or "collation_uca_ai" as CPU evidence names it) as a
    reader names it: "utf8mb4_0900_ai_ci" on MySQL, "utf8mb4_0900_ai_ci (MySQL) /
    utf8mb4_uca1400_ai_ci (MariaDB)" when the server is not known; an ablation's step as the
    switch it makes ("only innodb_flush_method", "up to log_bin"); a level with no entry as it is
    spelt (a collation's real name)."""
    parts = []
    for part in str(condition).split(","):
        factor, sep, level = part.strip().partition("=")
        if not sep:
            factor, level = next(((f, part[len(f) + 1:]) for f in LEVEL_WORDS if part.startswith(f + "_")),
                                 ("", part))
        if factor == "step":
            step = _STEP.fullmatch(level)
            parts.append(f"{'only' if step.group(1) == 'only' else 'up to'} {step.group(2)}" if step else level)
            continue
        said = LEVEL_WORDS.get(factor, {}).get(level, level)
        if isinstance(said, dict):
            said = said[family] if family in said else " / ".join(
                f"{v} ({_FAMILY_NAMES[k]})" for k, v in sorted(said.items(), key=lambda kv: kv[0] != "mysql"))
        parts.append(said)
    return ", ".join(parts)


def comparison_words(row, family: str | None = None, workload: bool | set = False) -> str:
    """A comparison by what it compares: "utf8mb4_0900_ai_ci vs utf8mb3_general_ci", "8.0 binlog
    defaults vs 5.7 values (insert loop)" with `workload`; never its key (`uca_ai_vs_utf8mb3`)."""
    if family is None and isinstance(row.get("server_version"), str):
        family = server_family(row["server_version"])
    text = f"{level_words(row['treatment'], family)} vs {level_words(row['baseline'], family)}"
    name = row.get("workload")
    if isinstance(workload, set):   # several_workloads: the claims that must name theirs
        workload = row.get("claim") in workload
    return text + (f" ({WORKLOAD_WORDS.get(name, str(name).replace('_', ' '))})" if workload and name else "")


def comparison_names(table: pd.DataFrame) -> dict[str, str]:
    """Each comparison key of a verdict table -> comparison_words, every server's level named:
    for tables keyed by comparison (the between-runs spread) that have no levels of their own."""
    workload = several_workloads(table)
    return {r["comparison"]: comparison_words(r, family="", workload=workload)
            for _, r in table.drop_duplicates("comparison").iterrows()}


def baseline_words(baseline: str) -> str:
    """A between-runs baseline ("server=v57_values insert_loop/elapsed_s", stats.between_runs) in
    words: "5.7 values (insert loop, elapsed time)"."""
    condition, _, where = str(baseline).rpartition(" ")
    workload, _, metric = where.partition("/")
    if not condition or not metric:
        return level_words(baseline)
    return f"{level_words(condition)} ({WORKLOAD_WORDS.get(workload, workload)}, {metric_words(metric)})"


def metric_words(metric: str) -> str:
    return METRIC_WORDS.get(metric, str(metric).replace("_", " "))


def several_workloads(table: pd.DataFrame) -> set[str]:
    """The claims whose comparisons in `table` span workloads, so that each must say its own."""
    if "workload" not in table.columns:
        return set()
    counts = table.groupby("claim")["workload"].nunique()
    return set(counts[counts > 1].index)


def level(confidence) -> str:
    """An interval's level as exactly as it was computed: 0.975 -> "97.5%" (never rounded to 98%)."""
    return "—" if _missing(confidence) else f"{100 * float(confidence):.4g}%"


# -- verdict cards ------------------------------------------------------------------------------

def server_family(server_version: str) -> str:
    """mariadb or mysql, from the version string a server reported."""
    return "mariadb" if "mariadb" in str(server_version).lower() else "mysql"


def server_name(server_version, target=None) -> str:
    """What a reader calls the server: "MariaDB 10.11.19" for "10.11.19-MariaDB-0+deb12u1, 10.11.19-
    MariaDB-0+deb12u1-log" (one server, with and without its binlog), "MySQL 9.7.4" for Debian's
    "9.7.4-2"; the target's name when no server ran, "" when neither is known. The exact version
    strings stay in each report's run section."""
    names = []
    for version in str(server_version).split(",") if isinstance(server_version, str) else []:
        number_part = re.match(r"\s*(\d+(?:\.\d+)*)", version)
        if number_part:
            name = f"{'MariaDB' if server_family(version) == 'mariadb' else 'MySQL'} {number_part.group(1)}"
            names += [name] if name not in names else []
    if names:
        return ", ".join(names)
    return f"target {target}" if isinstance(target, str) and target else ""


def server_names(results: pd.DataFrame) -> dict[str, str]:
    """Each target of a results table -> its server_name (all the versions it reported)."""
    return {target: server_name(", ".join(sorted(part["server_version"].dropna().astype(str).unique())), target)
            for target, part in results.groupby("target", sort=True)}


def size_relation(row) -> str:
    """Where the published ratio lies against the measured interval, in plain words."""
    ratio, low, high = row["published_ratio"], row["ci_low"], row["ci_high"]
    if ratio is None or pd.isna(ratio) or pd.isna(low) or pd.isna(high):
        return ""
    if ratio < low:
        return "effect smaller than published" if ratio < 1 else "effect larger than published"
    if ratio > high:
        return "effect smaller than published" if ratio > 1 else "effect larger than published"
    return "published value inside the interval"


def card_html(row, claim_family: str = "mysql", workload: bool | set = False) -> str:
    """One verdict card: claimed, measured (with interval), where, analogue or not, verdict in
    words, share of measurements the speed witness flagged."""
    verdict = str(row["verdict"])
    label = row.get("verdict_label") or verdict.replace("_", " ")
    server = server_name(row["server_version"]) or None
    family = server_family(row["server_version"]) if server else claim_family
    where = (f"{server}: " + ("the claim's own server family" if family == claim_family else
                              f"an analogue ({_FAMILY_NAMES[family]}), not the {_FAMILY_NAMES[claim_family]} "
                              "server the source measured")
             if server else "not measured: no server here ran both sides")
    claimed = ("no difference (ratio within the equivalence margin)" if row["kind"] == "null" else
               f"ratio {published(row['published_ratio'])} ({ratio_change(row['published_ratio'])})"
               if pd.notna(row["published_ratio"]) else "a direction only, no published figure")
    if verdict == "not_tested":
        measured = "not measured"
    else:
        measured = (f"ratio {number(row['estimate'])} [{number(row['ci_low'])}, {number(row['ci_high'])}] "
                    f"({ratio_change(row['estimate'])}; {level(row['confidence'])} interval)")
    flagged = row.get("flagged_share")
    flagged_text = ("speed witness: not recorded in this run" if flagged is None or pd.isna(flagged) else
                    f"speed witness: {percent(flagged)} of measurements taken while the machine ran slow"
                    + (" — read with care" if flagged >= 0.25 else ""))
    fast = row.get("fast_share")
    if not _missing(fast):
        flagged_text += (f"; fast state: {fast:.0%} of the values"
                         + (" — a slow hour, see the note" if fast < SLOW_HOUR else ""))
    if not _missing(row.get("side_state_p")) and row["side_state_p"] < SIDE_ALPHA:
        bound = row.get("side_bias_bound")     # NaN in the table is None in a summary's JSON
        flagged_text += (f"; a slow state on one side (p = {row['side_state_p']:.2g}): the estimate may be "
                         + ("biased" if _missing(bound) else f"biased by up to {bound:.1%}") + ", see the note")
    counts = (f"{html.escape(flagged_text)}. {_count(row.get('n_blocks'))} server starts, "
              f"{_count(row.get('n_runs'))} run(s)." if server else "")
    size = size_relation(row)
    compared = family if server else None   # not measured: every server's level, each named
    what = " · ".join([row["claim"], comparison_words(row, family if server else None, workload)]
                      + ([server] if server else []))
    edge = edge_of(row)
    edge_html = (f"<p class='edge'><b>Near a decision edge:</b> an interval {EDGE_FACTOR:g}× as wide, or "
                 f"{EDGE_FACTOR:g}× narrower, would read “{html.escape(edge)}”; another run may read that.</p>"
                 if edge else "")
    rerun = rerun_chance(row.get("rerun_chance"))
    rerun_html = (f"<p><b>On a rerun:</b> this design would read “{html.escape(str(label))}” again with a "
                  f"chance of {rerun} (this run's estimate and spread taken as true).</p>"
                  if rerun != "—" and verdict != "not_tested" else "")
    return (
        f"<div class='card {_VERDICT_CLASS.get(verdict, 'inconclusive')}'>"
        f"<div class='card-head'><span class='verdict'>{html.escape(str(label))}</span>"
        + ("<span class='edge-mark'>near an edge</span>" if edge else "")
        + f"<span class='what'>{html.escape(what)}</span></div>"
        f"<div class='card-body'><p><b>Compared:</b> {html.escape(level_words(row['treatment'], compared))} "
        f"against {html.escape(level_words(row['baseline'], compared))}, "
        f"{html.escape(metric_words(row['metric']))}.</p>"
        f"<p><b>Claimed:</b> {html.escape(claimed)}. <b>Measured:</b> {html.escape(measured)}"
        f"{'; ' + html.escape(size) if size else ''}.</p>"
        f"<p><b>Where:</b> {html.escape(where)}. {counts}</p>{edge_html}{rerun_html}</div></div>")


def rerun_chance(value) -> str:
    """The chance a rerun reads the same label, as people read it: "about 55%", "over 99%"."""
    if _missing(value):
        return "—"
    return "over 99%" if value > 0.99 else f"about {100 * value:.0f}%"


def _count(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{int(value):,}"


def cards_html(table: pd.DataFrame, claim_family: str = "mysql") -> str:
    """Cards side by side per comparison when several servers measured it (MariaDB | MySQL)."""
    groups, workload = [], several_workloads(table)
    for _, part in table.groupby(["claim", "comparison"], sort=False):
        groups.append("<div class='card-row'>" + "".join(card_html(r, claim_family, workload)
                                                         for _, r in part.iterrows())
                      + "</div>")
    return "<div class='cards'>" + "".join(groups) + "</div>"


def comparison_label(comparison: str) -> str:
    """A comparison's name as a reader meets it: "uca_ai_vs_utf8mb3" -> "uca_ai vs utf8mb3" (the
    level names stay as the conditions spell them, e.g. collation=uca_ai)."""
    return str(comparison).replace("_vs_", " vs ")


def verdict_lines(rows) -> list[str]:
    """The verdict table as plain text, one line per comparison and server, columns aligned:
    what a terminal shows at the end of `claimlab report`."""
    header = ("CLAIM", "COMPARISON", "SERVER", "MEASURED [INTERVAL]", "PUBLISHED", "SAME ON RERUN", "VERDICT")
    lines = []
    for r in rows:
        untested = r.get("verdict") == "not_tested" or r.get("estimate") is None
        measured = ("not measured" if untested else
                    f"{number(r['estimate'])} [{number(r.get('ci_low'))}, {number(r.get('ci_high'))}]")
        lines.append((str(r["claim"]), comparison_label(r["comparison"]),
                      server_name(r.get("server_version"), r.get("target")) or "—",
                      measured, published(r.get("published_ratio")),
                      "—" if untested else rerun_chance(r.get("rerun_chance")), shown_label(r)))
    widths = [max(len(x) for x in column) for column in zip(header, *lines)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in (header, *lines)]


def shown_label(row) -> str:
    """The verdict label as tables print it: marked when it sits near a decision edge."""
    label = str(row.get("verdict_label") or str(row["verdict"]).replace("_", " "))
    return label + (EDGE_MARK if edge_of(row) else "")


def edge_of(row) -> str:
    """The label across the nearest decision edge ('' when none is near, or the table predates it)."""
    edge = row.get("edge_label")
    return edge if isinstance(edge, str) else ""


def note_html(row, workload: bool | set = False) -> str:
    """One comparison's note for the end of a report: two lines (where it ran and the verdict;
    the measured ratio and the reason) and the rest of the analysis's note in a collapsed block
    (its design, outliers, kept rows), for whoever checks it."""
    where = server_name(row["server_version"], row["target"]) or "no server that ran both sides"
    family = server_family(row["server_version"]) if server_name(row["server_version"]) else None
    parts = note_parts(row["verdict_note"] if isinstance(row["verdict_note"], str) else "")
    measured = ("not measured" if row["verdict"] == "not_tested" or _missing(row.get("estimate")) else
                f"ratio {number(row['estimate'])} [{number(row['ci_low'])}, {number(row['ci_high'])}], "
                f"{level(row['confidence'])} interval")
    reason = parts[0] if parts else ""
    head = (f"<b>{html.escape(str(row['claim']))} · {html.escape(comparison_words(row, family, workload))}</b> "
            f"on {html.escape(where)}: {html.escape(str(row['verdict_label']))}.")
    line = html.escape(measured + (f"; {reason}" if reason and reason != "not tested" else "") + ".")
    details = ("<details><summary>How this was decided</summary><ul>"
               + "".join(f"<li>{html.escape(p)}</li>" for p in parts[1:]) + "</ul></details>"
               if len(parts) > 1 else "")
    return f"<div class='note-item'><p>{head}<br>{line}</p>{details}</div>"


def notes_html(table: pd.DataFrame) -> str:
    workload = several_workloads(table)
    return "<div class='notes'>" + "".join(note_html(r, workload) for _, r in table.iterrows()) + "</div>"


def note_parts(note: str) -> list[str]:
    """An analysis note's clauses: split at "; " outside parentheses (a clause may explain
    itself in parentheses that hold a "; " of their own); "not tested: why" gives its reason."""
    if note.startswith("not tested: "):
        return ["not tested", note[len("not tested: "):]]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(note):
        depth += ch == "(" or -(ch == ")")
        if depth == 0 and note.startswith("; ", i):
            parts.append(note[start:i])
            start = i + 2
    parts.append(note[start:])
    return [p.strip() for p in parts if p.strip()]


def slow_hour_lines(rows) -> list[str]:
    """One line per claim and server measured in a slow hour (its comparisons' least fast-state
    share under SLOW_HOUR), saying what to do: what `claimlab report` and the summary print."""
    shares: dict[tuple[str, str, str, str], list[float]] = {}
    for r in rows:
        if not _missing(r.get("fast_share")):
            where = server_name(r.get("server_version"), r.get("target")) or str(r.get("target"))
            key = (str(r["claim"]), str(r.get("experiment")), str(r.get("target")), where)
            shares.setdefault(key, []).append(float(r["fast_share"]))
    return [f"{claim} on {where}: only {min(kept):.0%} of a comparison's values were in the fast state "
            f"(under {SLOW_HOUR:.0%}): measured in a slow hour, so its intervals are wider and its estimates "
            f"may sit at a level of their own. Rerun it at another time (claimlab run {experiment} --target "
            f"{target}) and compare the runs (claimlab analyze RUN RUN gives each run's estimate and whether they "
            "differ)."
            for (claim, experiment, target, where), kept in shares.items() if min(kept) < SLOW_HOUR]


def edge_lines(rows) -> list[str]:
    """One line per comparison left near a decision edge, saying how to settle it: what
    `claimlab report` and `claimlab analyze` print. A single run gets the rule of thumb: several
    runs analysed together have runs as their units (df = runs - 1), so two read wider than one;
    four or more narrow it (MariaDB's utf8mb4_general/utf8mb3 at 1.06 against 1.05 on one host:
    decided by 3 of 21 pairs of its runs, 27 of 35 fours, 21 of 21 fives), and where the runs
    themselves differ by the hour, more (the same comparison at 1.04 on another host: 10 of 40
    random fours, 40 of 40 eights). Runs already together get their own count
    (`runs_to_settle`), or none when their spread says they already read alike."""
    lines = []
    for r in rows:
        edge = edge_of(r)
        if not edge or r.get("verdict") == "not_tested":
            continue
        where = server_name(r.get("server_version"), r.get("target")) or str(r.get("target"))
        runs = 1 if _missing(r.get("n_runs")) else int(r["n_runs"])
        head = (f"{r['claim']} {comparison_label(r['comparison'])} on {where} reads “{r['verdict_label']}” "
                + ("" if runs == 1 else f"over {runs} runs analysed together, ")
                + f"near a decision edge (an interval {EDGE_FACTOR:g}x as wide or as narrow would read “{edge}”)")
        rerun = f"claimlab run {r.get('experiment')} --target {r.get('target')}"
        if runs == 1:
            lines.append(f"{head}, so one run does not settle it. Rerun it at other times ({rerun}) and analyse "
                         "four or more runs together, eight or more if the runs differ from each other (claimlab "
                         "analyze RUN RUN ... says whether they do; two runs read wider than one).")
            continue
        settle = r.get("runs_to_settle")
        if _missing(settle) or settle <= runs or _missing(r.get("sd_unit")):
            continue    # a table from before the count, or runs whose spread already settles it
        lines.append(f"{head}. At these runs' spread (their estimates' sd {r['sd_unit']:.1%}) about "
                     f"{int(settle)} runs together would read alike with 95% chance: {int(settle) - runs} more "
                     f"({rerun}, then analyse them all together).")
    return lines


def verdict_table_html(table: pd.DataFrame) -> str:
    """The verdict table, one table per interval level with the level stated once in its caption
    (a family of comparisons shares its error rate, so its intervals are wider: 97.5% for two)."""
    workload = several_workloads(table)
    parts = []
    levels = table["confidence"].fillna(-1.0)
    for confidence, part in table.groupby(levels, sort=False):
        view = part[["claim", "comparison", "server_version", "estimate", "ci_low", "ci_high", "published_ratio",
                     "verdict_label", "flagged_share", "fast_share"]].assign(
            rerun_chance=part["rerun_chance"].map(rerun_chance),
            comparison=[comparison_words(r, workload=workload) for _, r in part.iterrows()],
            verdict_label=[shown_label(r) for _, r in part.iterrows()],
            server_version=[server_name(v, t) or "—" for v, t in zip(part["server_version"], part["target"])])
        caption = ("Not measured: no server here ran both sides" if confidence < 0 else
                   f"Intervals at {level(confidence)}"
                   + ("" if confidence == 0.95 else " (each comparison's share of its family's 5% error rate)"))
        parts.append(table_html(view, caption=caption, formats={
            "flagged_share": percent, "fast_share": whole_percent, "published_ratio": published},
            labels={"server_version": "server", "estimate": "measured ratio", "ci_low": "low", "ci_high": "high",
                    "published_ratio": "published", "verdict_label": "verdict", "flagged_share": "flagged",
                    "fast_share": "fast state", "rerun_chance": "same on a rerun"}))
    return "".join(parts)


# -- claim, method, settings ----------------------------------------------------------------------

def claim_markdown(claim: Claim) -> str:
    figures = "\n".join(f"- {f.what}: **{_value(f.value)}** {f.unit}" + (f" ({f.note})" if f.note else "")
                        for f in claim.published)
    sources = "\n".join(f"- {s}" for s in claim.sources)
    return (f"## {claim.id}: {claim.title}\n\n**Sources:**\n\n{sources}\n\n(measured there on "
            f"{claim.source_target}).\n\n**Setup in the source:** {claim.setup}\n\n"
            f"**Published figures:**\n\n{figures}\n\n{claim.notes}")


def _value(value) -> str:
    return f"{number(value[0])}–{number(value[1])}" if isinstance(value, tuple) else number(value)


def run_server(run_dir: Path) -> str:
    """The server a stored run measured (server_name of the versions in servers.jsonl), or its
    default target's name when it recorded none."""
    path = Path(run_dir) / "servers.jsonl"
    versions = sorted({str(r["version"]) for r in read_jsonl(path)}) if path.exists() else []
    return server_name(", ".join(versions), read_manifest(run_dir).get("default_target"))


def method_markdown(run_dir: Path) -> str:
    m = read_manifest(run_dir)
    d = m["design"]
    host = m["provenance"]["host"]
    git = m["provenance"].get("git") or {}
    family = server_family(run_server(run_dir))
    factors = ", ".join(level_words(c["id"], family) for c in m["conditions"])
    skipped = "".join(f"\n- **Not run:** {reason}" for reason in m.get("skipped_targets", {}).values())
    return (
        f"**Run** `{m['run_id']}` on {run_server(run_dir)} ({m['profile']} profile, {m['status']}), "
        f"started {m['created_at'][:16].replace('T', ' ')} UTC "
        f"on {cpu_label(host)}, {host['cpu_count']} CPUs, {host['memory_gib']} GiB.\n\n"
        f"- Conditions: {factors}\n"
        f"- Design: {_design_text(d)} (seed {m['seed']}).\n"
        f"- Code: commit `{str(git.get('commit'))[:12]}`{' (uncommitted changes)' if git.get('dirty') else ''}; "
        f"results.csv sha256 `{str(m.get('checksums', {}).get('results.csv', 'run incomplete'))[:16]}…`."
        f"{skipped}")


def _design_text(d: dict) -> str:
    """How a run's conditions met the machine, from its manifest's design."""
    per_start = f"{d['warmup']} unrecorded warm-up and {d['iterations']} measured rounds per start"
    fast = d.get("fast_rounds")
    if fast:
        per_start += (f", more (up to {fast['max_iterations']}) while a condition has fewer than "
                      f"{fast['count']} fast-state {fast['metric']} values")
    timed = d.get("timed_rounds")
    if timed:
        per_start += (f", more (up to {timed['max_iterations']}) until a start has measured "
                      f"{timed['seconds']:g} s")
    within = d.get("within_factors") or []
    alternate = f"; {', '.join(within)} alternating within each start" if within else ""
    k = d.get("starts_per_block") or 1
    rule = d.get("sequential")
    if rule:   # a sequential run's starts lie between its rule's minimum and cap (`repetitions` goes unused)
        starts = f"{rule['min_blocks']}-{rule['max_blocks']}"
        blocks = f"{rule['min_blocks'] // k}-{rule['max_blocks'] // k}"
        stopping = (f"; sequential: a look after every block from {rule['min_blocks']} starts on, stopping once "
                    f"every comparison is decided or its repeated interval is within {rule['target_rel_width']:.0%}"
                    + (f" ({', '.join(rule['precise'])}: within it, decided or not)" if rule.get("precise") else ""))
    else:
        starts, blocks, stopping = d["repetitions"], d["repetitions"] // k, ""
    if d.get("side_by_side"):
        each = "one server" if k == 1 else f"{k} servers (each with its own code layout)"
        return (f"{blocks} blocks, each starting {each} per configuration together and "
                f"alternating the rounds between them in a random order{alternate}; {per_start}{stopping}")
    if k > 1:
        return (f"{starts} server starts per configuration in randomized blocks of {k} started "
                f"together (each with its own code layout), the rounds alternating between them{alternate}; "
                f"{per_start}{stopping}")
    return (f"{starts} server starts per configuration in randomized blocks{alternate}; "
            f"{per_start}{stopping}")


def settings_table(run_dir: Path) -> pd.DataFrame:
    """The settings each condition's servers reported after start (not what was asked for)."""
    rows = {}
    for record in read_jsonl(run_dir / "servers.jsonl"):
        if record["condition"] in rows:
            continue
        variables = read_variables(run_dir, record["variables"])
        rows[record["condition"]] = {"condition": level_words(record["condition"], server_family(record["version"])),
                                     "version": record["version"],
                                     **{k: variables.get(k) for k in SETTINGS_SHOWN},
                                     "log_bin": "ON" if record["log_bin"] else "OFF"}
    table = pd.DataFrame(list(rows.values()))
    return table.sort_values("condition", ignore_index=True) if len(table) else table


def settings_html(run_dir: Path) -> str:
    """Only settings that differ between conditions are shown; the shared ones in one line."""
    table = settings_table(run_dir)
    if table.empty:
        return ""
    varying = [c for c in table.columns if c == "condition" or table[c].astype(str).nunique() > 1]
    same = [f"{c} = {table[c].iloc[0]}" for c in table.columns if c not in varying]
    note = ""
    if "collation_server" not in varying and any("collation" in str(c) for c in table["condition"]):
        note = ("<p>The server-wide <code>collation_server</code> is the same for every condition on purpose: "
                "the collation under test is a property of the scanned table's column (CREATE TABLE ... "
                "COLLATE), set by the workload and checked by the scan's row count, not a server setting.</p>")
    body = table_html(table[varying]) if len(varying) > 1 else ""
    return (body + f"<p class='small'>The same in every condition: {html.escape('; '.join(same))}.</p>" + note)


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
                **({"workload": workload} if several_workloads else {}), "cost": label,
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
    where the bootstrap's values went below zero the cell is clipped and marked, never shown as
    a negative count."""
    clipped = any(not _missing(v) and v < 0 for v in (mean, lo, hi))
    mean, lo, hi = (v if _missing(v) else max(v, 0.0) for v in (mean, lo, hi))
    cell = f"{number(mean * factor)} [{number(lo * factor)}, {number(hi * factor)}]"
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


def claim_family(claim: Claim) -> str:
    """The server family the claim was made about: the source's server. (A comparison's `family`
    is its multiplicity family, e.g. charset_cost, not a server.)"""
    return server_family(claim.source_target)


CSS = """
body { font-family: system-ui, "Noto Sans CJK SC", sans-serif; margin: 1.5em auto; max-width: 72em; color: #222;
  padding: 0 1em; }
table.people { border-collapse: collapse; max-width: 100%; margin: .5em 0 1em; font-size: 0.9em; }
table.people td, table.people th { border-bottom: 1px solid #ddd; padding: .3em .6em; text-align: left; }
table.people td.long { overflow-wrap: anywhere; }
table.people th { overflow-wrap: normal; vertical-align: bottom; }
table.people td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.people caption { text-align: left; font-weight: 600; }
.cards .card-row { display: flex; flex-wrap: wrap; gap: .8em; margin: .6em 0; }
.card { flex: 1 1 24em; max-width: 100%; border: 1px solid #ccc; border-left: 6px solid #8c8c8c;
  border-radius: 4px; padding: .5em .8em; box-sizing: border-box; }
.card p { margin: .3em 0; }
.card .verdict { font-weight: 700; font-size: 1.05em; margin-right: .6em; }
.card .what { color: #555; }
.card.supported { border-left-color: #1b7837; } .card.supported .verdict { color: #1b7837; }
.card.contradicted { border-left-color: #b2182b; } .card.contradicted .verdict { color: #b2182b; }
.card.inconclusive .verdict { color: #555; }
.card .edge-mark { display: inline-block; font-size: .8em; font-weight: 600; background: #fff3cd;
  border: 1px solid #b08000; color: #7a5a00; border-radius: 3px; padding: 0 .4em; margin-right: .6em; }
.card p.edge { color: #7a5a00; }
.card.not-tested { border-left-color: #d0d0d0; color: #777; }
.note { background: #fff7e0; padding: .4em .8em; border-radius: 4px; }
.small { font-size: .85em; color: #555; }
img, svg { max-width: 100%; height: auto; }
"""
