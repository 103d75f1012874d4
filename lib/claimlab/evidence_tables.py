"""The functions the sources name, in a run's CPU evidence: for the claim report, per condition,
their share of perf samples and what callgrind counted in them per query, row or call, beside the
figures the sources published (read from data/claims.yaml, by the `what` of each figure).

C1's source profiled MySQL 5.7.28 and found the client charset's `my_ismbchar_utf8mb4` and
`my_charpos_mb` on its flame graph, and blamed the lexer (its `get_text` asks ismbchar about every
byte of a string literal). Counted here, most of both is elsewhere on 5.7: DISTINCT's MEMORY
temporary table hashes sysbench's CHAR(120) `c` through my_charpos_mb, which calls ismbchar per
byte (claimlab.instructions, RANGE_QUERY); the table shows the lexer's part apart. Bug #116492
(C2) counted the comparison function's instructions per call on 8.0.40. Which
function a build names depends on its symbols: the mirror's MySQL builds keep their symbol
tables, the Debian and MariaDB packages are stripped (callgrind shows their static functions as
addresses, so those rows read 0 there).
"""

from __future__ import annotations

import math
import re

import pandas as pd

from . import wording
from .claims import Claim, PublishedFigure
from .evidence import EVIDENCE_PATTERNS

# The functions C1's source names, as a reader names them, with the pattern that finds them in a
# perf frame or a callgrind function name: debug symbols (the mirror's builds: C names, or C++
# signatures in full) and claimlab.symbols' names on the stripped packages ("ismbchar [charset of
# my_charset_utf8mb4_0900_ai_ci]"). The lexer is entered through MYSQLlex (5.7, 8.0),
# my_sql_parser_lex (9.x) or MariaDB's Lex_input_stream::lex_one_token; 8.0 still lexes a literal
# in get_text.
NAMED_FUNCTIONS = {
    "charset_mismatch": (("my_ismbchar_utf8mb4", r"^my_ismbchar_utf8mb4\b|^ismbchar \[[^]]*utf8mb4"),
                         ("my_charpos_mb (my_charpos_mb3/mb4 in 8.0)", r"^my_charpos_mb[34]?\b|^charpos \["),
                         ("get_text (the lexer's string literals)", r"^get_text\b"),
                         ("the whole lexer", r"^(?:MYSQLlex|my_sql_parser_lex|Lex_input_stream::lex_one_token)\b")),
}
# The comparison a collation makes per row of C2's scan (my_strnncollsp_uca_900, my_strnncollsp_utf8mb3
# ...): the outermost function so named, the one with the most inclusive instructions (a template
# instance's name starts with its return type: "int my_strnncoll_uca<...>(...)").
COMPARISON = r"^(?:\w+ )?my_strnncoll"
# claims.yaml figures set beside a condition's count: condition -> `what` of the published figure.
UCA, MB3 = "collation_uca_ai", "collation_utf8mb3_general_ci"
PUBLISHED_PER_CALL = {UCA: "my_strnncoll_uca (utf8mb4_0900_ai_ci) instructions per call",
                      MB3: "my_strnncollsp_utf8mb3 instructions per call"}
SOURCE_FIGURES = {
    "charset_mismatch": ("my_ismbchar_utf8mb4 share of flame-graph samples",
                         "my_ismbchar_utf8mb4 + my_charpos_mb CPU share with everything utf8mb4 (correction)"),
    "collation_cost": (*PUBLISHED_PER_CALL.values(), "instructions per comparison, 0900_ai_ci over utf8mb3",
                       "perf samples in the comparison function, utf8mb3",
                       "perf samples in the comparison function, 0900_ai_ci"),
}


def figure(claim: Claim, what: str) -> PublishedFigure:
    """The claim's published figure named `what`; KeyError names it if absent."""
    for found in claim.published:
        if found.what == what:
            return found
    raise KeyError(f"claim {claim.id} publishes no figure {what!r}")


def per_unit(ev, condition: str) -> str:
    """What one of the condition's counted operations is: "query" (C1's range queries) or "row"."""
    table = ev.instructions
    if "per" in table.columns:
        said = table.loc[table["condition"] == condition, "per"].dropna()
        if len(said):
            return str(said.iloc[0])
    return "row"


def named_functions(ev, experiment: str) -> pd.DataFrame:
    """Per condition and function the source names: its share of perf samples (in it or below
    it), and callgrind's instructions (inclusive) and calls per query or row in the statement's
    thread; a dash where the condition was not sampled or not counted."""
    profiles = {p.condition: p for p in ev.profiles}
    conditions = list(dict.fromkeys([*profiles, *ev.functions["condition"]]))
    rows = []
    for condition in conditions:
        counted = ev.functions[ev.functions["condition"] == condition]
        operations = counted["operations"].iloc[0] if len(counted) else math.nan
        for label, pattern in NAMED_FUNCTIONS.get(experiment, ()):
            hit = counted[counted["function"].str.contains(pattern, regex=True)]
            rows.append({"condition": condition, "function": label, "per": per_unit(ev, condition),
                         "share_of_samples": profiles[condition].share_of(pattern) if condition in profiles
                         else math.nan,
                         "instructions": hit["inclusive"].sum() / operations,
                         "calls": hit["calls"].sum() / operations})
    return pd.DataFrame(rows, columns=["condition", "function", "per", "share_of_samples", "instructions", "calls"])


def comparisons(ev, claim: Claim | None = None) -> pd.DataFrame:
    """Per condition of a scan: its comparison function, calls per row, instructions per call,
    and the figure the source published for that condition (NaN where it published none)."""
    rows = []
    for condition, counted in ev.functions.groupby("condition", sort=False):
        hit = counted[counted["function"].str.contains(COMPARISON, regex=True) & (counted["calls"] > 0)]
        if not len(hit):
            continue
        top = hit.loc[hit["inclusive"].idxmax()]
        what = PUBLISHED_PER_CALL.get(condition)
        rows.append({"condition": condition, "function": short_name(top["function"]),
                     "calls_per_row": top["calls"] / top["operations"], "per_call": top["inclusive"] / top["calls"],
                     "published_per_call": figure(claim, what).value if claim and what else math.nan})
    return pd.DataFrame(rows, columns=["condition", "function", "calls_per_row", "per_call", "published_per_call"])


def _whole(value) -> str:
    """A count of instructions as a whole number (4,909, not 4,910: it is compared with 4,710)."""
    return "—" if wording.missing(value) else f"{value:,.0f}"


def short_name(function: str) -> str:
    """A function's name without its argument list (callgrind gives C++ signatures in full)."""
    return re.sub(r"\(.*$", "", function)


def functions_html(ev, experiment: str, claim: Claim, family: str | None = None) -> str:
    """The per-function table of a claim's evidence ('' for a claim with none, or no counts)."""
    if experiment in NAMED_FUNCTIONS:
        table = named_functions(ev, experiment)
        if not len(table):
            return ""
        counted = set(table.loc[table["instructions"].notna(), "per"])
        per = counted.pop() if len(counted) == 1 else "query"   # C1 counts a query (instructions.statement_for)
        table = table.drop(columns="per").assign(
            condition=[wording.level_words(c, family) for c in table["condition"]])
        return wording.table_html(table, formats={"share_of_samples": wording.percent},
                                  labels={"share_of_samples": "share of samples (in it or below)",
                                          "instructions": f"instructions per {per} (in it or below)",
                                          "calls": f"calls per {per}"},
                                  caption="Samples: the measured workload under perf; instructions and "
                                          "calls: callgrind's count of the statement's thread (C1: sysbench's "
                                          "DISTINCT range with a string literal). 0: not called, or no name in a "
                                          "stripped server binary.")
    if experiment == "collation_cost":
        table = comparisons(ev, claim)
        if not len(table):
            return ""
        table = table.assign(condition=[wording.level_words(c, family) for c in table["condition"]])
        return wording.table_html(table, formats={"per_call": _whole, "published_per_call": _whole}, labels={
            "condition": "collation", "function": "comparison function", "calls_per_row": "calls per row",
            "per_call": "instructions per call",
            "published_per_call": f"per call in the source ({claim.source_target})"})
    return ""


def comparison_sentence(ev, claim: Claim) -> str:
    """C2 for a reader: how much more a utf8mb4_0900_ai_ci comparison costs than a
    utf8mb3_general_ci one here, in instructions per call, beside bug #116492's ratio."""
    table = comparisons(ev, claim).set_index("condition")
    if not {UCA, MB3} <= set(table.index):
        return ""
    uca, mb3 = table.loc[UCA], table.loc[MB3]
    return (f"A utf8mb4_0900_ai_ci comparison ({uca['function']}) took {_whole(uca['per_call'])} "
            f"instructions per call here and a utf8mb3_general_ci one ({mb3['function']}) "
            f"{_whole(mb3['per_call'])}: {wording.number(uca['per_call'] / mb3['per_call'])} times as "
            f"many. The source counted {_whole(uca['published_per_call'])} and {_whole(mb3['published_per_call'])} "
            f"on {claim.source_target} ({wording.number(uca['published_per_call'] / mb3['published_per_call'])} "
            "times).")


def source_markdown(claim: Claim, experiment: str) -> str:
    """The source's figures the evidence tables stand beside, as a list ('' for a claim with none)."""
    lines = []
    for what in SOURCE_FIGURES.get(experiment, ()):
        found = figure(claim, what)
        value = f"{found.value:,.0f}" if float(found.value).is_integer() else f"{found.value:g}"
        unit = found.unit if found.unit.startswith("%") else f" {found.unit}"
        lines.append(f"- {what}: {value}{unit}" + (f"; {found.note}" if found.note else ""))
    if not lines:
        return ""
    return f"What the source measured ({claim.source_target}):\n\n" + "\n".join(lines)


EVIDENCE_WORDS = {"collation_cost": "share in the comparison", "binlog_default": "share in binlog and fsync",
                  "charset_mismatch": "share in charset code and lexer"}


def evidence_table(ev, experiment: str, family: str | None = None) -> str:
    """The evidence summary of a run as an HTML table, with the instruction counts of the
    statement's own thread beside those of all server threads (runs profiled before threads were
    counted apart have only the latter)."""
    summary = ev.summary(EVIDENCE_PATTERNS.get(experiment, "."))
    per = "query" if "per" in ev.instructions.columns and set(ev.instructions["per"]) == {"query"} else "row"
    return wording.table_html(
        summary.assign(condition=[wording.level_words(c, family) for c in summary["condition"]]),
        formats={"named_share": wording.percent, "share_matching": wording.percent,
                 "relative_spread": wording.percent, "own_spread": wording.percent},
        labels={"share_matching": EVIDENCE_WORDS.get(experiment, "matching"),
                "per_row": f"instructions per {per} (all threads)", "relative_spread": "spread (all threads)",
                "own_per_row": f"instructions per {per} (statement's thread)",
                "own_spread": "spread (statement's thread)"})


def top_functions(profiles, n: int = 8, family: str | None = None) -> pd.DataFrame:
    """The functions with the largest own share of samples, one column per condition (named as
    a reader names its level on the server `family`)."""
    table = pd.concat([p.top_functions(n) for p in profiles])
    table = table[table["self_share"] > 0]
    wide = table.pivot_table(index="function", columns="condition", values="self_share", fill_value=0.0)
    wide = wide.loc[wide.max(axis=1).sort_values(ascending=False).index]
    wide.columns = [wording.level_words(c, family) for c in wide.columns]
    return (wide * 100).round(1).reset_index().rename(columns=lambda c: c if c == "function" else f"{c} (% of samples)")


def flame_profiles(profiles, limit: int = 2):
    """The profiles worth a flame graph: the first and the last condition (e.g. baseline and the
    costliest treatment), so the page stays short."""
    profiles = list(profiles)
    return profiles if len(profiles) <= limit else [profiles[0], profiles[-1]]
