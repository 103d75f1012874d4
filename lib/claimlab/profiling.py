"""CPU evidence per condition: where the server spends its time, and what to profile.

- Sampling: `perf record -g -e cpu-clock` on the server's pid during the measured phase only
  (cpu-clock is a software event: these VMs have no hardware counters), folded with perf's own
  stackcollapse script, rendered with inferno (a maintained Rust port of Brendan Gregg's
  FlameGraph: `inferno-flamegraph`, `inferno-diff-folded`) per condition and as a differential.
- Instruction counts: claimlab.instructions (callgrind), which shares this module's errors and
  tools.

The OS package's mariadbd and Debian's mysqld have no debug symbols, only their exported ones
(~29k and ~35k functions): perf frames are named through claimlab.symbols (`names_for`), what
remains shows as `[unknown]`, and `Profile.unnamed` says under which named callers it sits;
callgrind's own tables name exported functions only (the others are hex addresses). A mariadbd
built with symbols is used by giving its path as the target's `binary`.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pandas as pd

from . import workloads as wl
from .errors import ClaimlabError, ConfigError, TargetUnavailable
from .servers import Launcher, ServerOptions, TargetSpec, installation
from .symbols import SymbolTable

UNKNOWN = "[unknown]"
FREQUENCY_HZ = 999
PERF_STOP_TIMEOUT_S = 60.0


class ProfilingError(ClaimlabError):
    """perf or valgrind ran but did not give a usable profile."""


def tool(name: str, package: str) -> str:
    """A profiling tool's path, or TargetUnavailable naming how to install it. inferno's binaries
    are also looked for in ~/.cargo/bin (where `cargo install inferno` puts them)."""
    found = shutil.which(name) or shutil.which(name, path=str(Path.home() / ".cargo" / "bin"))
    if not found:
        raise TargetUnavailable(f"{name} not found: install it with {package}")
    return found


# --------------------------------------------------------------------------- sampling


@dataclass(frozen=True)
class Profile:
    """Folded call stacks of one condition's server during its measured phase."""

    condition: str
    stacks: dict[str, int] = field(repr=False)   # "root;caller;callee" -> samples
    binary: str = ""

    def __post_init__(self):
        if not self.stacks:
            raise ProfilingError(f"condition {self.condition}: perf recorded no samples of the server")
        if any(count <= 0 for count in self.stacks.values()):
            raise ValueError("stack counts must be positive")

    @property
    def samples(self) -> int:
        return sum(self.stacks.values())

    def folded(self) -> str:
        return "".join(f"{stack} {count}\n" for stack, count in sorted(self.stacks.items()))

    def top_functions(self, n: int = 15) -> pd.DataFrame:
        """Functions by share of samples: `self` where the sample was in the function itself,
        `total` where it was anywhere on the stack (each function counted once per stack)."""
        self_counts: dict[str, int] = {}
        total_counts: dict[str, int] = {}
        for stack, count in self.stacks.items():
            frames = stack.split(";")[1:] or stack.split(";")   # the first frame is the command
            self_counts[frames[-1]] = self_counts.get(frames[-1], 0) + count
            for frame in set(frames):
                total_counts[frame] = total_counts.get(frame, 0) + count
        table = pd.DataFrame({"function": list(total_counts),
                              "total_samples": list(total_counts.values())})
        table["self_samples"] = table["function"].map(self_counts).fillna(0).astype(int)
        table["self_share"] = table["self_samples"] / self.samples
        table["total_share"] = table["total_samples"] / self.samples
        table["named"] = table["function"] != UNKNOWN
        table.insert(0, "condition", self.condition)
        return (table.sort_values(["self_samples", "total_samples"], ascending=False)
                .head(n).reset_index(drop=True))

    def unnamed(self, n: int = 10) -> pd.DataFrame:
        """Samples whose innermost frame has no symbol, by the nearest named caller: what the
        report says could not be named (static functions of a binary without debug symbols)."""
        counts: dict[str, int] = {}
        for stack, count in self.stacks.items():
            frames = stack.split(";")
            if frames[-1] != UNKNOWN:
                continue
            caller = next((f for f in reversed(frames) if f != UNKNOWN), "(none)")
            counts[caller] = counts.get(caller, 0) + count
        table = pd.DataFrame({"named_caller": list(counts), "samples": list(counts.values())})
        table["share"] = table["samples"] / self.samples
        table.insert(0, "condition", self.condition)
        return table.sort_values("samples", ascending=False).head(n).reset_index(drop=True)

    @property
    def named_share(self) -> float:
        """Share of samples whose innermost frame has a name."""
        return sum(c for s, c in self.stacks.items() if s.rsplit(";", 1)[-1] != UNKNOWN) / self.samples

    def share_of(self, pattern: str) -> float:
        """Share of samples with a frame matching the regular expression anywhere on the stack."""
        rx = re.compile(pattern)
        hit = sum(c for s, c in self.stacks.items() if any(rx.search(f) for f in s.split(";")))
        return hit / self.samples


@contextlib.contextmanager
def perf_sampling(pid: int, out: Path, frequency: int = FREQUENCY_HZ) -> Iterator[Path]:
    """Sample `pid` (all its threads) with call graphs while the block runs; stopped with SIGINT
    (perf then writes its file) and waited for, whatever happens inside."""
    perf = tool("perf", "`apt-get install linux-perf`")
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([perf, "record", "-g", "-e", "cpu-clock", "-F", str(frequency), "-p", str(pid),
                             "-o", str(out)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        # perf creates its output once it has attached to every thread; a SIGINT before that
        # kills it with nothing written, so wait for the file rather than a fixed time.
        deadline = time.monotonic() + 30
        while not (out.exists() and out.stat().st_size > 0) and time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ProfilingError(f"perf record failed: {last_line(proc.stderr.read())}")
            time.sleep(0.05)
        time.sleep(0.2)
        if proc.poll() is not None:
            raise ProfilingError(f"perf record failed: {last_line(proc.stderr.read())}")
        yield out
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=PERF_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ProfilingError("perf record did not stop after SIGINT") from None
    if not out.exists() or out.stat().st_size == 0:   # perf's exit code after SIGINT varies
        raise ProfilingError(f"perf record wrote nothing (exit {proc.returncode}): {last_line(err)}")


def fold(perf_data: Path, names: SymbolTable | None = None) -> dict[str, int]:
    """Folded stacks (root first) from a perf.data file. Frames perf leaves `[unknown]` inside
    the binary `names` was read from are named by it (see claimlab.symbols)."""
    perf = tool("perf", "`apt-get install linux-perf`")
    result = subprocess.run([perf, "script", "-F", "comm,ip,sym,dso", "-i", str(perf_data)],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise ProfilingError(f"perf script failed on {perf_data}: {last_line(result.stderr)}")
    stacks: dict[str, int] = {}
    for block in result.stdout.split("\n\n"):
        lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
        if not lines:
            continue
        frames = [_frame(ln, names) for ln in lines[1:]]
        stack = ";".join([lines[0].split()[0], *reversed(frames)])
        stacks[stack] = stacks.get(stack, 0) + 1
    return stacks


_PERF_FRAME = re.compile(r"^([0-9a-f]+)\s+(.*?)\s+\((.*)\)$")


def _frame(line: str, names: SymbolTable | None) -> str:
    match = _PERF_FRAME.match(line)
    if not match:
        return UNKNOWN
    address, symbol, dso = match.groups()
    symbol = re.sub(r"\+0x[0-9a-f]+$", "", symbol)
    if symbol == UNKNOWN and names is not None and Path(dso).name == Path(names.binary).name:
        return names.name(int(address, 16)) or UNKNOWN
    return symbol


def last_line(text) -> str:
    """A failed tool's last non-empty line of output: where perf, valgrind and inferno say why."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "(no message)"


def names_for(target: TargetSpec) -> SymbolTable:
    """Names for the unexported functions of a local target's program, read with its product's
    handler layout (MariaDB and MySQL order their charset and collation handlers differently)."""
    inst = installation(target)
    return SymbolTable.read(inst.binary, inst.flavor.vendor)


def profile_condition(launcher: Launcher, target: TargetSpec, options: ServerOptions, workload: wl.Workload,
                      condition: str, out_dir: Path, *, iterations: int = 3, warmup: int = 1,
                      seed: int = 1, seconds: float = 0.0, names: SymbolTable | None = None) -> Profile:
    """Start the condition's server, load and warm up untimed, then sample only the measured
    iterations, repeated until at least `seconds` have passed (a small table scans in
    milliseconds: at 999 Hz a few iterations give a dozen samples). The server is always
    stopped; perf.data is kept in out_dir. Frames are named with `names` (claimlab.symbols)."""
    server = launcher.prepare(target, options)
    try:
        server.start()
        workload.prepare(server)
        with workload.session(server, seed) as measure:
            for _ in range(warmup):
                measure(warmup=True)
            with perf_sampling(server.pid, out_dir / f"{condition}.perf.data") as data:
                started, done = time.monotonic(), 0
                while done < iterations or time.monotonic() - started < seconds:
                    measure()
                    done += 1
        binary = str(server.binary)
    finally:
        server.stop()
    profile = Profile(condition, fold(data, names), binary)
    (out_dir / f"{condition}.folded").write_text(profile.folded())
    return profile


FLAMEGRAPH = ("inferno-flamegraph", "`cargo install inferno` (a Rust toolchain: rustup)")


def flamegraph_skip() -> str:
    """'' where flame graphs can be drawn; else the one line a profiling step prints instead of
    them: inferno comes from cargo, and a machine without Rust still profiles, counts
    instructions and shows the top functions."""
    try:
        tool(*FLAMEGRAPH)
    except TargetUnavailable as exc:
        return f"flame graphs skipped: {exc}"
    return ""


def flamegraph(profile: Profile, path: Path, title: str = "") -> Path:
    """An interactive SVG flame graph of one condition (inferno-flamegraph). Frames under 0.1% of
    the samples (about a pixel) are left out: inferno's default keeps single-sample stacks, whose
    hairline towers (an interrupt atop an fsync) set the graph's height and leave a band of
    empty space above the stacks that matter."""
    binary = tool(*FLAMEGRAPH)
    return _render([binary, "--width", "1100", "--minwidth", "0.1", "--title",
                    title or f"{profile.condition}: {profile.samples} samples (cpu-clock)"],
                   profile.folded(), path)


def differential(before: Profile, after: Profile, path: Path, title: str = "") -> Path:
    """A differential flame graph: `after`'s stacks, red where they gained share against `before`,
    blue where they lost it (inferno-diff-folded, normalised to equal totals)."""
    differ = tool("inferno-diff-folded", "`cargo install inferno`")
    binary = tool("inferno-flamegraph", "`cargo install inferno`")
    path.parent.mkdir(parents=True, exist_ok=True)
    a, b = path.with_suffix(".before.folded"), path.with_suffix(".after.folded")
    a.write_text(before.folded())
    b.write_text(after.folded())
    result = subprocess.run([differ, "--normalize", str(a), str(b)], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise ProfilingError(f"inferno-diff-folded failed: {last_line(result.stderr)}")
    title = title or f"{before.condition} -> {after.condition} (red: more samples in {after.condition})"
    return _render([binary, "--title", title], result.stdout, path)


def _render(cmd: list[str], folded: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(cmd, input=folded, capture_output=True, text=True)
    if result.returncode != 0 or "<svg" not in result.stdout:
        raise ProfilingError(f"{Path(cmd[0]).name} failed: {last_line(result.stderr)}")
    path.write_text(result.stdout)
    return path


# --------------------------------------------------------------------------- what to profile


@dataclass(frozen=True)
class ProfiledCondition:
    """One configuration to profile: a name for its files, its server and its workload."""

    name: str
    target: TargetSpec
    options: ServerOptions
    workload: wl.Workload

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z0-9_.\-]{1,80}", self.name):
            raise ValueError(f"{self.name!r} is not usable as a file name")


def conditions_of(name_or_path: str, profile: str = "smoke", root: Path | None = None,
                  target: str | None = None) -> list[ProfiledCondition]:
    """An ablation's slow and fast sets, or every condition of a claim experiment (its first
    Python-driven workload, else its first workload), sized by `profile`. `target` names the
    claim experiment's default target (as `claimlab run --target` does); levels that pick their
    own target keep it."""
    from . import ablation, design, params
    from .store import project_root
    root = root or project_root()
    path = Path(name_or_path)
    ablation_file = path if path.suffix in (".yaml", ".yml") else root / "params" / "ablation" / f"{path}.yaml"
    if ablation_file.is_file() and ablation_file.parent.name == "ablation":
        abl = ablation.load(ablation_file, profile)
        if target not in (None, abl.target.name):
            raise ConfigError(str(ablation_file), "target", f"this ablation runs on {abl.target.name}, not {target}")
        return [ProfiledCondition("slow", abl.target, abl.slow, abl.workload),
                ProfiledCondition("fast", abl.target, abl.fast, abl.workload)]
    from .servers import flavor_of
    if path.suffix not in (".yaml", ".yml") and not (root / "params" / f"{path}.yaml").is_file():
        there = {kind: ", ".join(sorted(p.stem for p in folder.glob("*.yaml"))) or "none"
                 for kind, folder in (("experiments", root / "params"), ("ablations", root / "params" / "ablation"))}
        raise ConfigError(name_or_path, "", "no experiment (params/) or ablation (params/ablation/) of that name "
                                            f"(experiments: {there['experiments']}; ablations: {there['ablations']})")
    exp = params.load(params.find(name_or_path, root / "params"), profile)
    if target is not None:
        exp = params.with_default_target(exp, target, "target")
    conds = design.conditions(exp)
    # Names and roles (`uca_ai`) spelled for the server; a level it lacks is left out. Conditions
    # on a server that is not here (C3's tarball levels) stay as declared: the caller reports them.
    flavors = {}
    for name in {c.target for c in conds}:
        try:
            flavors[name] = flavor_of(exp.targets[name])
        except TargetUnavailable:
            pass
    here, elsewhere = [c for c in conds if c.target in flavors], [c for c in conds if c.target not in flavors]
    conds = design.resolve_conditions(here, flavors)[0] + elsewhere
    out = []
    for cond in conds:
        workload = next((w for w in cond.workloads if not isinstance(w, wl.Sysbench)), cond.workloads[0])
        name = re.sub(r"[^A-Za-z0-9_.\-]", "_", cond.id)
        out.append(ProfiledCondition(name, exp.targets[cond.target], cond.server, workload))
    return out
