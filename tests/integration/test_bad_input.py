"""Malformed and hostile inputs (tests/fixtures/bad_params): each gives one line naming the file and
field (or the target / workload), a non-zero exit, no traceback, and never a lost measurement.

Each fixture's first line says what the error must contain (`# expect: ...`); `# mode: run` marks
the ones only a real server or tarball can reveal, which are run (smoke profile) instead of validated.
"""

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli

CASES = sorted((FIXTURES / "bad_params").glob("*.yaml"))


def _header(path: Path) -> tuple[str, str]:
    lines = path.read_text().splitlines()
    expect = lines[0].removeprefix("# expect: ")
    mode = "run" if len(lines) > 1 and lines[1] == "# mode: run" else "validate"
    return expect, mode


def test_at_least_thirty_fixtures():
    assert len(CASES) >= 30


@pytest.mark.parametrize("fixture", CASES, ids=lambda p: p.stem)
def test_bad_input_is_one_clear_line(fixture, tmp_path, mariadbd):
    expect, mode = _header(fixture)
    path = tmp_path / f"case_{fixture.name}"   # experiment names start with a letter
    path.write_text(fixture.read_text().replace("FIXTURES", str(FIXTURES)))
    if mode == "validate":
        result = run_cli("validate", str(path))
    else:
        result = run_cli("run", str(path), "--profile", "smoke", "--no-progress",
                         "--data", str(tmp_path / "raw"), "--work", str(tmp_path / "work"), timeout=180)
    err = result.stderr
    assert result.returncode == 1, (result.returncode, err, result.stdout)
    assert err.startswith("claimlab: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert expect in err, err
    if mode == "validate":
        assert str(path) in err
    for manifest in (tmp_path / "raw").glob("*/*/manifest.json"):
        # a run that started and then failed is closed as failed, with its files still valid
        assert json.loads(manifest.read_text())["status"] == "failed"


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
