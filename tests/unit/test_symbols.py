"""Naming unexported functions through the handler tables that point to them, per product, and
the report's evidence patterns against the names perf gives (or a source quotes)."""

import re

from claimlab import evidence
from claimlab.symbols import MARIADB, MYSQL, _helper_names, _table_names

CHARSET_INFO_SIZE = 208


def _charset_info(address: int, name: str, coll: int, cset: int, relocations: dict[int, int]):
    relocations[address + MYSQL.coll_offset] = coll
    relocations[address + MYSQL.cset_offset] = cset
    return (address, CHARSET_INFO_SIZE, name, name)


def _names(layout):
    """Two exported CHARSET_INFOs sharing one unexported collation handler (as MySQL's
    utf8mb3_general_ci and filename do), each with its charset handler; functions at 0x100..."""
    relocations: dict[int, int] = {}
    functions = {0x100 + 0x10 * i: 0x100 + 0x10 * i + 8 for i in range(40)}
    coll, cset = 0x9000, 0x9800
    for slot in range(len(layout.collation_slots)):
        if slot > 1:                      # init, uninit: null pointers carry no relocation
            relocations[coll + 8 * slot] = 0x100 + 0x10 * slot
    for slot in range(len(layout.charset_slots)):
        relocations[cset + 8 * slot] = 0x200 + 0x10 * (slot % 16)
    objects = [_charset_info(0x8000, "my_charset_utf8mb3_general_ci", coll, cset, relocations),
               _charset_info(0x8100, "my_charset_filename", coll, cset, relocations)]
    return _table_names(objects, relocations, functions, {}, layout)


def test_mysql_slots_name_the_comparison_and_list_every_table_sharing_it():
    names = _names(MYSQL)
    owners = "my_charset_filename, my_charset_utf8mb3_general_ci]"
    assert names[0x120] == "strnncoll [collation of " + owners
    assert names[0x130] == "strnncollsp [collation of " + owners
    assert names[0x210] == "ismbchar [charset of " + owners      # MySQL's charset slot 1
    assert names[0x240] == "charpos [charset of " + owners


def test_the_same_table_read_with_mariadb_slots_names_other_roles():
    names = _names(MARIADB)
    assert names[0x120].startswith("strnncollsp [")          # MySQL's slot 2 is strnncoll
    assert names[0x130].startswith("strnncollsp_nchars [")   # and 3 strnncollsp
    assert names[0x220].startswith("charpos [charset of")     # MySQL's charset slot 2 is mbcharlen


def test_evidence_patterns_match_the_names_each_server_shows():
    """Names quoted by the claims' sources (debug symbols) and those claimlab.symbols gives on
    the stripped MariaDB 10.11 and MySQL 9.7 packages match; the scan's other work does not."""
    collation, charset = evidence.EVIDENCE_PATTERNS["collation_cost"], evidence.EVIDENCE_PATTERNS["charset_mismatch"]
    for name in ("my_strnncollsp_utf8mb3", "my_strnncoll_uca<Mb_wc_utf8mb4, 3>",
                 "strnncoll [collation of my_charset_utf8mb4_0900_ai_ci] › 0x2ee3480",
                 "strnncollsp [collation of my_charset_filename, my_charset_utf8mb3_general_ci]",
                 "strnncollsp [my_collation_utf8mb4_uca_handler]"):
        assert re.search(collation, name), name
    for name in ("my_ismbchar_utf8mb4", "my_charpos_mb", "ismbchar [charset of my_charset_utf8mb4_0900_ai_ci]",
                 "my_sql_parser_lex(MY_SQL_PARSER_STYPE*, MY_SQL_PARSER_LTYPE*, THD*) › 0x111ed00",
                 "Lex_input_stream::lex_one_token(YYSTYPE*, THD*)"):
        assert re.search(charset, name), name
    for name in ("row_search_mvcc", "ha_innobase::general_fetch", "Item_func_eq::val_int", "dispatch_command"):
        assert not re.search(collation, name) and not re.search(charset, name), name


def test_helpers_are_named_after_named_callers_first_then_after_any_named_one():
    names = {0x10: "row_search", 0x20: "ha_write_row"}
    callers = {0x30: {0x10}, 0x40: {0x30}, 0x50: {0x10, 0x20}, 0x60: {0x20, 0x70}, 0x70: {0x80},
               0x10: {0x20}, 0x90: {0x10}}                       # 0x10 already named; 0x90 no function
    added = _helper_names(callers, names, starts={0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80})
    assert added[0x30] == "row_search › 0x30"
    assert added[0x40] == "row_search › 0x40"                 # through 0x30, named a round before
    assert added[0x50] == "ha_write_row (+1 more) › 0x50"
    assert added[0x60] == "ha_write_row (+1 more) › 0x60"      # one unnamed caller: the second pass
    assert set(added) == {0x30, 0x40, 0x50, 0x60} and names == {0x10: "row_search", 0x20: "ha_write_row"}


def test_a_read_that_stops_kills_its_disassembly_rather_than_wait_for_it(monkeypatch, mariadbd):
    """objdump takes seconds over a server binary beside the parsing: Ctrl-C there must not wait."""
    import signal

    import pytest

    from claimlab import symbols
    started = []

    def disassembly(binary):
        started.append(real(binary))
        return started[-1]

    def interrupted(*cmd):
        raise KeyboardInterrupt
    real = symbols._disassembly
    monkeypatch.setattr(symbols, "_disassembly", disassembly)
    monkeypatch.setattr(symbols, "_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        symbols.SymbolTable.read(mariadbd)
    assert started[0].wait() == -signal.SIGKILL
