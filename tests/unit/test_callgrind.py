"""Reading callgrind's files: own and inclusive instructions and calls per function, through
name compression, relative positions, inlined-file lines and calls from several callers."""

import pytest

from claimlab import callgrind

# A statement thread's dump as callgrind 3.19 writes it (--dump-instr=no): the lexer calls
# get_text twice, which asks ismbchar about 130 bytes; an unnamed function (a stripped binary's
# static one, an address) calls ismbchar 10 more times.
DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  /opt/mysql/bin/mysqld --datadir=/tmp/data --a=b
part: 3
thread: 7

desc: I1 cache:
desc: Timerange: Basic block 0 - 1000
desc: Trigger: Client Request: claimlab-2

positions: line
events: Ir
summary: 1260

ob=(1) /opt/mysql/bin/mysqld
fl=(1) ???
fn=(1) MYSQLlex(void*, void*)
0 100
cfn=(2) get_text(Lex_input_stream*, int, int)
calls=2 0
0 600
+3 30

fn=(2)
0 200
cob=(1)
cfi=(1)
cfn=(3) my_ismbchar_utf8mb4
calls=130 0
0 390
fi=(2) /src/sql/sql_lex.h
* 10

fl=(1)
fn=(3)
0 390
jump=3 +2
+2 30

ob=(2) /lib/x86_64-linux-gnu/libc.so.6
fn=(4) 0x0000000000f33110
0 500
cob=(1)
cfn=(3)
calls=10 0
0 30

totals: 1260
"""


def _row(table, function):
    return table.set_index("function").loc[function]


def test_own_inclusive_and_calls_per_function():
    table = callgrind.functions(DUMP)
    assert table["self"].sum() == 1260                      # the totals line: every instruction once
    lexer, text, ismbchar = (_row(table, f) for f in ("MYSQLlex(void*, void*)",
                                                      "get_text(Lex_input_stream*, int, int)",
                                                      "my_ismbchar_utf8mb4"))
    assert (lexer["self"], lexer["inclusive"], lexer["calls"]) == (130, 730, 0)   # entered before the window
    assert (text["self"], text["inclusive"], text["calls"]) == (210, 600, 2)       # its inlined-file line too
    assert (ismbchar["self"], ismbchar["inclusive"], ismbchar["calls"]) == (420, 420, 140)   # two callers
    assert ismbchar["object"] == "mysqld" and _row(table, "0x0000000000f33110")["object"] == "libc.so.6"


def test_the_asked_event_is_read_from_its_column_after_every_position_column():
    text = ("positions: instr line\nevents: Dr Ir\nfn=f\n0x1000 12 5 7\n+4 * 1\n"
            "cfn=g\ncalls=3 0x2000 40\n0x1004 13 2 9\nfn=g\n0x2000 40 2 9\n")
    f, g = _row(callgrind.functions(text), "f"), _row(callgrind.functions(text), "g")
    assert (f["self"], f["inclusive"], g["calls"], g["inclusive"]) == (7, 16, 3, 9)
    assert _row(callgrind.functions(text, "Dr"), "f")["self"] == 6   # a line short of an event: 0


def test_dumps_of_the_repeats_are_summed():
    one = callgrind.functions(DUMP)
    both = callgrind.combined([one, one]).set_index("function")
    assert both.loc["my_ismbchar_utf8mb4", "calls"] == 280 and both["self"].sum() == 2520
    assert list(callgrind.combined([]).columns) == list(callgrind.COLUMNS)


@pytest.mark.parametrize(("text", "message"), [
    ("fn=f\n0 5\n", "a cost line before `events:`"),
    ("events: Ir\nfn=(4)\n0 5\n", r"name id \(4\) used before it was defined"),
    ("events: Dr\nfn=f\n0 5\n", "no Ir event"),
    ("version: 1\n", "not a callgrind file"),
])
def test_what_is_not_a_readable_callgrind_file_is_refused(text, message, tmp_path):
    (tmp_path / "callgrind.out.1").write_text(text)
    with pytest.raises(callgrind.CallgrindFormatError, match=message):
        callgrind.read(tmp_path / "callgrind.out.1")
