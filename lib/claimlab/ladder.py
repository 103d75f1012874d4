"""The version ladder: each claim's main comparison on each server, in release order.

The claims were made on MySQL 5.7 and 8.0 and are re-tested on their descendants, so the
question a reader brings is how an effect moves along the release line: on 5.7.23, 8.0.27,
8.0.40, a patched 8.0.40 and 9.7.4, the way Mark Callaghan's Small Datum blog charts relative
throughput across versions. MariaDB forked before 5.7 and has its own releases: its rungs are
kept apart, never between two MySQL releases.

A rung is a row of the verdict table (`stats.analyze`), not a new estimate: its ratio and
interval are the claim's own. Which row:
- the claim's main comparison is its first declared comparison with a published ratio that was
  measured in these runs (else its first measured one), so a claim whose version comparison did
  not run (no 5.7 server here) still shows the question it was measured on;
- comparisons that ask the same question of another server (the same workload, metric, baseline
  and published ratio, e.g. 9.7.4's defaults against 5.7.23 beside 8.0.40's) add their servers'
  rungs, never a second rung on a server the main comparison has;
- a comparison between two servers (C3's 8.0.40 against 5.7.23) is a rung of its treatment's
  server, relative to its baseline's, which is drawn as the base at 1.

A server is named by the version it reported and, where the version does not tell builds apart
(a patched fork reports the release's own VERSION()), by its archive's name: whatever stands
between the version and `linux` in `mysql-8.0.40-enhanced-linux-glibc2.36-x86_64.tar.xz` is the
build, ordered after the release it patches.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

LADDER_COLUMNS = ("claim", "comparison", "role", "family", "server", "release", "build", "origin", "target",
                  "relative_to", "estimate", "ci_low", "ci_high", "confidence", "published_ratio",
                  "verdict", "verdict_label", "workload", "metric", "baseline", "treatment")
FAMILY_NAMES = {"mysql": "MySQL", "mariadb": "MariaDB"}
# Where a run recorded no origin for its program (runs made before origins were recorded), the
# target's kind says it: these kinds install the OS's package.
KIND_ORIGINS = {"mysql-debian": "Debian package", "mariadb": "OS package"}
_RELEASE = re.compile(r"\s*(\d+(?:\.\d+)+)")
_BUILD = re.compile(r"^(?:mysql|mariadb)-\d+(?:\.\d+)+-(.+?)-linux", re.IGNORECASE)


@dataclass(frozen=True)
class Server:
    """One server program on the ladder: its family, release and build ("" for the release's
    own), and where it came from (recorded, not part of its identity)."""

    family: str
    release: tuple[int, ...]
    build: str = ""
    version: str = ""
    origin: str = ""

    @property
    def order(self) -> tuple:
        """Release order: MySQL's line first, MariaDB's after it; a build after the release it
        patches."""
        return (self.family != "mysql", self.release, self.build != "", self.build)

    @property
    def label(self) -> str:
        release = self.version or ".".join(map(str, self.release))
        build = f" ({self.build} build)" if self.build else ""
        return f"{FAMILY_NAMES.get(self.family, self.family)} {release}{build}"


def archive_build(archive: str | None) -> str:
    """The build an archive's name names beyond its release: "enhanced" for
    mysql-8.0.40-enhanced-linux-glibc2.36-x86_64.tar.xz, "" for the release's own tarball."""
    m = _BUILD.match(Path(str(archive or "")).name)
    return m.group(1) if m else ""


def server_of(version: str, archive: str | None = None, origin: str | None = None) -> Server | None:
    """The server of a version string as a server reports it ("8.0.40", "9.7.4-2",
    "10.11.19-MariaDB-0+deb12u1-log"); several, comma-separated, are one server when they name
    one release (MariaDB adds "-log" with its binlog on). None when no release is readable; two
    releases under one target (runs of two versions pooled) read as the newer, the version
    string naming both."""
    versions = [v for v in str(version or "").split(",") if v.strip()]
    releases = []
    for v in versions:
        m = _RELEASE.match(v)
        if m and m.group(1) not in releases:
            releases.append(m.group(1))
    if not releases:
        return None
    family = "mariadb" if any("mariadb" in v.lower() for v in versions) else "mysql"
    newest = max(releases, key=lambda r: tuple(int(x) for x in r.split(".")))
    return Server(family, tuple(int(x) for x in newest.split(".")), archive_build(archive),
                  ", ".join(sorted(releases, key=lambda r: tuple(int(x) for x in r.split(".")))), origin or "")


def main_comparison(table: pd.DataFrame) -> str | None:
    """A claim's comparison for the ladder (its table in declaration order): the first with a
    published ratio that has an estimate here, else the first that has one."""
    measured = table[table["estimate"].notna()]
    published = measured[measured["published_ratio"].notna()]
    chosen = published if len(published) else measured
    return None if chosen.empty else str(chosen["comparison"].iloc[0])


def _same_question(a: Mapping, b: Mapping) -> bool:
    def same(x, y):
        return (x != x and y != y) or x == y   # NaN equals NaN here: "no published ratio" on both
    return all(same(a.get(k), b.get(k)) for k in ("workload", "metric", "baseline", "kind", "published_ratio"))


def ladder(table: pd.DataFrame, servers: pd.DataFrame,
           conditions: Mapping[tuple[str, str], str | set[str]] | None = None) -> pd.DataFrame:
    """The ladder's rows, claim by claim in the table's order, each claim's servers in release
    order (MySQL's, then MariaDB's).

    `table`: verdict tables of one or more claims (stats.analyze's columns). `servers`: one row
    per (claim, target) with the target's `version` as its servers reported it, and its `archive`
    and `origin` where recorded (`stored_servers`). `conditions`: (claim, condition id) -> the
    target that condition ran on, for comparisons between two servers (their row's target is
    "a+b"). role is "measured" for a rung, "base" for the server a between-server ratio is
    relative to (drawn at 1, no interval, no published ratio: the published one is the
    treatment's over it)."""
    conditions = conditions or {}
    known = {(r["claim"], r["target"]): r for r in servers.to_dict("records")}

    def server(claim: str, target: str) -> Server | None:
        info = known.get((claim, target))
        return None if info is None else server_of(info.get("version"), info.get("archive"), info.get("origin"))

    out = []
    for claim, rows in table.groupby("claim", sort=False):
        main = main_comparison(rows)
        if main is None:
            continue
        first = rows[rows["comparison"] == main].iloc[0].to_dict()
        chosen = rows[[_same_question(first, r) or r["comparison"] == main for r in rows.to_dict("records")]]
        chosen = chosen[chosen["estimate"].notna()]
        rungs: dict[Server, dict] = {}
        bases: dict[Server, str] = {}
        # the main comparison's rows first: a sibling never takes a server the main one has
        for r in sorted(chosen.to_dict("records"), key=lambda r: r["comparison"] != main):
            target = str(r["target"])
            relative_to = base = None
            if "+" in target:   # between two servers: a rung of the treatment's, relative to the baseline's
                treated, based = (_side(conditions.get((claim, r[side])), target) for side in ("treatment", "baseline"))
                at, base = server(claim, treated) if treated else None, server(claim, based) if based else None
                if at is None or base is None:
                    continue
                relative_to, target = base.label, treated
            else:
                at = server(claim, target) or server_of(r.get("server_version"))
                if at is None:
                    continue
            if at in rungs:
                continue
            rungs[at] = _row(r, at, "measured", target, relative_to or "")
            if base is not None:
                bases.setdefault(base, based)
        for base, target in bases.items():
            if base not in rungs:
                rungs[base] = _row(first, base, "base", target, "", estimate=1.0)
        out += [rungs[s] for s in sorted(rungs, key=lambda s: s.order)]
    return pd.DataFrame(out, columns=list(LADDER_COLUMNS))


def _side(targets, pair: str) -> str | None:
    """Which of a between-server row's targets ("mysql+mysql57") a condition ran on: a condition
    such as `server=defaults` runs on each run's own target (MariaDB's in one run, MySQL's in
    the other), so its targets are many and the row's pair decides."""
    if targets is None:
        return None
    found = [t for t in ([targets] if isinstance(targets, str) else targets) if t in pair.split("+")]
    return found[0] if len(found) == 1 else None


def _row(r: Mapping, at: Server, role: str, target: str, relative_to: str, estimate: float | None = None) -> dict:
    base = role == "base"
    return {"claim": r["claim"], "comparison": r["comparison"], "role": role, "family": at.family,
            "server": at.label, "release": ".".join(map(str, at.release)), "build": at.build,
            "origin": at.origin, "target": target, "relative_to": relative_to,
            "estimate": estimate if base else r["estimate"],
            "ci_low": math.nan if base else r["ci_low"], "ci_high": math.nan if base else r["ci_high"],
            "confidence": math.nan if base else r.get("confidence"),
            "published_ratio": math.nan if base else r.get("published_ratio"),   # the treatment's, over it
            "verdict": "" if base else r.get("verdict"), "verdict_label": "" if base else r.get("verdict_label"),
            "workload": r.get("workload"), "metric": r.get("metric"), "baseline": r.get("baseline"),
            "treatment": r.get("treatment")}


# -- from stored runs ------------------------------------------------------------------------

def stored_servers(claim: str, paths: Iterable[Path], results: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """(servers, conditions) of one claim's stored runs, for `ladder`: each target's versions as
    its servers reported them (`results`' server_version), its archive and origin as the run
    recorded them (the manifest's server programs, else each start's record, else the target's
    spec and kind), and each condition's target. A run that recorded a program outranks one that
    only declares its target: every run of a claim declares every target of its params file, and
    MariaDB's run, read first, once gave C3's 5.7.23 and 8.0.40 no origin."""
    from .store import read_jsonl, read_manifest
    seen: dict[str, dict[str, tuple[list, list]]] = {}   # target -> field -> (recorded, declared)
    conditions = {}
    for path in paths:
        manifest = read_manifest(path)
        specs = manifest.get("targets") or {}
        recorded = (manifest.get("provenance") or {}).get("servers") or {}
        starts = {}
        for start in read_jsonl(Path(path) / "servers.jsonl"):
            starts.setdefault(start.get("target"), start)
        for c in manifest.get("conditions") or []:
            conditions.setdefault((claim, c["id"]), set()).add(c["target"])
        for target in set(specs) | set(recorded):
            spec, rec, start = specs.get(target) or {}, recorded.get(target) or {}, starts.get(target) or {}
            fields = seen.setdefault(target, {"archive": ([], []), "origin": ([], [])})
            fields["archive"][0].append(rec.get("archive"))
            fields["archive"][1].append(spec.get("archive"))
            fields["origin"][0].extend((rec.get("origin"), start.get("origin")))
            fields["origin"][1].append(KIND_ORIGINS.get(spec.get("kind")))
    programs = {target: {name: next((v for v in (*recorded, *declared) if v), "")
                         for name, (recorded, declared) in fields.items()} for target, fields in seen.items()}
    rows = []
    for target, part in results.groupby("target"):
        versions = sorted(part["server_version"].dropna().astype(str).unique())
        rows.append({"claim": claim, "target": target, "version": ", ".join(versions), **programs.get(target, {})})
    return pd.DataFrame(rows, columns=["claim", "target", "version", "archive", "origin"]), conditions


def of_analyses(analyses) -> pd.DataFrame:
    """The ladder of `report.analyze_runs`' analyses: what the summary notebook shows and draws."""
    tables, servers, conditions = [], [], {}
    for a in analyses:
        found, conds = stored_servers(a.claim.id, a.paths or (a.path,), a.results)
        tables.append(a.table)
        servers.append(found)
        conditions |= conds
    if not tables:
        return pd.DataFrame(columns=list(LADDER_COLUMNS))
    return ladder(pd.concat(tables, ignore_index=True), pd.concat(servers, ignore_index=True), conditions)


def table_html(rungs: pd.DataFrame) -> str:
    """The ladder as a table for people: per claim, each server's ratio [interval] in release
    order, MySQL's then MariaDB's, beside the published ratio and the verdict."""
    from . import wording
    if rungs.empty:
        return "<p>No claim's comparison was measured on any server in these runs.</p>"
    rows, records = [], rungs.to_dict("records")
    for r in records:
        base = r["role"] == "base"
        # a base has no ratio of its own: it is what its claim's between-server ratios divide by
        over = [m["server"] for m in records if m["claim"] == r["claim"] and m["relative_to"] == r["server"]]
        rows.append({
            "claim": r["claim"],
            "comparison": wording.comparison_words(r, family=r["family"]),
            "server": r["server"] + (" (apart)" if r["family"] != "mysql" else ""),
            "origin": r["origin"] or "—",
            "ratio [interval]": f"none of its own: 1, the base of the ratio{'s' * (len(over) > 1)} of "
                                f"{' and '.join(over)}" if base else
            wording.interval(r["estimate"], r["ci_low"], r["ci_high"]),
            "level": "—" if base else wording.level(r["confidence"]),
            "published": wording.published(r["published_ratio"]),
            "verdict": "—" if base else str(r["verdict_label"] or r["verdict"]),
        })
    return wording.table_html(pd.DataFrame(rows))
