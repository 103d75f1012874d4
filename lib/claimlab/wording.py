"""How a report says a value: numbers, percents and ratios for people, factor levels and
comparisons by what they are (never their keys), servers by the names people call them, and the
people-formatted HTML table every report section uses. Pure functions; the cards, the method text
and the cost tables are worded through them.
"""

from __future__ import annotations

import html
import math
import re
from typing import Callable

import numpy as np
import pandas as pd

from .claims import Claim

METRIC_WORDS = {"qps": "queries per second", "tps": "transactions per second", "elapsed_s": "elapsed time",
                "seconds": "elapsed time", "rows_per_s": "rows per second"}
FAMILY_NAMES = {"mariadb": "MariaDB", "mysql": "MySQL"}


# -- numbers for people -------------------------------------------------------------------------

def missing(value) -> bool:
    """None or NaN: shown as a dash by every formatter below."""
    return value is None or isinstance(value, float) and math.isnan(value)


def number(value, digits: int = 3) -> str:
    """`digits` significant digits in plain decimal notation (never 1.2e-05), thousands grouped;
    a dash for a missing value, yes/no for a truth value."""
    if missing(value):
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


def interval(estimate, low, high, show=number) -> str:
    """An estimate with its interval, each shown by `show`: "1.28 [1.26, 1.30]"."""
    return f"{show(estimate)} [{show(low)}, {show(high)}]"


def published(value) -> str:
    """A published ratio as the claims file states it (1.025, 0.7509), never rounded to 1.02."""
    return "—" if missing(value) else f"{value:g}"


def percent(value, digits: int = 2) -> str:
    return "—" if missing(value) else f"{number(100 * value, digits)}%"


def whole_percent(value) -> str:
    """A share as a whole percent: 0.07 -> "7%" (percent() keeps two digits: "7.0%")."""
    return "—" if missing(value) else f"{value:.0%}"


def share_interval(share, low, high) -> str:
    """A share of a gap with its interval in whole percents, "41% [10%, 80%]": the one rounding
    of shares, so that a figure, its table and the sentences under them give the same numbers."""
    return interval(share, low, high, whole_percent)


def ratio_change(ratio: float) -> str:
    """0.75 -> "25% lower", 1.3 -> "30% higher"."""
    if ratio is None or not math.isfinite(ratio):
        return "—"
    change = ratio - 1
    return "no change" if abs(change) < 0.0005 else f"{percent(abs(change))} {'higher' if change > 0 else 'lower'}"


def share_points(value) -> str:
    """A share already in percent, one decimal (12.9, 0.9, a dash for none): the columns of a
    top-functions table line up and read alike."""
    if missing(value):
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
    if missing(value):
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
    "binlog": {"on": "binary log on", "off": "binary log off",
               "log_bin_OFF": "log_bin=OFF in the option file", "log_bin_0": "log_bin=0 in the option file"},
    "server": {"defaults": "the server's own defaults", "v57_values": "5.7 values",
               "v80_binlog": "8.0 binlog defaults", "mysql57": "MySQL 5.7.23", "mysql80": "MySQL 8.0.40",
               "mysql80_skip_log_bin": "MySQL 8.0.40, binary log off", "mysql8027": "MySQL 8.0.27",
               "mysql80fork": "MySQL 8.0.40, patched fork"},   # the versions params/insert_57_vs_80.yaml pins
}
WORKLOAD_WORDS = {"insert_loop": "insert loop", "bulk_insert": "bulk insert", "join": "join",
                  "varchar_scan": "varchar scan", "oltp": "sysbench oltp_read_write",
                  "oltp_ps": "sysbench oltp_read_write, prepared statements"}
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
                f"{v} ({FAMILY_NAMES[k]})" for k, v in sorted(said.items(), key=lambda kv: kv[0] != "mysql"))
        parts.append(said)
    return ", ".join(parts)


def comparison_words(row, family: str | None = None, workload: bool | set = False) -> str:
    """A comparison by what it compares: "utf8mb4_0900_ai_ci vs utf8mb3_general_ci", "8.0 binlog
    defaults vs 5.7 values (insert loop)" with `workload`; never its key (`uca_ai_vs_utf8mb3`)."""
    if family is None and isinstance(row.get("server_version"), str):
        family = server_family(row["server_version"])
    treatment, baseline = level_words(row['treatment'], family), level_words(row['baseline'], family)
    if "+" in str(row.get("target")) and isinstance(row.get("server_version"), str):
        # two servers, one of them the target's own: "the server's own defaults" would not say which
        # ("MySQL 9.7.4 vs MySQL 5.7.23", not "the server's own defaults vs MySQL 5.7.23")
        names = server_name(row["server_version"], row.get("target")).split(", ")
        sides = [treatment, baseline]
        for i in (0, 1):
            rest = [n for n in names if n != sides[1 - i]]
            if sides[i] == LEVEL_WORDS["server"]["defaults"] and len(rest) == 1:
                sides[i] = rest[0]
        treatment, baseline = sides
    text = f"{treatment} vs {baseline}"
    name = row.get("workload")
    if isinstance(workload, set):   # several_workloads: the claims that must name theirs
        workload = row.get("claim") in workload
    return text + (f" ({workload_words(name)})" if workload and name else "")


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
    return f"{level_words(condition)} ({workload_words(workload)}, {metric_words(metric)})"


def metric_words(metric: str) -> str:
    return METRIC_WORDS.get(metric, str(metric).replace("_", " "))


def workload_words(workload: str) -> str:
    """A workload as a reader names it ("insert loop"), never its key (`insert_loop`)."""
    return WORKLOAD_WORDS.get(workload, str(workload).replace("_", " "))


def several_workloads(table: pd.DataFrame) -> set[str]:
    """The claims whose comparisons in `table` span workloads, so that each must say its own."""
    if "workload" not in table.columns:
        return set()
    counts = table.groupby("claim")["workload"].nunique()
    return set(counts[counts > 1].index)


def level(confidence) -> str:
    """An interval's level as exactly as it was computed: 0.975 -> "97.5%" (never rounded to 98%)."""
    return "—" if missing(confidence) else f"{100 * float(confidence):.4g}%"


# -- servers --------------------------------------------------------------------------------------

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


def claim_family(claim: Claim) -> str:
    """The server family the claim was made about: the source's server. (A comparison's `family`
    is its multiplicity family, e.g. charset_cost, not a server.)"""
    return server_family(claim.source_target)

