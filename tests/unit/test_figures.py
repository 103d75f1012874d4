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


def _effect(**over):
    row = dict(claim="C2", comparison="uca_ai_vs_utf8mb3", target="mysql", server_version="9.7.4-2", estimate=1.7,
               ci_low=1.6, ci_high=1.9, published_ratio=1.29, verdict="supported")
    return {**row, **over}


def test_forest_plot_rows_say_which_comparison_on_which_server():
    from claimlab import figures
    table = pd.DataFrame([_effect(), _effect(target="mariadb", server_version="10.11.19-MariaDB-0+deb12u1, "
                                                                              "10.11.19-MariaDB-0+deb12u1-log"),
                          _effect(claim="C3", comparison="v80_vs_v57_insert", target="", server_version=None,
                                  estimate=None, ci_low=None, ci_high=None, verdict="not_tested")])
    labels = [t.get_text() for t in figures.effects(table).axes[0].get_yticklabels()]
    assert labels == ["C2 uca_ai vs utf8mb3 — MySQL 9.7.4", "C2 uca_ai vs utf8mb3 — MariaDB 10.11.19",
                      "C3 v80 vs v57_insert — not measured"]
    assert figures.effect_labels(table.iloc[:2]) == ["uca_ai vs utf8mb3 — MySQL 9.7.4",
                                                     "uca_ai vs utf8mb3 — MariaDB 10.11.19"]   # one claim


def _two_servers():
    rows = []
    for target, version, scale in (("mariadb", "10.11.19-MariaDB-0+deb12u1", 1.0), ("mysql", "9.7.4-2", 3.0)):
        for seq in range(4):
            for condition in ("binlog=off", "binlog=on"):
                rows.append(dict(run_id=f"run-{target}", target=target, server_version=version, workload="insert_loop",
                                 condition=condition, repetition=seq, iteration=0, seq=seq, metric="elapsed_s",
                                 unit="s", value=scale * (1 + seq / 10)))
    return pd.DataFrame(rows)


def test_measurements_of_two_servers_are_drawn_apart_never_pooled():
    from claimlab import figures
    results = _two_servers()
    observed = [ax for ax in figures.observations(results).axes if ax.get_visible()]
    assert [ax.get_title().split("\n")[0] for ax in observed] == ["MariaDB 10.11.19", "MySQL 9.7.4"]
    assert [len(ax.collections[-1].get_offsets()) for ax in observed] == [4, 4]   # binlog=on: its server's 4
    ordered = figures.run_order(results).axes
    assert [ax.get_title().split("\n")[0] for ax in ordered] == ["MariaDB 10.11.19", "MySQL 9.7.4"]
    assert [ax.get_legend() is not None for ax in ordered] == [True, False]       # one legend, readable
    assert min(t.get_fontsize() for t in ordered[0].get_legend().get_texts()) >= 9
    single = figures.observations(results[results["target"] == "mysql"]).axes[0]
    assert single.get_title() == "insert_loop: elapsed_s"
