"""A run's method in words: how its conditions met the machine, and the settings its servers
reported, the charset under test said per condition."""

import re

from claimlab import method_text, store
from conftest import frozen


def test_design_text_says_how_conditions_met_the_machine():
    base = {"repetitions": 4, "warmup": 1, "iterations": 9, "within_factors": []}
    apart = method_text._design_text(base)
    together = method_text._design_text(base | {"side_by_side": True})
    within = method_text._design_text(base | {"within_factors": ["collation"]})
    assert "randomized blocks" in apart and "together" not in apart
    assert "one server per configuration together" in together and "4 blocks" in together
    assert "collation alternating within each start" in within
    two = method_text._design_text(base | {"starts_per_block": 2, "within_factors": ["collation"]})
    assert "blocks of 2 started together (each with its own code layout)" in two
    assert "collation alternating within each start" in two
    both = method_text._design_text(base | {"side_by_side": True, "starts_per_block": 2})
    assert "2 blocks, each starting 2 servers (each with its own code layout) per configuration together" in both
    assert all("1 unrecorded warm-up and 9 measured rounds per start" in t for t in (apart, together, within))
    assert "fast-state" not in apart
    extended = method_text._design_text(base | {"fast_rounds": {"metric": "elapsed_s", "fastest": "min",
                                                              "count": 3, "max_iterations": 20}})
    assert ("9 measured rounds per start, more (up to 20) while a condition has fewer than 3 "
            "fast-state elapsed_s values") in extended
    timed = method_text._design_text(base | {"timed_rounds": {"seconds": 8.0, "max_iterations": 16}})
    assert "9 measured rounds per start, more (up to 16) until a start has measured 8 s" in timed
    # a sequential run states its rule's range of starts, not the unused `repetitions`
    rule = {"min_blocks": 10, "max_blocks": 14, "target_rel_width": 0.06}
    sequential = method_text._design_text(base | {"starts_per_block": 2, "sequential": rule})
    assert sequential.startswith("10-14 server starts per configuration in randomized blocks of 2")
    assert sequential.endswith("; sequential: a look after every block from 10 starts on, stopping once "
                               "every comparison is decided or its repeated interval is within 6%")
    assert method_text._design_text(base | {"side_by_side": True, "sequential": rule}).startswith("10-14 blocks, each")
    precise = method_text._design_text(base | {"sequential": rule | {"precise": ["uca_ai_vs_utf8mb3"]}})
    assert precise.endswith("is within 6% (uca_ai_vs_utf8mb3: within it, decided or not)")
    assert "4 server starts" in apart and "sequential" not in apart


def _common_settings(page: str) -> str:
    return re.search(r"The same in every condition: ([^<]*)", page).group(1)


def test_a_charset_the_conditions_set_is_said_per_condition_not_among_the_common_settings(monkeypatch):
    # Before: C1's run read "The same in every condition: ... character_set_server = latin1", the
    # factor under test as if it held one value throughout.
    run = frozen("c1")
    page = method_text.settings_html(run)
    assert "character_set_server" not in _common_settings(page) and "log_bin = OFF" in _common_settings(page)
    assert ("The character set under test differs between conditions (latin1 throughout; utf8mb4 throughout; "
            "latin1 client, utf8mb4 server)") in page
    assert "The server&#x27;s own default (character_set_server = " in page
    # a collation factor (C2) likewise, its levels named for the run's server (MariaDB's UCA 14.0)
    manifest = store.read_manifest(run)
    collations = [{"id": f"collation={c}", "levels": {"collation": c}} for c in ("utf8mb3_general_ci", "uca_ai")]
    monkeypatch.setattr(method_text, "read_manifest", lambda d: {**manifest, "conditions": collations})
    page = method_text.settings_html(run)
    assert "collation_server" not in _common_settings(page)
    assert "The collation under test differs between conditions (utf8mb3_general_ci; utf8mb4_uca1400_ai_ci)" in page
