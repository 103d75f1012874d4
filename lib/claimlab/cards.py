"""Verdict cards, notes and verdict tables: what a person reads of a verdict table (contract 5
columns: claim, comparison, kind, target, server_version, baseline, treatment, metric, estimate,
ci_low, ci_high, confidence, p_value, published_ratio, verdict, verdict_label, edge_label,
rerun_chance, flagged_share, fast_share, n_runs, n_blocks, verdict_note; for runs analysed together
also sd_unit and runs_to_settle), as HTML for the reports and as plain lines for the terminal.
The notebooks and the index call them, compute nothing.
"""

from __future__ import annotations

import html

import pandas as pd

from .stats.observations import SLOW_HOUR
from .stats.slow_side import SIDE_ALPHA
from .stats.verdicts import EDGE_FACTOR, EDGE_MARK
from .wording import (
    FAMILY_NAMES,
    comparison_words,
    interval,
    level,
    level_words,
    metric_words,
    missing,
    percent,
    published,
    ratio_change,
    server_family,
    server_name,
    several_workloads,
    table_html,
    whole_percent,
)

CARD_COLUMNS = ("claim", "comparison", "kind", "target", "server_version", "baseline", "treatment", "metric",
                "estimate", "ci_low", "ci_high", "confidence", "p_value", "published_ratio", "verdict",
                "verdict_label", "edge_label", "rerun_chance", "flagged_share", "fast_share", "n_runs",
                "n_blocks", "verdict_note")
_VERDICT_CLASS = {"supported": "supported", "contradicted": "contradicted", "inconclusive": "inconclusive",
                  "not_tested": "not-tested"}


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
                              f"an analogue ({FAMILY_NAMES[family]}), not the {FAMILY_NAMES[claim_family]} "
                              "server the source measured")
             if server else "not measured: no server here ran both sides")
    claimed = ("no difference (ratio within the equivalence margin)" if row["kind"] == "null" else
               f"ratio {published(row['published_ratio'])} ({ratio_change(row['published_ratio'])})"
               if pd.notna(row["published_ratio"]) else "a direction only, no published figure")
    if verdict == "not_tested":
        measured = "not measured"
    else:
        measured = (f"ratio {interval(row['estimate'], row['ci_low'], row['ci_high'])} "
                    f"({ratio_change(row['estimate'])}; {level(row['confidence'])} interval)")
    flagged = row.get("flagged_share")
    flagged_text = ("speed witness: not recorded in this run" if flagged is None or pd.isna(flagged) else
                    f"speed witness: {percent(flagged)} of measurements taken while the machine ran slow"
                    + (" — read with care" if flagged >= 0.25 else ""))
    fast = row.get("fast_share")
    if not missing(fast):
        flagged_text += (f"; fast state: {fast:.0%} of the values"
                         + (" — a slow hour, see the note" if fast < SLOW_HOUR else ""))
    if not missing(row.get("side_state_p")) and row["side_state_p"] < SIDE_ALPHA:
        bound = row.get("side_bias_bound")     # NaN in the table is None in a summary's JSON
        flagged_text += (f"; a slow state on one side (p = {row['side_state_p']:.2g}): the estimate may be "
                         + ("biased" if missing(bound) else f"biased by up to {bound:.1%}") + ", see the note")
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
    if missing(value):
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
    """A comparison's key made readable where its rows carry no levels to name (the per-host view
    of a table without them): "uca_ai_vs_utf8mb3" -> "uca_ai vs utf8mb3"."""
    return str(comparison).replace("_vs_", " vs ")


def spoken_comparisons(rows) -> list[str]:
    """Each row's comparison by what it compares, as the reports name it (`comparison_words`, the
    workload said where a claim spans several); a row without its levels keeps its key."""
    workload = several_workloads(pd.DataFrame(list(rows)))
    return [comparison_label(r["comparison"]) if missing(r.get("treatment")) or missing(r.get("baseline"))
            else comparison_words(r, workload=workload) for r in rows]


def row_server(row) -> str:
    """The server a verdict row was measured on, as a reader names it; its target's name where
    no server ran, a dash where neither is known."""
    version = row.get("server_version")
    return server_name(None if missing(version) else version, row.get("target")) or "—"


def verdict_lines(rows, claim: bool = True) -> list[str]:
    """The verdict table as plain text, one line per comparison and server, columns aligned: what a
    terminal shows at the end of `claimlab report` (`claim`: a column for it) and of `claimlab
    analyze`. Rows of several interval levels (a family's are wider) each say their own; two
    targets of one claim on one server version (runs of different params files) are told apart by
    name."""
    rows = list(rows)
    levels = {level(r["confidence"]) for r in rows if not missing(r.get("confidence"))}
    servers = [row_server(r) for r in rows]
    targets = {}
    for name, r in zip(servers, rows):
        targets.setdefault((r["claim"], name), set()).add(r.get("target"))
    header = (("CLAIM",) if claim else ()) + ("COMPARISON", "SERVER", "MEASURED [INTERVAL]") \
        + (("LEVEL",) if len(levels) > 1 else ()) + ("PUBLISHED", "SAME ON RERUN", "VERDICT")
    lines = []
    for r, compared, server in zip(rows, spoken_comparisons(rows), servers):
        untested = r.get("verdict") == "not_tested" or missing(r.get("estimate"))
        measured = "not measured" if untested else interval(r["estimate"], r.get("ci_low"), r.get("ci_high"))
        if len(targets[(r["claim"], server)]) > 1:
            server += f" (target {r.get('target')})"
        lines.append(((str(r["claim"]),) if claim else ()) + (compared, server, measured)
                     + ((("—" if untested else level(r.get("confidence"))),) if len(levels) > 1 else ())
                     + (published(r.get("published_ratio")), "—" if untested else rerun_chance(r.get("rerun_chance")),
                        shown_label(r)))
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
    measured = ("not measured" if row["verdict"] == "not_tested" or missing(row.get("estimate")) else
                f"ratio {interval(row['estimate'], row['ci_low'], row['ci_high'])}, "
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


def rerun_target(row) -> str:
    """The `--target` that makes another run of a row's comparison. Where the comparison's levels
    start their own servers its target reads "mysql57+mysql80", which no params file declares:
    the run's own target (`run_target`, from its manifest) is the one to give."""
    target = str(row.get("target"))
    shown = row.get("run_target")
    if "+" in target and isinstance(shown, str) and shown and " " not in shown:
        return shown
    return target


def slow_hour_lines(rows) -> list[str]:
    """One line per claim and server measured in a slow hour (its comparisons' least fast-state
    share under SLOW_HOUR), saying what to do: what `claimlab report` and the summary print."""
    shares: dict[tuple[str, str, str, str], list[float]] = {}
    for r in rows:
        if not missing(r.get("fast_share")):
            where = server_name(r.get("server_version"), r.get("target")) or str(r.get("target"))
            key = (str(r["claim"]), str(r.get("experiment")), rerun_target(r), where)
            shares.setdefault(key, []).append(float(r["fast_share"]))
    return [f"{claim} on {where}: only {min(kept):.0%} of a comparison's values were in the fast state "
            f"(under {SLOW_HOUR:.0%}): measured in a slow hour, so its intervals are wider and its estimates "
            f"may sit at a level of their own. Rerun it at another time (claimlab run {experiment} --target "
            f"{target}) and compare the runs (claimlab analyze RUN RUN gives each run's estimate and whether they "
            "differ)."
            for (claim, experiment, target, where), kept in shares.items() if min(kept) < SLOW_HOUR]


def bounded_ratio(value) -> str:
    """A ratio for a table cell, ends beyond 1/1000 and 1000 said as such: two blocks at a family's
    98.75% gave an interval of 2.39e-32 to 35,199,000, written out in full 1,565 px wide."""
    from .wording import number
    if not missing(value) and 0 < value < 1e-3:
        return "< 0.001"
    if not missing(value) and value > 1e3:
        return "> 1,000"
    return number(value)


def edge_lines(rows) -> list[str]:
    """One line per comparison left near a decision edge, saying how to settle it: what
    `claimlab report` and `claimlab analyze` print. A single run gets the rule of thumb: several
    runs analysed together have runs as their units (df = runs - 1), so two read wider than one;
    four or more narrow it (MariaDB's utf8mb4_general/utf8mb3 at 1.06 against 1.05 on one host:
    decided by 3 of 21 pairs of its runs, 27 of 35 fours, 21 of 21 fives), and where the runs
    themselves differ by the hour, more (the same comparison at 1.04 on another host: 10 of 40
    random fours, 40 of 40 eights). Runs already together get their own count
    (`runs_to_settle`), or none when their spread says they already read alike."""
    lines, rows = [], list(rows)
    for r, compared in zip(rows, spoken_comparisons(rows)):
        edge = edge_of(r)
        if not edge or r.get("verdict") == "not_tested":
            continue
        where = server_name(r.get("server_version"), r.get("target")) or str(r.get("target"))
        runs = 1 if missing(r.get("n_runs")) else int(r["n_runs"])
        head = (f"{r['claim']} {compared} on {where} reads “{r['verdict_label']}” "
                + ("" if runs == 1 else f"over {runs} runs analysed together, ")
                + f"near a decision edge (an interval {EDGE_FACTOR:g}x as wide or as narrow would read “{edge}”)")
        rerun = f"claimlab run {r.get('experiment')} --target {rerun_target(r)}"
        if runs == 1:
            lines.append(f"{head}, so one run does not settle it. Rerun it at other times ({rerun}) and analyse "
                         "four or more runs together, eight or more if the runs differ from each other (claimlab "
                         "analyze RUN RUN ... says whether they do; two runs read wider than one).")
            continue
        settle = r.get("runs_to_settle")
        if missing(settle) or settle <= runs or missing(r.get("sd_unit")):
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
            "flagged_share": percent, "fast_share": whole_percent, "published_ratio": published,
            "estimate": bounded_ratio, "ci_low": bounded_ratio, "ci_high": bounded_ratio},
            labels={"server_version": "server", "estimate": "measured ratio", "ci_low": "low", "ci_high": "high",
                    "published_ratio": "published", "verdict_label": "verdict", "flagged_share": "flagged",
                    "fast_share": "fast state", "rerun_chance": "same on a rerun"}))
    return "".join(parts)

