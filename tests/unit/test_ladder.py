"""The version ladder: each claim's main comparison on each server in release order (5.7 → 8.0.27
→ 8.0.40 → a patched 8.0.40 → 9.7), MariaDB apart; a fork told from its release by its archive;
a ratio between two servers is a rung of its treatment's server; absent servers are absent.
Synthetic tables first, then the shipped runs (MariaDB 10.11 and MySQL 9.7.4 only)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from claimlab import ladder

NAN = math.nan


def _row(claim, comparison, target, estimate, *, baseline="x=a", treatment="x=b", published=2.0, version="",
         workload="w", metric="elapsed_s", kind="effect"):
    return {"claim": claim, "comparison": comparison, "kind": kind, "workload": workload, "metric": metric,
            "baseline": baseline, "treatment": treatment, "target": target, "server_version": version,
            "estimate": estimate, "ci_low": estimate * 0.9 if estimate == estimate else NAN,
            "ci_high": estimate * 1.1 if estimate == estimate else NAN, "confidence": 0.95,
            "published_ratio": published, "verdict": "supported", "verdict_label": "supported"}


SERVERS = pd.DataFrame([
    {"claim": "C1", "target": "mysql", "version": "9.7.4-2", "archive": "", "origin": "Debian package"},
    {"claim": "C1", "target": "mariadb", "version": "10.11.19-MariaDB-0+deb12u1, 10.11.19-MariaDB-0+deb12u1-log",
     "archive": "", "origin": "OS package"},
    {"claim": "C1", "target": "fork", "version": "8.0.40", "origin": "source build",
     "archive": "mysql-8.0.40-enhanced-linux-glibc2.36-x86_64.tar.xz"},
    {"claim": "C1", "target": "mysql80", "version": "8.0.40", "origin": "source build",
     "archive": "mysql-8.0.40-linux-glibc2.36-x86_64.tar.xz"},
    {"claim": "C1", "target": "mysql57", "version": "5.7.23-log", "origin": "vendor tarball",
     "archive": "mysql-5.7.23-linux-glibc2.36-x86_64.tar.xz"},
    {"claim": "C1", "target": "mysql8027", "version": "8.0.27", "origin": "source build",
     "archive": "mysql-8.0.27-linux-glibc2.36-x86_64.tar.xz"},
])


def test_servers_are_ordered_by_release_a_fork_after_its_release_and_mariadb_apart():
    # declared in no order at all: the ladder sorts, it does not keep the table's order
    table = pd.DataFrame([_row("C1", "main", t, e) for t, e in
                          [("mariadb", 1.1), ("fork", 1.2), ("mysql", 1.9), ("mysql57", 1.3),
                           ("mysql80", 1.7), ("mysql8027", 1.5)]])
    rungs = ladder.ladder(table, SERVERS)
    assert list(rungs["server"]) == ["MySQL 5.7.23", "MySQL 8.0.27", "MySQL 8.0.40", "MySQL 8.0.40 (enhanced build)",
                                     "MySQL 9.7.4", "MariaDB 10.11.19"]
    assert list(rungs["estimate"]) == [1.3, 1.5, 1.7, 1.2, 1.9, 1.1]
    assert list(rungs["family"]) == ["mysql"] * 5 + ["mariadb"]
    assert set(rungs["role"]) == {"measured"}
    assert rungs.set_index("server").loc["MySQL 8.0.40 (enhanced build)", "origin"] == "source build"


def test_a_build_is_read_from_the_archive_name_and_the_release_from_the_version_string():
    assert ladder.archive_build("mysql-8.0.40-enhanced-linux-glibc2.36-x86_64.tar.xz") == "enhanced"
    assert ladder.archive_build("/mirror/mysql-8.0.40-linux-glibc2.28-x86_64.tar.xz") == ""
    assert ladder.archive_build(None) == ""
    assert ladder.server_of("9.7.4-2").label == "MySQL 9.7.4"
    assert ladder.server_of("10.11.19-MariaDB-0+deb12u1-log").family == "mariadb"
    # two releases pooled under one target: ordered as the newer, both named
    mixed = ladder.server_of("9.7.3-1, 9.7.4-2")
    assert mixed.release == (9, 7, 4) and mixed.label == "MySQL 9.7.3, 9.7.4"
    assert ladder.server_of("") is None
    # 10 sorts after 9 (numbers, not strings), and a build after its release
    order = sorted([ladder.server_of("10.0.1"), ladder.server_of("9.7.4"),
                    ladder.server_of("8.0.40", "mysql-8.0.40-x-linux.tar.xz"), ladder.server_of("8.0.40")],
                   key=lambda s: s.order)
    assert [s.label for s in order] == ["MySQL 8.0.40", "MySQL 8.0.40 (x build)", "MySQL 9.7.4", "MySQL 10.0.1"]


def test_the_main_comparison_is_the_first_measured_with_a_published_ratio():
    table = pd.DataFrame([
        _row("C3", "versions", "", NAN, published=3.3),                 # needs 5.7: not measured here
        _row("C3", "no_size", "mysql", 1.4, published=NAN),
        _row("C3", "settings", "mysql", 2.8, baseline="server=v57", published=3.3),
        _row("C3", "settings", "mariadb", 2.5, baseline="server=v57", published=3.3),
    ])
    assert ladder.main_comparison(table) == "settings"
    assert ladder.main_comparison(table.assign(published_ratio=NAN)) == "no_size"
    assert ladder.main_comparison(table.assign(estimate=NAN)) is None
    rungs = ladder.ladder(table, SERVERS.assign(claim="C3"))
    assert list(rungs["comparison"]) == ["settings", "settings"]
    assert list(rungs["server"]) == ["MySQL 9.7.4", "MariaDB 10.11.19"]


def test_a_ratio_between_two_servers_is_a_rung_of_its_treatment_relative_to_the_base():
    """C3 as the mirror's run measures it: 8.0.40 and 9.7.4's defaults each against 5.7.23 in one
    design; 8.0.40 with skip-log-bin is another question (published 1.15), not a rung."""
    conditions = {("C3", "server=mysql57"): "mysql57", ("C3", "server=mysql80"): "mysql80",
                  ("C3", "server=defaults"): "mysql", ("C3", "server=skip"): "mysql80"}
    table = pd.DataFrame([
        _row("C3", "v80_vs_v57", "mysql57+mysql80", 3.1, baseline="server=mysql57", treatment="server=mysql80",
             published=3.3),
        _row("C3", "skip_vs_v57", "mysql57+mysql80", 1.2, baseline="server=mysql57", treatment="server=skip",
             published=1.15),
        _row("C3", "v97_vs_v57", "mysql+mysql57", 3.4, baseline="server=mysql57", treatment="server=defaults",
             published=3.3),
        # the same question on one server (option sets), a sibling: it may not add a second 9.7.4 rung
        _row("C3", "defaults_vs_v57_values", "mysql", 2.8, baseline="server=mysql57", treatment="server=defaults",
             published=3.3),
    ])
    rungs = ladder.ladder(table, SERVERS.assign(claim="C3"), conditions)
    assert list(rungs["server"]) == ["MySQL 5.7.23", "MySQL 8.0.40", "MySQL 9.7.4"]
    assert list(rungs["role"]) == ["base", "measured", "measured"]
    assert list(rungs["comparison"]) == ["v80_vs_v57", "v80_vs_v57", "v97_vs_v57"]
    assert list(rungs["relative_to"]) == ["", "MySQL 5.7.23", "MySQL 5.7.23"]
    base = rungs.iloc[0]
    assert base["estimate"] == 1.0 and math.isnan(base["ci_low"]) and base["verdict"] == ""
    # Before: the base row read the published 3.3, as if 5.7.23 had a ratio of its own.
    assert math.isnan(base["published_ratio"])
    page = ladder.table_html(rungs)
    head = re.findall(r"<th>([^<]*)</th>", page)
    shown = dict(zip(head, re.findall(r"<td[^>]*>([^<]*)</td>", page.split("<tbody>")[1].split("</tr>")[0])))
    assert shown["server"] == "MySQL 5.7.23" and shown["published"] == "—"
    assert shown["ratio [interval]"] == "none of its own: 1, the base of the ratios of MySQL 8.0.40 and MySQL 9.7.4"
    # without the conditions' targets a between-server row cannot be placed: left out, never guessed
    assert ladder.ladder(table, SERVERS.assign(claim="C3"))["server"].tolist() == ["MySQL 9.7.4"]
    # `defaults` runs on each run's own target (MariaDB's run and MySQL's): the row's pair picks
    both = conditions | {("C3", "server=defaults"): {"mariadb", "mysql"}}
    assert ladder.ladder(table, SERVERS.assign(claim="C3"), both)["server"].tolist() == \
        ["MySQL 5.7.23", "MySQL 8.0.40", "MySQL 9.7.4"]


def test_servers_absent_from_the_runs_are_absent_and_claims_keep_their_order():
    table = pd.DataFrame([_row("C2", "scan", "mysql", 1.44), _row("C1", "oltp", "mariadb", 0.87),
                          _row("C4", "binlog", "mysql", NAN)])
    servers = pd.concat([SERVERS.assign(claim=c) for c in ("C1", "C2", "C4")])
    rungs = ladder.ladder(table, servers)
    assert list(zip(rungs["claim"], rungs["server"])) == [("C2", "MySQL 9.7.4"), ("C1", "MariaDB 10.11.19")]
    assert ladder.ladder(table.iloc[:0], servers).empty
    html = ladder.table_html(rungs)
    assert "MariaDB 10.11.19 (apart)" in html and "1.44 [1.30, 1.58]" in html
    assert "No claim" in ladder.table_html(rungs.iloc[:0])


def test_stored_runs_give_each_claim_a_rung_on_the_server_that_ran_it():
    """The frozen C1 and C4 runs (MariaDB, the one run format 1 with its target named `default`):
    a rung per claim at its main comparison, the server read from its versions, the origin from
    the target's kind where the run recorded none."""
    from claimlab import report
    from conftest import RAW, frozen_id
    rungs = ladder.of_analyses(report.analyze_runs([frozen_id("c1"), frozen_id("format_1")], RAW))
    assert list(rungs["claim"]) == ["C1", "C4"]
    assert list(rungs["server"]) == ["MariaDB 10.11.19"] * 2
    assert list(rungs["comparison"]) == ["mismatch_vs_latin1", "binlog_on_vs_off"]
    assert set(rungs["origin"]) == {"OS package"}


def test_the_ladder_figure_draws_a_dot_and_interval_per_server_in_release_order():
    from claimlab import figures
    conditions = {("C3", "server=mysql57"): "mysql57", ("C3", "server=mysql80"): "mysql80"}
    table = pd.DataFrame([
        _row("C3", "v80_vs_v57", "mysql57+mysql80", 3.1, baseline="server=mysql57", treatment="server=mysql80",
             published=3.3, workload="insert_loop"),
        _row("C3", "settings", "mariadb", 2.5, baseline="server=mysql57", treatment="server=v80", published=3.3,
             workload="insert_loop"),
    ])
    fig = figures.ladder(ladder.ladder(table, SERVERS.assign(claim="C3"), conditions))
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["MySQL 5.7.23\nbase of the ratios", "MySQL 8.0.40\nagainst MySQL 5.7.23",
                     "MariaDB 10.11.19\n(apart)"]
    positions = list(ax.get_xticks())
    assert positions[2] - positions[1] > positions[1] - positions[0]   # MariaDB apart
    dashed = [round(y, 3) for line in ax.get_lines() if line.get_linestyle() == "--" for y in line.get_ydata()]
    assert dashed == [3.3, 3.3]   # the published ratio, across the panel
    assert ax.get_yscale() == "log"
    assert ax.get_title(loc="left") == "C3: insert loop, elapsed time: each server against MySQL 5.7.23"
    assert "3.10 supported" in [t.get_text() for t in ax.texts]


def test_the_ladder_figure_labels_round_ratios_spread_on_the_log_scale():
    from claimlab import figures
    assert figures._spaced_ticks(0.98, 1.46) == [1.0, 1.1, 1.25, 1.4]
    assert figures._spaced_ticks(0.95, 3.5) == [1.0, 1.5, 2.0, 3.0]
    assert figures._spaced_ticks(1.01, 1.02) == [1.0]   # none in range: 1, as the forest plot does


def test_a_stored_runs_recorded_archive_and_origin_name_its_build(tmp_path):
    """A run that records its server programs (the manifest's provenance.servers, as tarball
    targets write it): the archive names the build, the origin is the recorded one."""
    import json
    import shutil

    from claimlab import report
    from conftest import frozen
    copy = tmp_path / "charset_mismatch" / frozen("c1").name   # MariaDB 10.11.19's run
    shutil.copytree(frozen("c1"), copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["provenance"]["servers"] = {"mariadb": {"version": "10.11.19", "origin": "source build",
                                                     "archive": "mariadb-10.11.19-patched-linux-systemd-x86_64.tar.gz"}}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    rungs = ladder.of_analyses(report.analyze_runs([copy.name], tmp_path))
    assert list(rungs["server"]) == ["MariaDB 10.11.19 (patched build)"]
    assert list(rungs["origin"]) == ["source build"]
    assert list(rungs["comparison"]) == ["mismatch_vs_latin1"]


def test_a_program_one_run_recorded_keeps_its_origin_beside_runs_that_only_declare_it(monkeypatch):
    # Before: C3's MariaDB run, read first, declares the tarball targets without running them, and
    # its empty origin stuck: the ladder gave 8.0.40 "—" where MySQL's run recorded "source build".
    from claimlab import store
    declared = {"mariadb": {"kind": "mariadb"}, "mysql80": {"kind": "mysql-tarball", "version": "8.0.40"}}
    manifests = {
        "run-mariadb": {"targets": declared, "provenance": {"servers": {}}, "conditions": []},
        "run-mysql80": {"targets": declared, "conditions": [], "provenance": {"servers": {"mysql80": {
            "origin": "source build", "archive": "mysql-8.0.40-linux-glibc2.36-x86_64.tar.xz"}}}}}
    monkeypatch.setattr(store, "read_manifest", lambda path: manifests[Path(path).name])
    monkeypatch.setattr(store, "read_jsonl", lambda path: [])
    results = pd.DataFrame({"target": ["mariadb", "mysql80"], "server_version": ["10.11.19-MariaDB", "8.0.40"]})
    servers, _ = ladder.stored_servers("C3", [Path(name) for name in manifests], results)
    found = servers.set_index("target")
    assert found.loc["mysql80", "origin"] == "source build"
    assert found.loc["mysql80", "archive"] == "mysql-8.0.40-linux-glibc2.36-x86_64.tar.xz"
    assert found.loc["mariadb", "origin"] == "OS package"   # declared only: its kind says it
