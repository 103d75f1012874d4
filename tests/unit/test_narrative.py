"""Verdict cards and people-formatted tables, from hand-built contract-5 verdict rows."""

import math

import numpy as np
import pandas as pd

from claimlab import narrative


def _row(**over):
    row = dict(claim="C4", comparison="binlog_on_vs_off", kind="effect", target="mariadb",
               server_version="10.11.19-MariaDB-0+deb12u1", baseline="binlog=off", treatment="binlog=on",
               metric="elapsed_s", estimate=2.36, ci_low=2.07, ci_high=2.65, confidence=0.95, p_value=0.001,
               published_ratio=2.85, verdict="supported", verdict_label="supported, effect smaller than published",
               flagged_share=0.4, fast_share=math.nan, n_runs=1, n_blocks=10, verdict_note="")
    row.update(over)
    return pd.Series(row)


def test_numbers_for_people_have_no_scientific_notation_nan_or_booleans():
    assert narrative.number(0.0000131) == "0.0000131"
    assert narrative.number(98272.4) == "98,300"
    # rounding up across a power of ten keeps `digits` significant digits, not one more
    assert narrative.number(0.0001) == "0.000100"
    assert narrative.number(0.000099996) == "0.000100"
    assert narrative.number(0.00099996) == "0.00100"
    assert narrative.number(999.96) == "1,000"
    assert narrative.number(9.9996) == "10.0"
    assert narrative.number(10) == "10" and narrative.number(12345) == "12,300"
    assert narrative.number(-0.000099996) == "-0.000100"
    assert narrative.number(np.int64(10)) == "10" and narrative.number(np.float64(0.000099996)) == "0.000100"
    assert narrative.number(math.nan) == "—" and narrative.number(None) == "—"
    assert narrative.number(True) == "yes"
    html = narrative.table_html(pd.DataFrame({"a": [1.23456e-5, math.nan], "b": [True, None]}))
    for bad in ("e-05", "nan", "NaN", "None", "True", "<th></th>"):
        assert bad not in html
    html = narrative.table_html(pd.DataFrame({"slow": ["90.000000", "0.000000", "0.150000", "8.0.40", "O_DIRECT"],
                                              "why": ["cumulative", "x" * 30, "", "", ""]}))
    assert ">90<" in html and ">0<" in html and ">0.15<" in html and ">8.0.40<" in html
    assert "<td>cumulative</td>" in html and "<td class=long>" + "x" * 30 in html   # only long words may break


def test_size_relation_reads_the_right_way_round():
    assert narrative.size_relation(_row()) == "effect smaller than published"           # 2.85 above [2.07, 2.65]
    assert narrative.size_relation(_row(published_ratio=1.5)) == "effect larger than published"
    assert narrative.size_relation(_row(estimate=0.9, ci_low=0.83, ci_high=0.99, published_ratio=0.75)) \
        == "effect smaller than published"
    assert narrative.size_relation(_row(published_ratio=2.5)) == "published value inside the interval"


def test_card_names_server_analogue_and_flagged_share():
    card = narrative.card_html(_row(), "mysql")
    assert "an analogue (MariaDB), not the MySQL server" in card
    assert "40% of measurements" in card and "read with care" in card
    assert "C4 · binary log on vs binary log off · MariaDB 10.11.19</span>" in card
    assert "<b>Compared:</b> binary log on against binary log off, elapsed time." in card
    assert "95% interval" in card
    # the published ratio as published, never rounded (1.025 read "1.02" at three digits)
    assert "<b>Claimed:</b> ratio 1.025 (2.5% higher)" in narrative.card_html(_row(published_ratio=1.025), "mysql")
    mysql = narrative.card_html(_row(server_version="9.7.0", flagged_share=math.nan), "mysql")
    assert "the claim&#x27;s own server family" in mysql and "not recorded" in mysql
    untested = narrative.card_html(_row(server_version=math.nan, verdict="not_tested", n_blocks=math.nan), "mysql")
    assert "not measured: no server here ran both sides." in untested and "server starts" not in untested
    # the chance a rerun reads the same, where the table has it
    assert "On a rerun" not in card
    edge = narrative.card_html(_row(rerun_chance=0.546), "mysql")
    assert "would read “supported, effect smaller than published” again with a chance of about 55%" in edge
    assert "over 99%" in narrative.card_html(_row(rerun_chance=0.9996), "mysql")
    assert "On a rerun" not in narrative.card_html(_row(verdict="not_tested", rerun_chance=0.5), "mysql")
    table = narrative.verdict_table_html(pd.DataFrame([_row(rerun_chance=0.546)]))
    assert "<th>same on a rerun</th>" in table and ">about 55%<" in table


def test_a_slow_hour_is_said_on_the_card_and_once_per_claim_and_server():
    # BG's MySQL C2 run kept 7% of its scans in the fast state, BE's MariaDB run 43%
    slow = _row(claim="C2", comparison="uca_ai_vs_utf8mb3", experiment="collation_cost", target="mysql",
                server_version="9.7.4-2", fast_share=0.07)
    quiet = _row(claim="C2", comparison="uca_ai_vs_utf8mb3", experiment="collation_cost", target="mariadb",
                 fast_share=0.43)
    assert "fast state: 7% of the values — a slow hour, see the note." in narrative.card_html(slow, "mysql")
    assert "fast state: 43% of the values." in narrative.card_html(quiet, "mysql")
    assert "fast state" not in narrative.card_html(_row(), "mysql")   # a plain mean has none
    rows = [slow, _row(**{**slow, "comparison": "unicode_vs_general", "fast_share": 0.12}), quiet, _row()]
    assert narrative.slow_hour_lines(rows) == [
        "C2 on MySQL 9.7.4: only 7% of a comparison's values were in the fast state (under 20%): measured in a "
        "slow hour, so its intervals are wider and its estimates may sit at a level of their own. Rerun it at "
        "another time (claimlab run collation_cost --target mysql) and compare the runs (claimlab analyze RUN "
        "RUN gives each run's estimate and whether they differ)."]
    assert narrative.slow_hour_lines([quiet, _row()]) == []
    table = narrative.verdict_table_html(pd.DataFrame(rows).assign(rerun_chance=0.9))
    assert "<th>fast state</th>" in table and ">7%<" in table


def test_a_single_runs_verdict_near_an_edge_says_how_runs_together_settle_it():
    near = _row(claim="C2", comparison="utf8mb4_general_vs_utf8mb3", experiment="collation_cost", kind="null",
                verdict="contradicted", verdict_label="contradicted: higher than 1.05", edge_label="inconclusive")
    assert narrative.edge_lines([near, _row(edge_label=math.nan)]) == [
        "C2 utf8mb4_general vs utf8mb3 on MariaDB 10.11.19 reads “contradicted: higher than 1.05” near a decision "
        "edge (an interval 1.5x as wide or as narrow would read “inconclusive”), so one run does not settle it. "
        "Rerun it at other times (claimlab run collation_cost --target mariadb) and analyse four or more runs "
        "together, eight or more if the runs differ from each other (claimlab analyze RUN RUN ... says whether "
        "they do; two runs read wider than one)."]
    # comparisons not measured get no such line
    assert narrative.edge_lines([_row(**{**near, "verdict": "not_tested"})]) == []


def test_runs_together_near_an_edge_say_how_many_more_runs_would_settle_it():
    near = dict(claim="C2", comparison="utf8mb4_general_vs_utf8mb3", experiment="collation_cost", kind="null",
                verdict="supported", verdict_label="supported: no difference within ±5%", edge_label="inconclusive",
                n_runs=4, sd_unit=0.0123, runs_to_settle=11.0)
    assert narrative.edge_lines([_row(**near)]) == [
        "C2 utf8mb4_general vs utf8mb3 on MariaDB 10.11.19 reads “supported: no difference within ±5%” over 4 "
        "runs analysed together, near a decision edge (an interval 1.5x as wide or as narrow would read "
        "“inconclusive”). At these runs' spread (their estimates' sd 1.2%) about 11 runs together would read "
        "alike with 95% chance: 7 more (claimlab run collation_cost --target mariadb, then analyse them all "
        "together)."]
    # runs whose spread already settles it, and tables from before the count, get no line
    assert narrative.edge_lines([_row(**{**near, "runs_to_settle": 4.0}), _row(**{**near, "runs_to_settle": math.nan}),
                                 _row(**{k: v for k, v in near.items() if k != "runs_to_settle"})]) == []


def test_server_names_read_as_a_person_says_them():
    assert narrative.server_name("10.11.19-MariaDB-0+deb12u1, 10.11.19-MariaDB-0+deb12u1-log") == "MariaDB 10.11.19"
    assert narrative.server_name("9.7.4-2") == "MySQL 9.7.4"
    assert narrative.server_name("5.7.44-log, 8.0.40") == "MySQL 5.7.44, MySQL 8.0.40"
    assert narrative.server_name(math.nan, "mysql80") == "target mysql80" and narrative.server_name(None) == ""
    results = pd.DataFrame({"target": ["mariadb", "mariadb", "mysql"],
                            "server_version": ["10.11.19-MariaDB-0+deb12u1-log", "10.11.19-MariaDB-0+deb12u1",
                                               "9.7.4-2"]})
    assert narrative.server_names(results) == {"mariadb": "MariaDB 10.11.19", "mysql": "MySQL 9.7.4"}


def test_claim_family_is_the_sources_server_not_a_multiplicity_family():
    from claimlab.claims import load_claims
    from claimlab.store import project_root
    claims = load_claims(project_root() / "data" / "claims.yaml")
    families = {c: narrative.claim_family(claims[c]) for c in ("C1", "C2", "C4")}
    assert families == dict.fromkeys(("C1", "C2", "C4"), "mysql")


def test_cards_of_two_servers_share_one_row():
    table = pd.DataFrame([_row(), _row(target="mysql", server_version="9.7.0")])
    html = narrative.cards_html(table)
    assert html.count("class='card-row'") == 1 and html.count("class='card ") == 2


def _cost(metric, mean, server=None):
    row = dict(workload="w", condition="a", metric=metric, unit="1/op", n_reps=2, mean=mean, lo=mean * 0.9,
               hi=mean * 1.1, contention="included")
    return {**row, **({"server": server} if server else {})}


def test_cost_view_drops_all_zero_costs_and_scales_each_cost_to_read_without_leading_zeros():
    view = narrative.cost_view(pd.DataFrame([_cost("server_cpu_user_s/op", 1.3e-5),
                                             _cost("status.Binlog_commits/op", 0.0)]))
    assert view.to_dict("records") == [{"cost": "server CPU, user", "condition": "a",
                                        "mean [95% interval]": "13.0 [11.7, 14.3]", "unit": "µs/op"}]
    view = narrative.cost_view(pd.DataFrame([_cost("client_cpu_s/op", 2.27e-9, "MySQL 9.7.4"),
                                             _cost("client_cpu_s/op", 2.5e-8, "MariaDB 10.11.19"),
                                             _cost("status.Innodb_os_log_fsyncs/op", 4.15e-4, "MySQL 9.7.4"),
                                             _cost("status.Innodb_os_log_fsyncs/op", 1.01, "MariaDB 10.11.19"),
                                             _cost("server_ctx_voluntary/op", 3.5e-3, "MySQL 9.7.4")]))
    assert list(view.columns) == ["cost", "condition", "MariaDB 10.11.19", "MySQL 9.7.4", "unit"]   # side by side
    assert list(view["unit"]) == ["ns/op", "fsyncs/op", "switches per 1,000 ops"]
    assert view.iloc[0, 2:4].tolist() == ["25.0 [22.5, 27.5]", "2.27 [2.04, 2.50]"]
    # one scale per cost, shared by the servers: MySQL's 0.000415 fsyncs/op stays comparable to MariaDB's 1.01
    assert view.iloc[1, 2:4].tolist() == ["1.01 [0.909, 1.11]", "0.000415 [0.000374, 0.000457]"]
    assert view.iloc[2, 2:4].tolist() == ["—", "3.50 [3.15, 3.85]"]
    assert narrative.cost_scale(4.15e-4, "fsyncs") == (1e6, "fsyncs per million ops")
    assert narrative.cost_scale(1e-12, "s") == (1e9, "ns/op")        # the finest scale, never beyond


def test_top_function_shares_line_up_with_one_decimal():
    html = narrative.table_html(pd.DataFrame({"function": ["f", "g"], "on (% of samples)": [12.9, 0.0],
                                              "off (% of samples)": [0.9, 7.0]}), default=narrative.share_points)
    assert ">12.9<" in html and ">0.9<" in html and ">7.0<" in html and ">—<" in html and ">f<" in html


def test_note_of_a_comparison_no_server_ran_names_the_target_not_nan():
    note = narrative.note_html(_row(server_version=math.nan, target="mysql80", verdict="not_tested",
                                    verdict_label="not tested", verdict_note="not tested: no rows for mysql80"))
    assert "</b> on target mysql80: not tested.<br>not measured.</p>" in note and "nan" not in note
    assert "<li>no rows for mysql80</li>" in note
    assert "on MariaDB 10.11.19: supported" in narrative.note_html(_row())


def test_a_note_is_two_lines_with_the_analysis_in_a_collapsed_block():
    # Before: one paragraph per comparison carrying its whole note, up to 190 row ids.
    kept = ", ".join(f"run: seq {i} iteration 0 binlog=on" for i in range(190))
    note = narrative.note_html(_row(verdict_note="the interval lies beyond 1 ± 0.05 on the claimed side (higher); "
                                                 "t interval over 8 blocks (df 7; paired); kept: " + kept))
    shown, collapsed = note.split("<details>")
    assert shown.count("<br>") == 1 and "seq 1 " not in shown
    assert ("ratio 2.36 [2.07, 2.65], 95% interval; the interval lies beyond 1 ± 0.05 on the claimed side "
            "(higher).") in shown
    assert collapsed.startswith("<summary>") and "<li>t interval over 8 blocks (df 7; paired)</li>" in collapsed
    assert "seq 189 " in collapsed
    assert narrative.note_parts("a (b; c); d") == ["a (b; c)", "d"]


def test_levels_and_comparisons_are_named_by_what_they_are_never_by_their_key():
    both = "utf8mb4_0900_ai_ci (MySQL) / utf8mb4_uca1400_ai_ci (MariaDB)"
    assert narrative.level_words("collation=uca_ai") == both
    assert narrative.level_words("collation=uca_ai", "mariadb") == "utf8mb4_uca1400_ai_ci"
    assert narrative.level_words("collation_uca_ai", "mysql") == "utf8mb4_0900_ai_ci"   # CPU evidence's spelling
    assert narrative.level_words("collation=utf8mb3_general_ci") == "utf8mb3_general_ci"
    assert narrative.level_words("step=upto-log_bin") == "up to log_bin"
    assert narrative.baseline_words("server=v57_values insert_loop/elapsed_s") == \
        "5.7 values (insert loop, elapsed time)"
    c3 = _row(claim="C3", comparison="defaults80_vs_defaults57_insert", baseline="server=v57_values",
              treatment="server=v80_binlog", workload="insert_loop")
    assert narrative.comparison_words(c3) == "8.0 binlog defaults vs 5.7 values"
    assert narrative.comparison_words(c3, workload=True) == "8.0 binlog defaults vs 5.7 values (insert loop)"
    c2 = _row(claim="C2", comparison="uca_ai_vs_utf8mb3", baseline="collation=utf8mb3_general_ci",
              treatment="collation=uca_ai", server_version="9.7.4-2")
    assert narrative.comparison_words(c2) == "utf8mb4_0900_ai_ci vs utf8mb3_general_ci"
    table = pd.DataFrame([c2, c3]).assign(rerun_chance=0.9)
    pages = narrative.cards_html(table) + narrative.verdict_table_html(table) + narrative.notes_html(table)
    for key in ("uca_ai", "v80_binlog", "v57_values", "defaults80", "_vs_", "elapsed_s"):
        assert key not in pages, key


def test_a_table_states_its_interval_level_once_and_exactly():
    assert narrative.level(0.975) == "97.5%" and narrative.level(0.95) == "95%"
    rows = [_row(confidence=0.975), _row(comparison="b_vs_a", confidence=0.95),
            _row(comparison="c_vs_a", confidence=0.975)]
    html = narrative.verdict_table_html(pd.DataFrame(rows).assign(rerun_chance=0.9))
    assert html.count("<table") == 2 and html.count("Intervals at 97.5%") == 1 and html.count("Intervals at 95%") == 1
    assert "98%" not in html and "95% low" not in html and "<th>low</th>" in html
    assert "97.5% interval" in narrative.card_html(_row(confidence=0.975), "mysql")


def test_no_cost_is_shown_below_zero():
    # Before: MariaDB's voluntary context switches read -106 [-410, 4.09] per million ops.
    cost = pd.DataFrame([_cost("server_ctx_voluntary/op", -1.06e-4, "MariaDB 10.11.19"),
                         _cost("server_ctx_voluntary/op", 3.13e-5, "MySQL 9.7.4")])
    cost.loc[0, ["lo", "hi"]] = [-4.10e-4, 4.09e-6]
    html = narrative.cost_html(cost)
    assert "-" not in html.replace("per-thread", "") and "0 [0, 4.09] ‡" in html and "31.3 [28.2, 34.4]<" in html
    assert narrative.CLIPPED_NOTE.split(":")[0] in html
    assert "‡" not in narrative.cost_html(cost.iloc[1:])


def test_design_text_says_how_conditions_met_the_machine():
    base = {"repetitions": 4, "warmup": 1, "iterations": 9, "within_factors": []}
    apart = narrative._design_text(base)
    together = narrative._design_text(base | {"side_by_side": True})
    within = narrative._design_text(base | {"within_factors": ["collation"]})
    assert "randomized blocks" in apart and "together" not in apart
    assert "one server per configuration together" in together and "4 blocks" in together
    assert "collation alternating within each start" in within
    two = narrative._design_text(base | {"starts_per_block": 2, "within_factors": ["collation"]})
    assert "blocks of 2 started together (each with its own code layout)" in two
    assert "collation alternating within each start" in two
    both = narrative._design_text(base | {"side_by_side": True, "starts_per_block": 2})
    assert "2 blocks, each starting 2 servers (each with its own code layout) per configuration together" in both
    assert all("1 unrecorded warm-up and 9 measured rounds per start" in t for t in (apart, together, within))
    assert "fast-state" not in apart
    extended = narrative._design_text(base | {"fast_rounds": {"metric": "elapsed_s", "fastest": "min",
                                                              "count": 3, "max_iterations": 20}})
    assert ("9 measured rounds per start, more (up to 20) while a condition has fewer than 3 "
            "fast-state elapsed_s values") in extended
    timed = narrative._design_text(base | {"timed_rounds": {"seconds": 8.0, "max_iterations": 16}})
    assert "9 measured rounds per start, more (up to 16) until a start has measured 8 s" in timed
    # a sequential run states its rule's range of starts, not the unused `repetitions`
    rule = {"min_blocks": 10, "max_blocks": 14, "target_rel_width": 0.06}
    sequential = narrative._design_text(base | {"starts_per_block": 2, "sequential": rule})
    assert sequential.startswith("10-14 server starts per configuration in randomized blocks of 2")
    assert sequential.endswith("; sequential: a look after every block from 10 starts on, stopping once "
                               "every comparison is decided or its repeated interval is within 6%")
    assert narrative._design_text(base | {"side_by_side": True, "sequential": rule}).startswith("10-14 blocks, each")
    precise = narrative._design_text(base | {"sequential": rule | {"precise": ["uca_ai_vs_utf8mb3"]}})
    assert precise.endswith("is within 6% (uca_ai_vs_utf8mb3: within it, decided or not)")
    assert "4 server starts" in apart and "sequential" not in apart
