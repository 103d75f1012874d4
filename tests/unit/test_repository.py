"""What CI must refuse: notebooks committed with outputs, and code (notebooks included) that ruff flags."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_without_outputs(notebook):
    nb = json.loads(notebook.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"   # a custom name fails elsewhere
    assert any("parameters" in c.get("metadata", {}).get("tags", []) for c in code)


def test_ruff_is_clean_on_code_and_notebooks():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is a dev dependency: run `make setup`"
    result = subprocess.run([ruff, "check", "lib", "tests", "bench", "notebooks"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
