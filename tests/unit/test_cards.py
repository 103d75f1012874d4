"""Verdict cards, notes and verdict tables, from hand-built contract-5 verdict rows."""

import math

import pandas as pd

from claimlab import cards, wording


def _row(**over):
    row = dict(claim="C4", comparison="binlog_on_vs_off", kind="effect", target="mariadb",
               server_version="10.11.19-MariaDB-0+deb12u1", baseline="binlog=off", treatment="binlog=on",
               metric="elapsed_s", estimate=2.36, ci_low=2.07, ci_high=2.65, confidence=0.95, p_value=0.001,
               published_ratio=2.85, verdict="supported", verdict_label="supported, effect smaller than published",
               flagged_share=0.4, fast_share=math.nan, n_runs=1, n_blocks=10, verdict_note="")
    row.update(over)
    return pd.Series(row)


def test_size_relation_reads_the_right_way_round():
    assert cards.size_relation(_row()) == "effect smaller than published"           # 2.85 above [2.07, 2.65]
    assert cards.size_relation(_row(published_ratio=1.5)) == "effect larger than published"
    assert cards.size_relation(_row(estimate=0.9, ci_low=0.83, ci_high=0.99, published_ratio=0.75)) \
        == "effect smaller than published"
    assert cards.size_relation(_row(published_ratio=2.5)) == "published value inside the interval"


def test_card_names_server_analogue_and_flagged_share():
    card = cards.card_html(_row(), "mysql")
    assert "an analogue (MariaDB), not the MySQL server" in card
    assert "40% of measurements" in card and "read with care" in card
    assert "C4 · binary log on vs binary log off · MariaDB 10.11.19</span>" in card
    assert "<b>Compared:</b> binary log on against binary log off, elapsed time." in card
    assert "95% interval" in card
    # the published ratio as published, never rounded (1.025 read "1.02" at three digits)
    assert "<b>Claimed:</b> ratio 1.025 (2.5% higher)" in cards.card_html(_row(published_ratio=1.025), "mysql")
    mysql = cards.card_html(_row(server_version="9.7.0", flagged_share=math.nan), "mysql")
    assert "the claim&#x27;s own server family" in mysql and "not recorded" in mysql
    untested = cards.card_html(_row(server_version=math.nan, verdict="not_tested", n_blocks=math.nan), "mysql")
    assert "not measured: no server here ran both sides." in untested and "server starts" not in untested
    # the chance a rerun reads the same, where the table has it
    assert "On a rerun" not in card
    edge = cards.card_html(_row(rerun_chance=0.546), "mysql")
    assert "would read “supported, effect smaller than published” again with a chance of about 55%" in edge
    assert "over 99%" in cards.card_html(_row(rerun_chance=0.9996), "mysql")
    assert "On a rerun" not in cards.card_html(_row(verdict="not_tested", rerun_chance=0.5), "mysql")
    table = cards.verdict_table_html(pd.DataFrame([_row(rerun_chance=0.546)]))
    assert "<th>same on a rerun</th>" in table and ">about 55%<" in table


def test_a_slow_hour_is_said_on_the_card_and_once_per_claim_and_server():
    # BG's MySQL C2 run kept 7% of its scans in the fast state, BE's MariaDB run 43%
    slow = _row(claim="C2", comparison="uca_ai_vs_utf8mb3", experiment="collation_cost", target="mysql",
                server_version="9.7.4-2", fast_share=0.07)
    quiet = _row(claim="C2", comparison="uca_ai_vs_utf8mb3", experiment="collation_cost", target="mariadb",
                 fast_share=0.43)
    assert "fast state: 7% of the values — a slow hour, see the note." in cards.card_html(slow, "mysql")
    assert "fast state: 43% of the values." in cards.card_html(quiet, "mysql")
    assert "fast state" not in cards.card_html(_row(), "mysql")   # a plain mean has none
    rows = [slow, _row(**{**slow, "comparison": "unicode_vs_general", "fast_share": 0.12}), quiet, _row()]
    assert cards.slow_hour_lines(rows) == [
        "C2 on MySQL 9.7.4: only 7% of a comparison's values were in the fast state (under 20%): measured in a "
        "slow hour, so its intervals are wider and its estimates may sit at a level of their own. Rerun it at "
        "another time (claimlab run collation_cost --target mysql) and compare the runs (claimlab analyze RUN "
        "RUN gives each run's estimate and whether they differ)."]
    assert cards.slow_hour_lines([quiet, _row()]) == []
    table = cards.verdict_table_html(pd.DataFrame(rows).assign(rerun_chance=0.9))
    assert "<th>fast state</th>" in table and ">7%<" in table


def test_a_single_runs_verdict_near_an_edge_says_how_runs_together_settle_it():
    near = _row(claim="C2", comparison="utf8mb4_general_vs_utf8mb3", experiment="collation_cost", kind="null",
                baseline="collation=utf8mb3_general_ci", treatment="collation=utf8mb4_general_ci",
                verdict="contradicted", verdict_label="contradicted: higher than 1.05", edge_label="inconclusive")
    assert cards.edge_lines([near, _row(edge_label=math.nan)]) == [
        "C2 utf8mb4_general_ci vs utf8mb3_general_ci on MariaDB 10.11.19 reads “contradicted: higher than 1.05” "
        "near a decision edge (an interval 1.5x as wide or as narrow would read “inconclusive”), so one run does "
        "not settle it. Rerun it at other times (claimlab run collation_cost --target mariadb) and analyse four or "
        "more runs together, eight or more if the runs differ from each other (claimlab analyze RUN RUN ... says "
        "whether they do; two runs read wider than one)."]
    # comparisons not measured get no such line
    assert cards.edge_lines([_row(**{**near, "verdict": "not_tested"})]) == []


def test_a_comparison_of_servers_started_by_its_levels_is_rerun_with_the_runs_target():
    # C3's 8.0.40 vs 5.7.23 runs in the run on MySQL 9.7 (--target mysql), whose levels start the
    # tarball servers; its rows' target "mysql57+mysql80" is no params file's (it printed that before)
    near = _row(claim="C3", comparison="v80_vs_v57_insert", experiment="insert_57_vs_80",
                target="mysql57+mysql80", run_target="mysql", edge_label="inconclusive", fast_share=0.1)
    [line] = cards.edge_lines([near])
    assert "(claimlab run insert_57_vs_80 --target mysql)" in line
    [slow] = cards.slow_hour_lines([near])
    assert "(claimlab run insert_57_vs_80 --target mysql)" in slow
    # a row of one server keeps its own target; runs of several targets leave the combined one
    assert cards.rerun_target(_row(target="mysql80", run_target="mysql")) == "mysql80"
    assert cards.rerun_target(_row(target="mysql57+mysql80", run_target="mysql mysql80")) == "mysql57+mysql80"


def test_runs_together_near_an_edge_say_how_many_more_runs_would_settle_it():
    near = dict(claim="C2", comparison="utf8mb4_general_vs_utf8mb3", experiment="collation_cost", kind="null",
                baseline="collation=utf8mb3_general_ci", treatment="collation=utf8mb4_general_ci",
                verdict="supported", verdict_label="supported: no difference within ±5%", edge_label="inconclusive",
                n_runs=4, sd_unit=0.0123, runs_to_settle=11.0)
    assert cards.edge_lines([_row(**near)]) == [
        "C2 utf8mb4_general_ci vs utf8mb3_general_ci on MariaDB 10.11.19 reads “supported: no difference within "
        "±5%” over 4 runs analysed together, near a decision edge (an interval 1.5x as wide or as narrow would read "
        "“inconclusive”). At these runs' spread (their estimates' sd 1.2%) about 11 runs together would read "
        "alike with 95% chance: 7 more (claimlab run collation_cost --target mariadb, then analyse them all "
        "together)."]
    # runs whose spread already settles it, and tables from before the count, get no line
    assert cards.edge_lines([_row(**{**near, "runs_to_settle": 4.0}), _row(**{**near, "runs_to_settle": math.nan}),
                                 _row(**{k: v for k, v in near.items() if k != "runs_to_settle"})]) == []


def test_cards_of_two_servers_share_one_row():
    table = pd.DataFrame([_row(), _row(target="mysql", server_version="9.7.0")])
    html = cards.cards_html(table)
    assert html.count("class='card-row'") == 1 and html.count("class='card ") == 2


def test_note_of_a_comparison_no_server_ran_names_the_target_not_nan():
    note = cards.note_html(_row(server_version=math.nan, target="mysql80", verdict="not_tested",
                                    verdict_label="not tested", verdict_note="not tested: no rows for mysql80"))
    assert "</b> on target mysql80: not tested.<br>not measured.</p>" in note and "nan" not in note
    assert "<li>no rows for mysql80</li>" in note
    assert "on MariaDB 10.11.19: supported" in cards.note_html(_row())


def test_a_note_is_two_lines_with_the_analysis_in_a_collapsed_block():
    # Before: one paragraph per comparison carrying its whole note, up to 190 row ids.
    kept = ", ".join(f"run: seq {i} iteration 0 binlog=on" for i in range(190))
    note = cards.note_html(_row(verdict_note="the interval lies beyond 1 ± 0.05 on the claimed side (higher); "
                                                 "t interval over 8 blocks (df 7; paired); kept: " + kept))
    shown, collapsed = note.split("<details>")
    assert shown.count("<br>") == 1 and "seq 1 " not in shown
    assert ("ratio 2.36 [2.07, 2.65], 95% interval; the interval lies beyond 1 ± 0.05 on the claimed side "
            "(higher).") in shown
    assert collapsed.startswith("<summary>") and "<li>t interval over 8 blocks (df 7; paired)</li>" in collapsed
    assert "seq 189 " in collapsed
    assert cards.note_parts("a (b; c); d") == ["a (b; c)", "d"]


def test_levels_and_comparisons_are_named_by_what_they_are_never_by_their_key():
    both = "utf8mb4_0900_ai_ci (MySQL) / utf8mb4_uca1400_ai_ci (MariaDB)"
    assert wording.level_words("collation=uca_ai") == both
    assert wording.level_words("collation=uca_ai", "mariadb") == "utf8mb4_uca1400_ai_ci"
    assert wording.level_words("collation_uca_ai", "mysql") == "utf8mb4_0900_ai_ci"   # CPU evidence's spelling
    assert wording.level_words("collation=utf8mb3_general_ci") == "utf8mb3_general_ci"
    assert wording.level_words("step=upto-log_bin") == "up to log_bin"
    assert wording.baseline_words("server=v57_values insert_loop/elapsed_s") == \
        "5.7 values (insert loop, elapsed time)"
    c3 = _row(claim="C3", comparison="defaults80_vs_defaults57_insert", baseline="server=v57_values",
              treatment="server=v80_binlog", workload="insert_loop")
    assert wording.comparison_words(c3) == "8.0 binlog defaults vs 5.7 values"
    assert wording.comparison_words(c3, workload=True) == "8.0 binlog defaults vs 5.7 values (insert loop)"
    c2 = _row(claim="C2", comparison="uca_ai_vs_utf8mb3", baseline="collation=utf8mb3_general_ci",
              treatment="collation=uca_ai", server_version="9.7.4-2")
    assert wording.comparison_words(c2) == "utf8mb4_0900_ai_ci vs utf8mb3_general_ci"
    # two servers, the target's own with its defaults: named by its version (it read "the server's
    # own defaults vs MySQL 5.7.23", beside the 9.7.4 option sets' "the server's own defaults vs 5.7 values")
    v97 = _row(claim="C3", comparison="v97_vs_v57_insert", baseline="server=mysql57", treatment="server=defaults",
               target="mysql+mysql57", server_version="5.7.23, 9.7.4-2")
    assert wording.comparison_words(v97) == "MySQL 9.7.4 vs MySQL 5.7.23"
    c4 = _row(treatment="binlog=log_bin_OFF", baseline="binlog=on")     # it read "log_bin_OFF vs binary log on"
    assert wording.comparison_words(c4) == "log_bin=OFF in the option file vs binary log on"
    table = pd.DataFrame([c2, c3]).assign(rerun_chance=0.9)
    pages = cards.cards_html(table) + cards.verdict_table_html(table) + cards.notes_html(table)
    for key in ("uca_ai", "v80_binlog", "v57_values", "defaults80", "_vs_", "elapsed_s"):
        assert key not in pages, key


def test_a_table_states_its_interval_level_once_and_exactly():
    assert wording.level(0.975) == "97.5%" and wording.level(0.95) == "95%"
    rows = [_row(confidence=0.975), _row(comparison="b_vs_a", confidence=0.95),
            _row(comparison="c_vs_a", confidence=0.975)]
    html = cards.verdict_table_html(pd.DataFrame(rows).assign(rerun_chance=0.9))
    assert html.count("<table") == 2 and html.count("Intervals at 97.5%") == 1 and html.count("Intervals at 95%") == 1
    assert "98%" not in html and "95% low" not in html and "<th>low</th>" in html
    assert "97.5% interval" in cards.card_html(_row(confidence=0.975), "mysql")


def test_a_ratio_far_out_is_said_as_such_in_the_verdict_table():
    # Before: two blocks at 98.75% read "0.0000000000000000000000000000000239" to "35,199,000":
    # a table 1,565 px wide on a 1,280 px page
    assert cards.bounded_ratio(2.39e-32) == "< 0.001" and cards.bounded_ratio(3.52e7) == "> 1,000"
    assert cards.bounded_ratio(0.918) == "0.918" and cards.bounded_ratio(math.nan) == "—"
    table = cards.verdict_table_html(pd.DataFrame([_row(estimate=0.918, ci_low=2.39e-32, ci_high=3.52e7,
                                                      rerun_chance=0.5)]))
    assert ">&lt; 0.001<" in table and ">&gt; 1,000<" in table and "00000" not in table
