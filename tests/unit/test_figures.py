"""Plots live in claimlab.figures: the domain modules load without pyplot; the ablation waterfall
draws one bar per step between slow and fast with labels that never overlap; every level is
named by what it is; series are told apart; Chinese text is drawn in a CJK font."""

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


def _ablation(steps):
    rows = [dict(kind="total", option="all", mean=1.0, ratio=0.5, share=1.0, share_lo=1.0, share_hi=1.0)]
    return pd.DataFrame(rows + [dict(kind="cumulative", option=o, mean=m, ratio=m / 2, share=sh, share_lo=sh - 0.1,
                                     share_hi=sh + 0.1) for o, m, sh in steps])


def test_waterfall_draws_slow_each_step_and_fast():
    from claimlab import figures
    fig = figures.waterfall(_ablation([("log_bin", 1.4, 0.6), ("sync_binlog", 1.0, 0.4)]), "elapsed_s")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["slow", "+ log_bin", "+ sync_binlog", "fast"]
    widths = [round(p.get_width(), 3) for p in ax.patches]
    assert widths == [1.0, -0.3, -0.2, 0.5]          # slow = 2.0 s; 1.4 s; 1.0 s = fast
    assert "60% [50%, 70%]" in [t.get_text() for t in ax.texts]
    assert ax.get_xlabel() == "elapsed time relative to slow"


def test_the_waterfall_and_the_ablation_table_round_each_share_alike():
    # Before: the 05 page's figure read "0% [-48%, 29%]" where its table read 0.40%, and -144%
    # in a sentence where the table read -140%: three roundings of one share.
    from claimlab import attribution, figures
    table = _ablation([("log_bin", 1.4, 0.406), ("innodb_flush_neighbors", 1.5, -0.5), ("sync_binlog", 1.0, 0.004)])
    table = table.assign(ratio_lo=table["ratio"] * 0.9, ratio_hi=table["ratio"] * 1.1)
    table.loc[2, ["share_lo", "share_hi"]] = [-1.44, -0.11]
    drawn = [t.get_text() for t in figures.waterfall(table, "elapsed_s").axes[0].texts if "% [" in t.get_text()]
    page = attribution.attribution_html(table)
    assert drawn[1:] == ["-50% [-144%, -11%]", "0% [-10%, 10%]"]
    assert all(f"<td>{label}</td>" in page for label in drawn), (drawn, page)
    assert attribution.surprises(table) and drawn[1] in attribution.surprises(table)[0]


def _overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of drawn texts (labels, tick labels, titles) whose boxes intersect."""
    from matplotlib.text import Text
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:]
            if box_a.width > 0 and box_b.width > 0 and box_a.overlaps(box_b)]


def test_waterfall_labels_never_overlap_however_many_switches():
    # Before: ten switches' "share [low, high]" labels ran into each other above the bars.
    from claimlab import figures
    steps = [(f"innodb_option_number_{i}", 2.0 - 0.08 * i + (0.3 if i % 2 else 0), 0.1 * (i % 3) - 0.5)
             for i in range(10)]
    fig = figures.waterfall(_ablation(steps), "elapsed_s")
    fig.canvas.draw()
    assert _overlaps(fig) == []


def test_run_order_tells_every_series_apart_by_colour_and_marker():
    # Before: sixteen ablation steps in sixteen colours, and a legend whose colours could not be told apart.
    from matplotlib.colors import to_rgb

    from claimlab import figures
    steps = ["step=slow", "step=fast"] + [f"step={k}-opt{i}" for k in ("only", "upto") for i in range(7)]
    rows = [dict(run_id="r", target="mysql", server_version="9.7.4-2", workload="insert_loop", condition=c,
                 repetition=0, iteration=0, seq=i, metric="elapsed_s", unit="s", value=1.0 + i / 10)
            for i, c in enumerate(steps)]
    fig = figures.run_order(pd.DataFrame(rows))
    (legend,) = fig.legends
    names = [t.get_text() for t in legend.get_texts()]
    assert sorted(names) == ["fast", "one option switched", "options switched cumulatively", "slow"]
    colours = [to_rgb(h.get_markerfacecolor()) for h in legend.legend_handles]
    distances = [sum((x - y) ** 2 for x, y in zip(a, b)) ** 0.5 for i, a in enumerate(colours) for b in colours[i + 1:]]
    assert min(distances) > 0.25 and len(figures.PALETTE) <= 7, colours
    markers = {str(h.get_marker()) for h in legend.legend_handles}
    assert len(markers) == len(names)



def test_eight_levels_side_by_side_are_each_drawn_apart():
    """C3's versions side by side: eight levels, one more than the palette's colours; each
    series still gets a colour and marker pair of its own."""
    from matplotlib.colors import to_rgb

    from claimlab import figures
    levels = [f"server={name}" for name in ("defaults", "v57_values", "v80_binlog", "mysql57", "mysql80",
                                            "mysql80_skip_log_bin", "mysql8027", "mysql80fork")]
    rows = [dict(run_id="r", target="mysql", server_version="9.7.4-2", workload="insert_loop", condition=c,
                 repetition=0, iteration=0, seq=i, metric="elapsed_s", unit="s", value=1.0 + i / 10)
            for i, c in enumerate(levels)]
    (legend,) = figures.run_order(pd.DataFrame(rows)).legends
    pairs = {(to_rgb(h.get_markerfacecolor()), str(h.get_marker())) for h in legend.legend_handles}
    assert len(legend.get_texts()) == 8 and len(pairs) == 8

def test_a_chinese_title_is_drawn_in_a_cjk_font_not_as_boxes():
    import warnings

    import matplotlib.pyplot as plt

    from claimlab import figures
    fig, ax = plt.subplots()
    ax.set_title("愛可生: MySQL中Charset 和 Collation 設置對性能的影響")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    assert not [w for w in caught if "missing from font" in str(w.message)], [str(w.message) for w in caught]
    assert "Noto Sans CJK SC" in figures.FONTS


def _effect(**over):
    row = dict(claim="C2", comparison="uca_ai_vs_utf8mb3", target="mysql", server_version="9.7.4-2", estimate=1.7,
               ci_low=1.6, ci_high=1.9, published_ratio=1.29, verdict="supported", confidence=0.95,
               baseline="collation=utf8mb3_general_ci", treatment="collation=uca_ai", workload="varchar_scan")
    return {**row, **over}


def test_forest_plot_rows_say_which_comparison_on_which_server():
    from claimlab import figures
    table = pd.DataFrame([_effect(), _effect(target="mariadb", server_version="10.11.19-MariaDB-0+deb12u1, "
                                                                              "10.11.19-MariaDB-0+deb12u1-log"),
                          _effect(claim="C3", comparison="v80_vs_v57_insert", target="", server_version=None,
                                  estimate=None, ci_low=None, ci_high=None, verdict="not_tested", confidence=None,
                                  baseline="server=mysql57", treatment="server=mysql80", workload="insert_loop")])
    axes = figures.effects(table).axes[0]
    labels = [t.get_text() for t in axes.get_yticklabels()]
    assert labels == ["C2 utf8mb4_0900_ai_ci vs utf8mb3_general_ci — MySQL 9.7.4",
                      "C2 utf8mb4_uca1400_ai_ci vs utf8mb3_general_ci — MariaDB 10.11.19",
                      "C3 MySQL 8.0.40 vs MySQL 5.7.23 — not measured"]
    assert figures.effect_labels(table.iloc[:2]) == [
        "utf8mb4_0900_ai_ci vs utf8mb3_general_ci — MySQL 9.7.4",
        "utf8mb4_uca1400_ai_ci vs utf8mb3_general_ci — MariaDB 10.11.19"]   # one claim
    assert "measured (95% interval)" in [t.get_text() for t in axes.get_legend().get_texts()]
    mixed = figures.effects(table.assign(confidence=[0.975, 0.95, None])).axes[0]
    assert "measured (intervals at 95% or 97.5%, as the table says)" in [
        t.get_text() for t in mixed.get_legend().get_texts()]


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
    assert [t.get_text() for t in observed[0].get_yticklabels()] == ["binary log off", "binary log on"]
    fig = figures.run_order(results)
    assert [ax.get_title().split("\n")[0] for ax in fig.axes] == ["MariaDB 10.11.19", "MySQL 9.7.4"]
    assert [ax.get_legend() for ax in fig.axes] == [None, None] and len(fig.legends) == 1   # one legend, readable
    assert min(t.get_fontsize() for t in fig.legends[0].get_texts()) >= 9
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["binary log off", "binary log on"]
    single = figures.observations(results[results["target"] == "mysql"]).axes[0]
    assert single.get_title() == "insert loop: elapsed time" and single.get_xlabel() == "elapsed time (s)"


def test_without_a_rust_toolchain_setup_and_profiling_skip_flame_graphs_in_one_line(tmp_path, monkeypatch):
    """No cargo (so no inferno): `make flamegraph-tool` says so in one line and succeeds, so set-up
    goes on; the profiling step gets one line to print instead of its flame graphs."""
    import os
    import shutil

    from claimlab import profiling
    from conftest import ROOT
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("sh", "make", "test"):   # what the recipe needs, and no cargo or inferno beside them
        os.symlink(shutil.which(tool), bare / tool)
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "flamegraph-tool"], capture_output=True, text=True,
                          env={"PATH": str(bare), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["flame graphs skipped: no cargo here (to draw them: install Rust with "
                                        "rustup, then cargo install inferno)"] and done.stderr == ""
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.setenv("HOME", str(tmp_path))
    skipped = profiling.flamegraph_skip()
    assert skipped.startswith("flame graphs skipped: inferno-flamegraph not found") and "\n" not in skipped
