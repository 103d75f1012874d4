"""What CI must refuse: notebooks committed with outputs, code (notebooks included) that ruff flags,
a module over 500 lines, and prose of the reports that names a repository file a reader of the
HTML does not have."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, frozen, frozen_id

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


MAX_MODULE_LINES = 500   # one concept per module: past this, a module holds two


def test_no_module_is_over_500_lines():
    # Before: cluster.py (563 lines) also held the session journal, report.py (530) also chose
    # the run phase's targets and built the CPU evidence tables.
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "lib" / "claimlab").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


# A path under the repository's folders or a data file's name. A command a reviewer types in a
# clone (`claimlab run params/x.yaml`) may name one; none of the texts below gives one.
_FILE = re.compile(r"\b(?:params|data|runs|evidence)/|\b[\w.-]+\.(?:json|ya?ml|csv)\b")


def test_prose_a_reader_of_the_html_meets_names_no_repository_file():
    # Before: "see data/published_runs.json", "an ablation file (params/ablation/)", "`evidence/` in
    # the run directory", "results.csv sha256": files the reader of a report does not have.
    from claimlab import gap, method_text, report
    rendered = [report.CLAIM_NOTEBOOK, report.SUMMARY, *(nb for nb, _ in report.INVESTIGATIONS.values())]
    texts = {f"{name} cell {i}": "".join(cell["source"]) for name in rendered
             for i, cell in enumerate(json.loads((ROOT / "notebooks" / name).read_text())["cells"])
             if cell["cell_type"] == "markdown" and report.NOTEBOOK_ONLY not in cell["metadata"].get("tags", [])}
    texts |= {p.name: p.read_text() for p in sorted((ROOT / "lib/claimlab/templates/scope").glob("*.md"))}
    texts["runs read"] = report.runs_markdown(report.analyze_runs([frozen_id("c1")]))
    texts["method"] = method_text.method_markdown(frozen("c1"))
    texts["ablation not run"] = gap.not_run_markdown("seed004_toggles_mysql80")
    assert {name: _FILE.findall(text) for name, text in texts.items() if _FILE.search(text)} == {}
