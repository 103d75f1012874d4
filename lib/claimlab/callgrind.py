"""Per-function instructions and calls from a callgrind output file.

callgrind_annotate prints a function's own (self) or inclusive instructions but never how often
it was called, and instructions per call of one function is the figure bug #116492 gives (4,710
for a utf8mb4_0900_ai_ci comparison against 2,599 for utf8mb3_general_ci). The file itself holds
all three: cost lines under `fn=` are the function's own instructions; a `calls=N` line under it
says it called `cfn=` N times, and the cost line after it is what those calls cost, callees and
all. A function's inclusive cost is what its callers' calls into it cost (as callgrind_annotate
--inclusive=yes counts it); one that was never called inside the counted window (the
connection's `do_command`, entered before instrumentation was switched on) gets its own
instructions plus its calls'. A recursive function's inclusive cost counts its inner calls twice;
the functions claimlab reads (charset, collation and lexer routines) do not recurse.

Format: "Callgrind Format Specification", valgrind documentation (docs/cl-format.html):
name compression `(id) name`, relative positions `+N`/`-N`/`*`, one column per event of `events:`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

_COMPRESSED = re.compile(r"^\((\d+)\)(?:\s+(.*))?$")
# name kinds that share an id space (the specification's "ob", "fl" and "fn" contexts)
_SPACE = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl",
          "fn": "fn", "cfn": "fn", "jfi": "fl", "jfn": "fn"}
COLUMNS = ("function", "object", "self", "inclusive", "calls")


class CallgrindFormatError(ValueError):
    """A callgrind file claimlab cannot read (truncated, or not callgrind's)."""


def functions(text: str, event: str = "Ir") -> pd.DataFrame:
    """One row per function of a callgrind file: its object (binary), own instructions (`self`),
    `inclusive` instructions and `calls` into it, for `event` (Ir: instructions executed)."""
    names: dict[tuple[str, str], str] = {}
    positions, column = 1, None
    fn, obj, callee, pending = None, "", None, 0
    own: dict[str, int] = {}
    outgoing: dict[str, int] = {}
    called: dict[str, int] = {}
    calls: dict[str, int] = {}
    objects: dict[str, str] = {}

    def name(kind: str, value: str) -> str:
        match = _COMPRESSED.match(value)
        if not match:
            return value
        key = (_SPACE[kind], match[1])
        if match[2] is not None:
            names[key] = match[2]
        if key not in names:
            raise CallgrindFormatError(f"name id ({match[1]}) used before it was defined")
        return names[key]

    for number, line in enumerate(text.splitlines(), start=1):
        if not line or line.startswith("#"):
            continue
        head, sep, value = line.partition("=")
        if sep and head in _SPACE:
            resolved = name(head, value)
            if head == "fn":
                fn = resolved
                objects.setdefault(fn, obj)
                own.setdefault(fn, 0)
            elif head == "ob":
                obj = resolved
            elif head == "cfn":
                callee = resolved
            continue
        if head == "calls" and sep:
            pending = int(value.split()[0])
            continue
        if sep and head in ("jump", "jcnd"):
            continue
        key, colon, rest = line.partition(":")
        if colon and not line[0].isdigit() and line[0] not in "+-*":
            if key == "positions":
                positions = len(rest.split())
            elif key == "events":
                events = rest.split()
                if event not in events:
                    raise CallgrindFormatError(f"no {event} event (events: {' '.join(events)})")
                column = events.index(event)
            continue
        if fn is None or column is None:
            raise CallgrindFormatError(f"line {number}: a cost line before `events:` or `fn=`")
        values = line.split()[positions:]
        cost = int(values[column]) if column < len(values) else 0
        if pending:
            if callee is None:
                raise CallgrindFormatError(f"line {number}: `calls=` without `cfn=`")
            outgoing[fn] = outgoing.get(fn, 0) + cost
            called[callee] = called.get(callee, 0) + cost
            calls[callee] = calls.get(callee, 0) + pending
            pending = 0
        else:
            own[fn] += cost
    if column is None:
        raise CallgrindFormatError("no `events:` line: not a callgrind file")
    every = sorted(set(own) | set(called))
    return pd.DataFrame({"function": every, "object": [Path(objects.get(f, "")).name for f in every],
                         "self": [own.get(f, 0) for f in every],
                         "inclusive": [called[f] if f in called else own.get(f, 0) + outgoing.get(f, 0)
                                       for f in every],
                         "calls": [calls.get(f, 0) for f in every]}, columns=list(COLUMNS))


def read(path: Path, event: str = "Ir") -> pd.DataFrame:
    """`functions` of a callgrind file, its path named in the error if it cannot be read."""
    try:
        return functions(Path(path).read_text(errors="replace"), event)
    except CallgrindFormatError as exc:
        raise CallgrindFormatError(f"{path}: {exc}") from None


def combined(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Several dumps' functions summed (the repeats of one statement)."""
    if not tables:
        return pd.DataFrame(columns=list(COLUMNS))
    joined = pd.concat(tables, ignore_index=True)
    summed = {"object": "first", "self": "sum", "inclusive": "sum", "calls": "sum"}
    return joined.groupby("function", as_index=False).agg(summed)[list(COLUMNS)]
