"""The functions the sources name, in a run's CPU evidence: C1's charset and lexer functions per
query beside their share of samples, C2's comparison per call beside bug #116492's figures, read
from data/claims.yaml."""

import math

import pandas as pd

from claimlab import evidence, evidence_tables, profiling
from claimlab.claims import load_claims
from conftest import ROOT

CLAIMS = load_claims(ROOT / "data" / "claims.yaml")


def _evidence(functions, per="row", profiles=()):
    table = pd.DataFrame(functions, columns=["condition", "function", "inclusive", "calls", "operations"])
    table["object"], table["self"] = "mysqld", table["inclusive"]
    counted = pd.DataFrame({"condition": list(dict.fromkeys(table["condition"])), "per": per})
    return evidence.Evidence(tuple(profiles), counted, {}, table)


def test_c1s_functions_per_query_beside_their_share_of_samples():
    lexer = "MYSQLlex(void*, void*)"
    sampled = profiling.Profile("charset_utf8mb4", {
        f"mysqld;{lexer};get_text(Lex_input_stream*, int, int);my_ismbchar_utf8mb4": 3, "mysqld;row_search_mvcc": 7})
    ev = _evidence([("charset_utf8mb4", lexer, 50_000, 0, 50),
                    ("charset_utf8mb4", "get_text(Lex_input_stream*, int, int)", 30_000, 50, 50),
                    ("charset_utf8mb4", "my_ismbchar_utf8mb4", 20_000, 6_000, 50),
                    ("charset_latin1", lexer, 20_000, 0, 50)], per="query", profiles=[sampled])
    table = evidence_tables.named_functions(ev, "charset_mismatch").set_index(["condition", "function"])
    utf8mb4 = table.loc["charset_utf8mb4"]
    assert utf8mb4.loc["my_ismbchar_utf8mb4", ["instructions", "calls", "share_of_samples"]].tolist() == [400, 120, 0.3]
    charpos = evidence_tables.NAMED_FUNCTIONS["charset_mismatch"][1][0]
    assert utf8mb4.loc["the whole lexer", "instructions"] == 1_000 and utf8mb4.loc[charpos, "instructions"] == 0
    latin1 = table.loc["charset_latin1"]
    assert latin1.loc["my_ismbchar_utf8mb4", "instructions"] == 0                # counted: never called
    assert math.isnan(latin1.loc["my_ismbchar_utf8mb4", "share_of_samples"])     # not sampled
    html = evidence_tables.functions_html(ev, "charset_mismatch", CLAIMS["C1"], "mysql")
    assert "instructions per query (in it or below)" in html and "30%" in html


def test_c1s_functions_are_found_by_the_names_a_stripped_server_gets():
    lexer = "Lex_input_stream::lex_one_token(YYSTYPE*, THD*)"
    stripped = profiling.Profile("charset_utf8mb4", {
        f"mariadbd;{lexer};ismbchar [charset of my_charset_utf8mb4_general_ci]": 2,
        "mariadbd;ismbchar [charset of my_charset_latin1]": 1, "mariadbd;charpos [my_charset_utf8mb4_handler]": 1})
    ev = evidence.Evidence((stripped,), pd.DataFrame(columns=["condition"]), {})
    shares = evidence_tables.named_functions(ev, "charset_mismatch").set_index("function")["share_of_samples"]
    assert shares.tolist() == [0.5, 0.25, 0, 0.5]   # utf8mb4's ismbchar, charpos, no get_text, the lexer
    assert "calls per query" in evidence_tables.functions_html(ev, "charset_mismatch", CLAIMS["C1"])


def test_c2s_comparison_per_call_beside_the_bugs_figures():
    signature = "(CHARSET_INFO const*, unsigned char const*, unsigned long, unsigned char const*, unsigned long)"
    ev = _evidence([("collation_uca_ai", f"my_strnncoll_uca_900{signature}", 27_000_000, 6_000, 6_000),
                    ("collation_uca_ai", f"my_strnncoll_uca<uca_scanner_900<Mb_wc_utf8mb4, 1>, 1>{signature}",
                     26_000_000, 6_000, 6_000),
                    ("collation_utf8mb3_general_ci", f"my_strnncollsp_utf8mb3{signature}", 15_000_000, 6_000, 6_000),
                    ("collation_utf8mb4_general_ci", "row_search_mvcc", 9_000_000, 6_000, 6_000)])
    table = evidence_tables.comparisons(ev, CLAIMS["C2"]).set_index("condition")
    assert list(table.index) == ["collation_uca_ai", "collation_utf8mb3_general_ci"]   # no comparison counted
    assert table.loc["collation_uca_ai", "function"] == "my_strnncoll_uca_900"           # the outermost
    uca = table.loc["collation_uca_ai", ["per_call", "published_per_call", "calls_per_row"]]
    assert uca.tolist() == [4_500, 4_710, 1]
    assert table.loc["collation_utf8mb3_general_ci", ["per_call", "published_per_call"]].tolist() == [2_500, 2_599]
    assert evidence_tables.comparison_sentence(ev, CLAIMS["C2"]) == (
        "A utf8mb4_0900_ai_ci comparison (my_strnncoll_uca_900) took 4,500 instructions per call here and a "
        "utf8mb3_general_ci one (my_strnncollsp_utf8mb3) 2,500: 1.80 times as many. The source counted 4,710 "
        "and 2,599 on MySQL 8.0.40 (1.81 times).")
    assert "instructions per call" in evidence_tables.functions_html(ev, "collation_cost", CLAIMS["C2"], "mysql")


def test_the_sources_figures_are_read_from_the_claims_file():
    for what in evidence_tables.PUBLISHED_PER_CALL.values():
        assert evidence_tables.figure(CLAIMS["C2"], what).unit == "instructions"
    c1 = evidence_tables.source_markdown(CLAIMS["C1"], "charset_mismatch")
    assert "(MySQL 5.7.28)" in c1 and "- my_ismbchar_utf8mb4 share of flame-graph samples: 7.47%\n" in c1
    c2 = evidence_tables.source_markdown(CLAIMS["C2"], "collation_cost")
    assert "4,710 instructions" in c2 and "0900_ai_ci over utf8mb3: 80% more" in c2
    assert evidence_tables.source_markdown(CLAIMS["C4"], "binlog_default") == ""
