"""Plots live in claimlab.figures: the domain modules load without pyplot, and the ablation
waterfall draws one bar per step between slow and fast."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pandas as pd

import claimlab


def test_no_module_but_figures_imports_pyplot_at_load():
    names = [m.name for m in pkgutil.iter_modules(claimlab.__path__) if m.name != "figures"]
    code = ("import sys\n" + "".join(f"import claimlab.{n}\n" for n in names)
            + "print(sorted(m for m in sys.modules if m.startswith(('matplotlib.pyplot', 'seaborn'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_waterfall_draws_slow_each_step_and_fast():
    from claimlab import figures
    table = pd.DataFrame([
        dict(kind="total", option="all", mean=1.0, ratio=0.5, share=1.0, share_lo=1.0, share_hi=1.0),
        dict(kind="cumulative", option="log_bin", mean=1.4, ratio=0.7, share=0.6, share_lo=0.5, share_hi=0.7),
        dict(kind="cumulative", option="sync_binlog", mean=1.0, ratio=0.71, share=0.4, share_lo=0.3, share_hi=0.5)])
    fig = figures.waterfall(table, "elapsed_s")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["slow", "+log_bin", "+sync_binlog", "fast"]
    heights = [round(p.get_height(), 3) for p in ax.patches]
    assert heights == [1.0, -0.3, -0.2, 0.5]          # slow = 2.0 s; 1.4 s; 1.0 s = fast
    assert "60%\n[50%, 70%]" in [t.get_text() for t in ax.texts]
