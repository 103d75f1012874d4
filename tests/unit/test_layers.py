"""The layers the README's map draws, read from the code: what each module imports of claimlab's
own (at the top or inside a function). Running, storing and comparing meet only in the store;
records sit at the bottom; reporting starts no server."""

import ast
from pathlib import Path

import pytest

from conftest import ROOT

LIB = ROOT / "lib" / "claimlab"
# The run phase: a run's life, its servers and workloads, what is measured beside them.
RUN_PHASE = ("runner", "units", "rounds", "looks", "preload", "datacache", "design", "workloads", "accounting",
             "witness", "servers")
# The render phase: what the notebooks, the index and the terminal tables call.
RENDER_PHASE = ("report", "cards", "figures", "wording", "method_text", "ladder", "cost_tables", "page_style",
                "hosts_view", "exploration", "evidence_tables", "gap", "attribution")
STARTS_SERVERS = ("runner", "units", "rounds", "preload", "campaign", "servers")
REPORTS = ("stats", "report", "cards", "figures", "wording", "method_text", "ladder", "cost_tables", "page_style",
           "hosts_view", "exploration", "evidence_tables", "gap", "attribution")


def _module(path: Path) -> str:
    parts = path.relative_to(LIB).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """claimlab's modules that `path` imports, as dotted names below claimlab ("servers.local")."""
    package = _module(path).split(".") if path.name == "__init__.py" else _module(path).split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.removeprefix("claimlab.") for a in node.names if a.name.startswith("claimlab.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join([*package[:len(package) - node.level + 1], *([node.module] if node.module else [])])
            elif (node.module or "").startswith("claimlab"):
                base = node.module.removeprefix("claimlab").removeprefix(".")
            else:
                continue
            for a in node.names:   # `from . import stats` names a module; `from .store import x` does not
                name = f"{base}.{a.name}".lstrip(".")
                found.add(name if (LIB / name.replace(".", "/")).with_suffix(".py").exists()
                          or (LIB / name.replace(".", "/")).is_dir() else base)
    return {name for name in found if name}


GRAPH = {_module(p): imports(p) for p in sorted(LIB.rglob("*.py")) if _module(p)}


def _within(name: str, layers) -> bool:
    return any(name == layer or name.startswith(layer + ".") for layer in layers)


def _crossing(sources, forbidden) -> dict[str, list[str]]:
    return {module: sorted(name for name in names if _within(name, forbidden))
            for module, names in GRAPH.items() if _within(module, sources)
            and any(_within(name, forbidden) for name in names)}


def test_the_graph_is_read():
    # the reader finds what is there: a test of layers that saw no imports would pass on anything
    assert {"design", "store", "servers", "units"} <= GRAPH["runner"]
    assert "stats.intervals" in GRAPH["stats.analysis"] and "wording" in GRAPH["cards"]


def test_the_run_phase_imports_no_statistics_and_no_report():
    assert _crossing(RUN_PHASE, REPORTS) == {}


def test_the_statistics_read_and_write_no_file():
    # Before: stats.sequential read data/claims.yaml through the store (stopping_for).
    assert _crossing(("stats",), ("store", "writer", "pack", "transfer", "params")) == {}


def test_reporting_imports_nothing_that_starts_a_server():
    # Before: report imported runner (for its signal handling), so rendering loaded the run phase.
    assert _crossing(RENDER_PHASE, STARTS_SERVERS) == {}


@pytest.mark.parametrize("bottom", ["records", "errors", "stopping"])
def test_the_bottom_layer_imports_no_module_of_claimlab(bottom):
    assert GRAPH[bottom] == set()


def test_records_are_what_the_store_workloads_and_accounting_share():
    assert all("records" in GRAPH[module] for module in ("store", "workloads", "accounting", "params"))
