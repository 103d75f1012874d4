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
               flagged_share=0.4, n_runs=1, n_blocks=10, verdict_note="")
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


def test_size_relation_reads_the_right_way_round():
    assert narrative.size_relation(_row()) == "effect smaller than published"           # 2.85 above [2.07, 2.65]
    assert narrative.size_relation(_row(published_ratio=1.5)) == "effect larger than published"
    assert narrative.size_relation(_row(estimate=0.9, ci_low=0.83, ci_high=0.99, published_ratio=0.75)) \
        == "effect smaller than published"
    assert narrative.size_relation(_row(published_ratio=2.5)) == "published value inside the interval"


def test_card_names_server_analogue_and_flagged_share():
    card = narrative.card_html(_row(), "mysql")
    assert "an analogue (mariadb)" in card and "40% of measurements" in card and "read with care" in card
    mysql = narrative.card_html(_row(server_version="9.7.0", flagged_share=math.nan), "mysql")
    assert "the claim&#x27;s own server family" in mysql and "not recorded" in mysql


def test_cards_of_two_servers_share_one_row():
    table = pd.DataFrame([_row(), _row(target="mysql", server_version="9.7.0")])
    html = narrative.cards_html(table)
    assert html.count("class='card-row'") == 1 and html.count("class='card ") == 2


def test_cost_view_drops_all_zero_costs_and_uses_microseconds():
    cost = pd.DataFrame([
        dict(workload="w", condition="a", metric="server_cpu_user_s/op", unit="s/op", n_reps=2, mean=1.3e-5,
             lo=1.2e-5, hi=1.4e-5, contention="included"),
        dict(workload="w", condition="a", metric="status.Binlog_commits/op", unit="1/op", n_reps=2, mean=0.0,
             lo=0.0, hi=0.0, contention="included")])
    view = narrative.cost_view(cost)
    assert list(view["cost"]) == ["server CPU, user"] and view["unit"].iloc[0] == "µs/op"
    assert abs(view["per operation"].iloc[0] - 13) < 1e-9


def test_note_of_a_comparison_no_server_ran_names_the_target_not_nan():
    note = narrative.note_markdown(_row(server_version=math.nan, target="mysql80", verdict="not_tested",
                                       verdict_label="not tested", verdict_note="not tested: no rows for mysql80"))
    assert note.startswith("- **C4 binlog on vs off** on target mysql80: not tested.") and "nan" not in note
    assert "on 10.11.19-MariaDB-0+deb12u1: supported" in narrative.note_markdown(_row())
