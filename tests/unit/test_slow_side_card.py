"""The card says when the analysis found a slow state on one side (`stats.slow_side`)."""

from __future__ import annotations

import math

import pandas as pd

from claimlab.cards import card_html


def row(**over):
    fields = dict(claim="C2", comparison="uca_ai_vs_utf8mb3", kind="effect", target="mariadb",
                  server_version="10.11.19-MariaDB-0+deb12u1", baseline="a", treatment="b", metric="elapsed_s",
                  estimate=1.026, ci_low=1.011, ci_high=1.041, confidence=0.95, p_value=0.01, published_ratio=math.nan,
                  verdict="inconclusive", verdict_label="inconclusive", flagged_share=math.nan, fast_share=0.93,
                  n_runs=1, n_blocks=10, verdict_note="", side_state_p=0.004, side_bias_bound=0.0296)
    return pd.Series({**fields, **over})


def test_the_card_says_a_slow_state_on_one_side_and_the_bound_of_its_bias():
    assert "a slow state on one side (p = 0.004): the estimate may be biased by up to 3.0%" in card_html(row())
    for quiet in (row(side_state_p=0.4), row(side_state_p=math.nan, side_bias_bound=math.nan)):
        assert "a slow state on one side" not in card_html(quiet)
    assert "a slow state on one side" not in card_html(row().drop(["side_state_p", "side_bias_bound"]))
