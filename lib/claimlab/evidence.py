"""CPU evidence kept with a run: folded perf stacks and callgrind instruction counts per condition.

Stored in the run directory under `evidence/` with an `evidence.json` naming the server binary,
its build id, when and how it was profiled, and a sha256 of every file, so `claimlab report
--from-data` shows the same flame graphs and tables without a server, and an edited file is
refused like edited measurements are. Profiling happens in a separate server start after (or
independently of) the timed run, sized by the `smoke` profile and sampled for a fixed time: it
explains where time goes, it is not itself a timing.
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
from .servers import Launcher, check_available
from .store import load_manifest, sha256_file
from .symbols import SymbolTable

DIRECTORY = "evidence"
INDEX = "evidence.json"
SAMPLE_SECONDS = 6.0
INSTRUCTION_COLUMNS = ("per_row", "relative_spread", "own_per_row", "own_spread")


@dataclass(frozen=True)
class Evidence:
    """What `load` returns: profiles (perf), instruction counts (callgrind) and where they came from."""

    profiles: tuple[profiling.Profile, ...]
    instructions: pd.DataFrame = field(repr=False)     # condition, statement, rows, instructions, per_row, ...
    meta: dict = field(repr=False)

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


def exists(run_dir: Path) -> bool:
    return (Path(run_dir) / DIRECTORY / INDEX).is_file()


def missing(run_dirs: list[Path]) -> list[Path]:
    """The runs with no CPU evidence stored: what a report with `cpu_evidence` profiles, each run
    on its own target (one server's evidence says nothing of the other's)."""
    return [Path(d) for d in run_dirs if not exists(d)]


def load(run_dir: Path) -> Evidence:
    """The stored evidence of a run, checked against its checksums."""
    out = Path(run_dir) / DIRECTORY
    try:
        meta = json.loads((out / INDEX).read_text())
    except FileNotFoundError:
        raise DataError(f"{out}: no CPU evidence stored with this run") from None
    changed = [f for f, digest in meta["checksums"].items()
               if not (out / f).is_file() or sha256_file(out / f) != digest]
    if changed:
        raise DataError(f"{out}: {', '.join(changed)} changed after profiling (checksum mismatch)")
    profiles = []
    binary = next(iter(meta["binaries"]), "")
    for f in sorted(meta["checksums"]):
        if f.endswith(".folded"):
            stacks = {}
            for line in (out / f).read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                stacks[stack] = int(count)
            profiles.append(profiling.Profile(f.removesuffix(".folded"), stacks, binary))
    instructions_file = out / "instructions.csv"
    counts = (pd.read_csv(instructions_file) if instructions_file.stat().st_size > 1
              else pd.DataFrame(columns=["condition", "per_row", "relative_spread"]))
    return Evidence(tuple(profiles), counts, meta)
