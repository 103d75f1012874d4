"""The suite's own configuration cleans up: a passing session leaves no file in the temporary
directory (tmp_path retention), whatever the tests wrote there."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT


def test_a_passing_session_leaves_nothing_in_the_temporary_directory(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_writes.py").write_text(
        "def test_writes(tmp_path):\n    (tmp_path / 'big').write_bytes(b'x' * 1000)\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tests), str(tests)],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "TMPDIR": str(tmp), "PYTEST_DEBUG_TEMPROOT": str(tmp)})
    assert result.returncode == 0, result.stdout + result.stderr
    left = [p for p in tmp.rglob("*") if not p.is_dir()]
    assert not left, left
