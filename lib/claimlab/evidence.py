"""CPU evidence kept with a run: folded perf stacks and callgrind instruction counts per condition.

Stored in the run directory under `evidence/` with an `evidence.json` naming the server binary,
its build id, when and how it was profiled, and a sha256 of every file, so `claimlab report
--from-data` shows the same flame graphs and tables without a server, and an edited file is
refused like edited measurements are. Profiling happens in a separate server start after (or
independently of) the timed run, sized by the `smoke` profile and sampled for a fixed time: it
explains where time goes, it is not itself a timing.

Evidence stored before callgrind could count a condition (C1's sysbench, before one of its queries
was countable) or before per-function counts were kept gets them later with `add_instructions`:
new files only, listed under `added` in `evidence.json` with their own checksums and date, on the
same server build (its build id) that was profiled; nothing stored is rewritten, and it is done
once.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import instructions, profiling
from .errors import DataError, TargetUnavailable
from .servers import Launcher, check_available, installation
from .store import load_manifest, sha256_file
from .symbols import SymbolTable, build_id
from .writer import write_atomic

DIRECTORY = "evidence"
INDEX = "evidence.json"
FUNCTIONS = "functions.csv"
ADDED = "added"                  # evidence.json's entry for counts added after profiling
ADDED_FILES = ("instructions.added.csv", "functions.added.csv")
SAMPLE_SECONDS = 6.0
INSTRUCTION_COLUMNS = ("per_row", "relative_spread", "own_per_row", "own_spread")
TOP_FUNCTIONS = 20               # the statement thread's costliest functions kept per condition
# Frames counted as the claim's code: debug-symbol names the sources quote (`my_strnncollsp_utf8mb3`,
# `my_strnncoll_uca<...>`, `my_ismbchar_utf8mb4`, `my_charpos_mb`, 5.7's lexer `get_text`) and
# claimlab.symbols' names on the stripped packages ("strnncoll [collation of
# my_charset_utf8mb4_0900_ai_ci]"); the lexer is MariaDB's Lex_input_stream::lex_one_token and
# MySQL's MYSQLlex / my_sql_parser_lex (lex_one_token inlined or not). Their instruction counts are
# stored per function whatever their rank.
EVIDENCE_PATTERNS = {"collation_cost": r"strnncoll|collation|uca", "binlog_default": r"binlog|BIN_LOG|fsync|fdatasync",
                     "charset_mismatch": r"ismbchar|charpos|^get_text\b|Lex_input_stream|lex_one_token|MYSQLlex|"
                                         r"my_sql_parser_lex|charset"}
FUNCTION_COLUMNS = ("condition", "function", "object", "self", "inclusive", "calls", "operations",
                    "per_operation", "per_call")


@dataclass(frozen=True)
class Evidence:
    """What `load` returns: profiles (perf), instruction counts (callgrind) and where they came from."""

    profiles: tuple[profiling.Profile, ...]
    instructions: pd.DataFrame = field(repr=False)     # condition, statement, rows, instructions, per_row, ...
    meta: dict = field(repr=False)
    functions: pd.DataFrame = field(repr=False, default_factory=lambda: pd.DataFrame(columns=FUNCTION_COLUMNS))

    def summary(self, pattern: str) -> pd.DataFrame:
        """Per condition: samples, share of samples named, share in frames matching `pattern`,
        and instructions per row where callgrind counted them (all threads; the statement's own
        thread too where stored)."""
        table = pd.DataFrame([{"condition": p.condition, "samples": p.samples, "named_share": p.named_share,
                               "share_matching": p.share_of(pattern)} for p in self.profiles])
        if len(self.instructions):
            counted = [c for c in INSTRUCTION_COLUMNS if c in self.instructions.columns]
            table = table.merge(self.instructions[["condition", *counted]], on="condition", how="left")
        return table


def collect(name: str, run_dir: Path, *, target: str | None = None, levels: tuple[str, ...] | None = None,
            callgrind: bool = True, profile: str = "smoke", seconds: float = SAMPLE_SECONDS) -> Evidence:
    """Profile each chosen condition of experiment `name` (ids containing one of `levels`) on
    `target` (default: the run's own, from its manifest) and store the result in
    `run_dir/evidence/`. Existing evidence is never overwritten."""
    out = Path(run_dir) / DIRECTORY
    if (out / INDEX).exists():
        raise DataError(f"{out}: evidence already stored for this run; not overwritten")
    if target is None:   # None for a v1 run: the experiment's default, which is what it ran on
        target = load_manifest(Path(run_dir)).default_target
    conditions = profiling.conditions_of(name, profile, target=target)
    out.mkdir(parents=True, exist_ok=True)
    chosen, unavailable = [], {}
    for cond in conditions:
        if levels is not None and not any(level in cond.name for level in levels):
            continue
        if not cond.target.local:
            unavailable[cond.name] = f"target {cond.target.name}: perf needs a server claimlab starts"
            continue
        try:
            check_available(cond.target)
            chosen.append(cond)
        except TargetUnavailable as exc:   # e.g. C3's MySQL tarball levels on a machine without them
            unavailable[cond.name] = str(exc)
    profiles, counts, binaries = [], [], {}
    with tempfile.TemporaryDirectory(prefix="claimlab-evidence-") as work:
        launcher = Launcher(Path(work))
        tables: dict[str, SymbolTable] = {}    # target -> names for its program
        for cond in chosen:
            if cond.target.name not in tables:
                tables[cond.target.name] = profiling.names_for(cond.target)
            names = tables[cond.target.name]
            prof = profiling.profile_condition(launcher, cond.target, cond.options, cond.workload, cond.name,
                                               Path(work) / "perf", seconds=seconds, names=names)
            profiles.append(prof)
            binaries[prof.binary] = names.build_id
            if callgrind and instructions.countable(cond.workload):   # sysbench (C1): samples only
                counts.append(instructions.count_instructions(launcher, cond.target, cond.options, cond.workload,
                                                           cond.name, Path(work) / "callgrind"))
    for prof in profiles:
        (out / f"{prof.condition}.folded").write_text(prof.folded())
    pd.DataFrame([c.summary() for c in counts]).to_csv(out / "instructions.csv", index=False)
    function_rows(counts, name).to_csv(out / FUNCTIONS, index=False)
    files = sorted(p.name for p in out.iterdir() if p.name != INDEX)
    meta = {"experiment": name, "targets": sorted(tables), "profile": profile, "sample_seconds": seconds,
            "event": "cpu-clock",
            "frequency_hz": profiling.FREQUENCY_HZ, "binaries": binaries,
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "naming": "claimlab.symbols (exported symbols, handler tables, vtables, direct callers)",
            "not_profiled": unavailable,
            "checksums": {f: sha256_file(out / f) for f in files}}
    (out / INDEX).write_text(json.dumps(meta, indent=1))
    return load(run_dir)


def function_rows(counts: list[instructions.InstructionCounts], experiment: str) -> pd.DataFrame:
    """What is stored of each condition's functions: its TOP_FUNCTIONS costliest (own
    instructions) and every one that is the claim's code (EVIDENCE_PATTERNS)."""
    pattern = EVIDENCE_PATTERNS.get(Path(experiment).stem)
    parts = []
    for c in counts:
        table = c.function_costs()
        keep = table["self"].rank(method="first", ascending=False) <= TOP_FUNCTIONS
        if pattern:
            keep |= table["function"].str.contains(pattern, regex=True)
        parts.append(table[keep].sort_values("inclusive", ascending=False))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=FUNCTION_COLUMNS)


def add_instructions(name: str, run_dir: Path, *, target: str | None = None) -> Evidence:
    """Count what the run's stored evidence lacks: the instructions of every profiled condition
    callgrind can count that has no per-function counts (and the summary of those with none at
    all), on `target` (default: the run's own, from its manifest). Refused where counts were
    added before, where nothing is missing, and where the server here is another build than the
    one profiled (its counts would not explain this run)."""
    out = Path(run_dir) / DIRECTORY
    ev = load(run_dir)
    if ADDED in ev.meta:
        raise DataError(f"{out}: instruction counts were already added ({ev.meta[ADDED]['created_at']}); "
                        "not overwritten")
    if Path(name).stem != Path(ev.meta["experiment"]).stem:
        raise DataError(f"{out}: this run's evidence is of {ev.meta['experiment']}, not {name}")
    if target is None:
        target = load_manifest(Path(run_dir)).default_target
    profiled = {p.condition for p in ev.profiles}
    counted = set(ev.functions["condition"])
    todo = [c for c in profiling.conditions_of(name, ev.meta["profile"], target=target)
            if c.name in profiled and c.name not in counted and instructions.countable(c.workload)]
    if not todo:
        raise DataError(f"{out}: no instruction counts are missing (each profiled condition callgrind can "
                        "count has them)")
    builds = {}
    for cond in todo:
        binary = str(installation(cond.target).binary)
        builds[binary] = build_id(binary)
        if builds[binary] not in ev.meta["binaries"].values():
            raise DataError(f"{out}: profiled on build {', '.join(ev.meta['binaries'].values())}; {binary} is "
                            f"build {builds[binary]}: its counts would not explain this run")
    with tempfile.TemporaryDirectory(prefix="claimlab-evidence-") as work:
        launcher = Launcher(Path(work))
        counts = [instructions.count_instructions(launcher, c.target, c.options, c.workload, c.name,
                                                  Path(work) / "callgrind") for c in todo]
    summarised = set(ev.instructions["condition"])
    tables = dict(zip(ADDED_FILES, (pd.DataFrame([c.summary() for c in counts if c.condition not in summarised]),
                                    function_rows(counts, name))))
    for file, table in tables.items():
        table.to_csv(out / file, index=False)
    meta = dict(ev.meta)
    meta[ADDED] = {"what": "callgrind instruction counts", "conditions": [c.name for c in todo],
                   "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                   "binaries": builds, "checksums": {f: sha256_file(out / f) for f in tables}}
    write_atomic(out / INDEX, json.dumps(meta, indent=1))
    return load(run_dir)


def exists(run_dir: Path) -> bool:
    return (Path(run_dir) / DIRECTORY / INDEX).is_file()


def missing(run_dirs: list[Path]) -> list[Path]:
    """The runs with no CPU evidence stored: what a report with `cpu_evidence` profiles, each run
    on its own target (one server's evidence says nothing of the other's)."""
    return [Path(d) for d in run_dirs if not exists(d)]


def load(run_dir: Path) -> Evidence:
    """The stored evidence of a run, checked against its checksums (those of added counts too);
    added counts join the stored ones."""
    out = Path(run_dir) / DIRECTORY
    meta = _index(out)
    _verified(out, meta)
    added = meta.get(ADDED, {}).get("checksums", {})
    profiles = []
    binary = next(iter(meta["binaries"]), "")
    for f in sorted(meta["checksums"]):
        if f.endswith(".folded"):
            stacks = {}
            for line in (out / f).read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                stacks[stack] = int(count)
            profiles.append(profiling.Profile(f.removesuffix(".folded"), stacks, binary))
    counts = _tables(out, ["instructions.csv", *[f for f in added if f.startswith("instructions")]],
                     ["condition", "per_row", "relative_spread"])
    functions = _tables(out, [f for f in [*meta["checksums"], *added] if f.startswith("functions")],
                        list(FUNCTION_COLUMNS))
    return Evidence(tuple(profiles), counts, meta, functions)


def verified_files(run_dir: Path) -> list[str]:
    """A run's evidence files (paths in the run), each checked against evidence.json: what a run
    carries beyond its manifest's checksums, and an import must account for."""
    out = Path(run_dir) / DIRECTORY
    return [f"{DIRECTORY}/{f}" for f in (INDEX, *_verified(out, _index(out)))]


def _index(out: Path) -> dict:
    try:
        return json.loads((out / INDEX).read_text())
    except FileNotFoundError:
        raise DataError(f"{out}: no CPU evidence stored with this run") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataError(f"{out / INDEX}: unreadable") from None


def _verified(out: Path, meta: dict) -> list[str]:
    """The files evidence.json lists (those of added counts too), each matching its checksum."""
    listed = {**meta.get("checksums", {}), **meta.get(ADDED, {}).get("checksums", {})}
    changed = [f for f, digest in listed.items() if not (out / f).is_file() or sha256_file(out / f) != digest]
    if changed:
        raise DataError(f"{out}: {', '.join(changed)} changed after profiling (checksum mismatch)")
    return list(listed)


def _tables(out: Path, files: list[str], columns: list[str]) -> pd.DataFrame:
    """The stored CSV files' rows together (a file of a run that counted nothing is empty)."""
    parts = [pd.read_csv(out / f) for f in files if (out / f).stat().st_size > 1]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
