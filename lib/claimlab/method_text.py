"""A stored run's claim, method and settings in words: what the claim says and what the source
published, how the run's conditions met the machine (its manifest's design), and the settings its
servers reported after start.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from .claims import Claim
from .provenance import cpu_label
from .store import read_jsonl, read_manifest, read_variables
from .wording import level_words, number, server_family, server_name, table_html

SETTINGS_SHOWN = ("log_bin", "sync_binlog", "innodb_flush_log_at_trx_commit", "binlog_format",
                  "character_set_server", "collation_server", "innodb_buffer_pool_size", "innodb_doublewrite",
                  "performance_schema")
# Factors whose levels the workload sets, not the server: the server-wide settings they touch stay
# the same in every condition, and listed among the common settings they read as if the factor
# under test held one value throughout (C1's character_set_server = latin1 beside a utf8mb4 level).
SET_BY_WORKLOAD = {
    "charset": ("character set", "set per condition on the tables (their schema's default) and on the "
                "connection (SET NAMES)"),
    "collation": ("collation", "a property of the scanned table's column (CREATE TABLE ... COLLATE), set by the "
                  "workload and checked by the scan's row count"),
}
SERVER_CHARSET = ("character_set_server", "collation_server")


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
        f"its results' sha256 `{str(m.get('checksums', {}).get('results.csv', 'run incomplete'))[:16]}…`."
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
    """Only settings that differ between conditions are shown; the shared ones in one line, less
    the server's charset where the conditions set their own (SET_BY_WORKLOAD), which is said
    apart, per condition."""
    table = settings_table(run_dir)
    if table.empty:
        return ""
    m = read_manifest(run_dir)
    family = server_family(run_server(run_dir))
    ran = [c for c in m["conditions"] if c["id"] not in (m.get("skipped_targets") or {})]
    factors = [f for f in SET_BY_WORKLOAD if any(f in c["levels"] for c in ran)]
    varying = [c for c in table.columns if c == "condition" or table[c].astype(str).nunique() > 1]
    apart = [c for c in SERVER_CHARSET if factors and c in table.columns and c not in varying]
    same = [f"{c} = {table[c].iloc[0]}" for c in table.columns if c not in varying and c not in apart]
    notes = []
    for factor in factors:
        what, how = SET_BY_WORKLOAD[factor]
        levels = "; ".join(level_words(c["id"], family) for c in ran)
        notes.append(f"The {what} under test differs between conditions ({levels}): it is {how}, not by the server.")
    if apart:
        notes.append(f"The server's own default ({'; '.join(f'{c} = {table[c].iloc[0]}' for c in apart)}) is the "
                     "same in every condition, and no condition uses it.")
    body = table_html(table[varying]) if len(varying) > 1 else ""
    note = f"<p>{html.escape(' '.join(notes))}</p>" if notes else ""
    return (body + f"<p class='small'>The same in every condition: {html.escape('; '.join(same))}.</p>" + note)

