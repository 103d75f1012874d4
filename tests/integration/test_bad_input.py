"""Malformed and hostile inputs (tests/fixtures/bad_params): each gives one line naming the file and
field (or the target / workload), a non-zero exit, no traceback, and never a lost measurement.

Each fixture's first line says what the error must contain (`# expect: ...`); `# mode: run` marks
the ones only a real server or tarball can reveal, which are run (smoke profile) instead of validated;
`# mode: hostile` marks input built to exhaust memory or time (alias bombs, deep nesting, counts in
the billions), which both `validate` and `run` must refuse cheaply and before any server starts.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from claimlab import cli
from conftest import FIXTURES, ROOT, run_cli

CASES = sorted((FIXTURES / "bad_params").glob("*.yaml"))


MODES = ("validate", "run", "hostile")
# What refusing hostile input may cost, in CPU seconds and resident memory of the claimlab process
# (measured by the kernel for that process alone, so load from other processes does not count).
HOSTILE_CPU_S, HOSTILE_RSS_MB = 2.0, 200


def _header(path: Path) -> tuple[str, str]:
    lines = path.read_text().splitlines()
    expect = lines[0].removeprefix("# expect: ")
    mode = lines[1].removeprefix("# mode: ") if len(lines) > 1 and lines[1].startswith("# mode: ") else "validate"
    return expect, mode


@pytest.mark.parametrize("fixture", CASES, ids=lambda p: p.stem)
def test_fixture_states_its_expectation(fixture):
    """A fixture without its header would be checked against its own first YAML line."""
    first = fixture.read_text().splitlines()[0]
    expect, mode = _header(fixture)
    assert first.startswith("# expect: ") and len(expect) >= 8, first
    assert mode in MODES, mode


@pytest.mark.parametrize("fixture", [c for c in CASES if _header(c)[1] != "hostile"], ids=lambda p: p.stem)
def test_bad_input_is_one_clear_line(fixture, tmp_path, mariadbd, monkeypatch, capsys):
    """`validate` runs in this process, through the command line's own `main` (which turns errors
    into the line); `run` cases as a user runs them. Hostile input, which a regression could let
    exhaust a process, is refused in processes of its own below."""
    expect, mode = _header(fixture)
    path = tmp_path / f"case_{fixture.name}"   # experiment names start with a letter
    path.write_text(fixture.read_text().replace("FIXTURES", str(FIXTURES)))
    if mode == "validate":
        monkeypatch.chdir(ROOT)
        code = cli.main(["validate", str(path)])
        out, err = capsys.readouterr()
    else:
        result = run_cli("run", str(path), "--profile", "smoke", "--no-progress",
                         "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"), timeout=180)
        code, out, err = result.returncode, result.stdout, result.stderr
    assert code == 1, (code, err, out)
    assert err.startswith("claimlab: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert expect in err, err
    if mode != "run":
        assert str(path) in err
    for manifest in (tmp_path / "raw").glob("*/*/manifest.json"):
        # a run that started and then failed is closed as failed, with its files still valid
        assert json.loads(manifest.read_text())["status"] == "failed"


# Started from this small launcher, not from the test process: a process forked from the pytest
# worker starts with the worker's resident pages (hundreds of MB once the analysis tests have run in
# it) and the kernel's peak for it counts them. The launcher sets the limits, waits for the command
# and writes its exit code, CPU seconds and peak resident MB to the file named first.
_LAUNCHER = """
import os, resource, subprocess, sys
def limits():
    resource.setrlimit(resource.RLIMIT_CPU, (10, 10))
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
proc = subprocess.Popen(sys.argv[2:], preexec_fn=limits)
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss / 1024}")
"""


def _measured(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run the command line; return its result, CPU seconds and peak resident MB (wait4). Hard
    limits end a process that does not refuse in time, so a regression fails fast, not the machine;
    output goes to files, so a flood of it cannot block the process on a full pipe."""
    out_path, err_path, usage_path = tmp_path / "stdout", tmp_path / "stderr", tmp_path / "usage"
    command = [sys.executable, "-m", "claimlab.cli", *args]
    with out_path.open("w") as out, err_path.open("w") as err:
        subprocess.run([sys.executable, "-c", _LAUNCHER, str(usage_path), *command], stdout=out, stderr=err,
                       stdin=subprocess.DEVNULL, check=True)
    code, cpu_s, rss_mb = usage_path.read_text().split()
    result = subprocess.CompletedProcess(command, int(code), out_path.read_text(errors="replace"),
                                         err_path.read_text(errors="replace")[:10_000])
    return result, float(cpu_s), float(rss_mb)


HOSTILE = [case for case in CASES if _header(case)[1] == "hostile"]


@pytest.mark.parametrize("fixture", HOSTILE, ids=lambda p: p.stem)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_hostile_input_is_refused_cheaply_before_any_server(fixture, command, tmp_path):
    expect, _ = _header(fixture)
    path = tmp_path / f"case_{fixture.name}"
    path.write_text(fixture.read_text())
    extra = ["--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"), "--no-progress"]
    result, cpu_s, rss_mb = _measured(tmp_path, command, str(path), *(extra if command == "run" else []))
    err = result.stderr
    assert result.returncode == 1, err
    assert err.startswith("claimlab: error: ") and err.count("\n") == 1 and expect in err, err
    assert str(path) in err, err
    assert len(err) < 400, "an error must not echo the hostile value at length"
    assert cpu_s < HOSTILE_CPU_S and rss_mb < HOSTILE_RSS_MB, (cpu_s, rss_mb)
    assert not (tmp_path / "raw").exists() and not (tmp_path / "work").exists()


def test_unknown_experiment_lists_those_there_are():
    result = run_cli("run", "no_such_experiment", "--no-progress")
    assert result.returncode == 1
    there = sorted(p.stem for p in (ROOT / "params").glob("*.yaml"))
    assert result.stderr == (f"claimlab: error: params/no_such_experiment.yaml: no such params file "
                             f"(there are: {', '.join(there)})\n")


def test_shipped_files_validate():
    """Every params file, every ablation file and data/claims.yaml, as `make` and a user check them."""
    result = run_cli("validate")
    assert result.returncode == 0, result.stderr
    checked = {line.removeprefix("ok: ") for line in result.stdout.splitlines()}
    expected = {str(p.relative_to(ROOT)) for p in [*(ROOT / "params").glob("*.yaml"),
                                                   *(ROOT / "params" / "ablation").glob("*.yaml")]}
    assert checked == expected | {"data/claims.yaml"}


def test_debug_shows_the_traceback(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text((FIXTURES / "bad_params" / "07_zero_repetitions.yaml").read_text())
    result = run_cli("--debug", "validate", str(path))
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_missing_sysbench_is_one_line_before_any_server_starts(tmp_path, write_params, mariadbd):
    path = write_params("""
claim: C1
targets:
  default: {kind: mariadb}
workloads:
  oltp: {kind: sysbench, test: oltp_point_select, table_size: 100, time: 1}
design: {repetitions: 1, warmup: 0, iterations: 1}
""")
    empty = tmp_path / "bin"
    empty.mkdir()
    result = run_cli("run", str(path), "--no-progress", "--data", str(tmp_path / "raw"),
                     "--work", str(tmp_path / "work"), env={"PATH": str(empty)})
    assert result.returncode == 1, result.stderr
    assert result.stderr == ("claimlab: error: workload oltp: sysbench not found: install it with "
                             "`apt-get install sysbench` (or run `make setup` as root)\n")
    assert not (tmp_path / "raw").exists() and not (tmp_path / "work").exists()
