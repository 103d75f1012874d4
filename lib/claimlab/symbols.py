"""Names for the functions a stripped server binary does not export.

Why perf shows `[unknown]`: Debian's mariadbd and the mysqld claimlab unpacks from Debian sid
have no `.symtab` and no debug package reachable here (their `.gnu_debuglink` points to a
`-dbgsym` file from the debug archive); perf names an address from `.dynsym` only, which holds
the exported functions (~29k in mariadbd 10.11, ~35k in mysqld 9.7). Static functions, among
them every charset and collation routine the claims are about (the UCA comparison, `charpos`),
are not exported. Frame pointers are intact (the call chains are complete), so `--call-graph
dwarf` does not help, and neither does the build-id cache or `--symfs`: there is no symbol to find.

Those functions are still reachable by name through exported *tables that point to them*:
every `CHARSET_INFO` (`my_charset_utf8mb4_unicode_ci`, ...) points to a charset handler and a
collation handler whose slots are function pointers in a fixed order (`MY_COLLATION_HANDLER`
in MariaDB's `include/m_ctype.h`: init, strnncoll, strnncollsp, ...; MySQL's
`include/mysql/strings/m_ctype.h` orders them differently, see `HandlerLayout`); C++ vtables (`_ZTV...`)
point to virtual methods. In a position-independent binary each such pointer is an
`R_X86_64_RELATIVE` relocation whose addend is the function's address, and `.eh_frame` gives
every function's start and end. `SymbolTable` reads these three with binutils' `readelf` and
`nm` and names an address as "strnncollsp [collation my_charset_utf8mb4_unicode_ci]" or
"Field_varstring::virtual#12": what the function *is*, not a guess by proximity. A static
function reached by direct calls (or tail jumps) from named functions is named after them,
"strnncollsp [my_uca_collation_handler_utf8mb4] › 0xf33110": a private helper whose cost is its
callers' (as if inlined), with its address so it is never mistaken for the caller itself. An
address that neither a table nor a named caller reaches stays unnamed.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class HandlerLayout:
    """Where a product's CHARSET_INFO keeps its handler pointers, and the slot order of those
    handlers (function pointers in declaration order)."""

    collation_slots: tuple[str, ...]
    charset_slots: tuple[str, ...]
    cset_offset: int = 184      # byte offsets of `cset` and `coll` in CHARSET_INFO (both products)
    coll_offset: int = 192


# MariaDB 10.11's include/m_ctype.h.
MARIADB = HandlerLayout(
    ("init", "strnncoll", "strnncollsp", "strnncollsp_nchars", "strnxfrm", "strnxfrmlen", "like_range",
     "wildcmp", "strcasecmp", "instr", "hash_sort", "propagate", "min_str", "max_str", "get_id",
     "get_collation_name"),
    ("init", "numchars", "charpos", "lengthsp", "numcells", "mb_wc", "wc_mb", "ctype", "caseup_str",
     "casedn_str", "caseup", "casedn", "snprintf", "long10_to_str", "longlong10_to_str", "fill", "strntol",
     "strntoul", "strntoll", "strntoull", "strntod", "strtoll10", "strntoull10rnd", "scan", "charlen",
     "well_formed_char_length", "copy_fix", "native_to_mb", "wc_to_printable"))
# MySQL 8.0 to 9.x's include/mysql/strings/m_ctype.h: `uninit` after `init`, `ismbchar` and
# `mbcharlen` first in the charset handler (the lexer's calls C1 is about).
MYSQL = HandlerLayout(
    ("init", "uninit", "strnncoll", "strnncollsp", "strnxfrm", "strnxfrmlen", "like_range", "wildcmp",
     "strcasecmp", "strstr", "hash_sort", "propagate"),
    ("init", "ismbchar", "mbcharlen", "numchars", "charpos", "well_formed_len", "lengthsp", "numcells",
     "mb_wc", "wc_mb", "ctype", "caseup_str", "casedn_str", "caseup", "casedn", "snprintf", "long10_to_str",
     "longlong10_to_str", "fill", "strntol", "strntoul", "strntoll", "strntoull", "strntod", "strtoll10",
     "strntoull10rnd", "scan"))
LAYOUTS = {"mariadb": MARIADB, "mysql": MYSQL}
_CALL = re.compile(r"^\s*([0-9a-f]+):\s+(?:call|jmp)\s+([0-9a-f]+) <", re.M)
HELPER_ROUNDS = 4
_FDE = re.compile(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)")


def _run(*cmd: str) -> str:
    result = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed on {cmd[-1]}: {result.stderr.strip()[:200]}")
    return result.stdout


def build_id(binary: str | Path) -> str:
    """The GNU build id (what perf's build-id cache keys on); sha256 of the file if it has none."""
    match = re.search(r"Build ID: ([0-9a-f]+)", _run("readelf", "-n", str(binary)))
    return match[1] if match else "sha256:" + hashlib.sha256(Path(binary).read_bytes()).hexdigest()


@dataclass(frozen=True)
class SymbolTable:
    """Function ranges of one ELF binary and the names that exported tables give them."""

    binary: str
    build_id: str
    starts: tuple[int, ...] = field(repr=False)         # sorted function starts (.eh_frame, .dynsym)
    ends: tuple[int, ...] = field(repr=False)
    names: dict[int, str] = field(repr=False)           # start -> name (exported or via a table)

    def __post_init__(self):
        if len(self.starts) != len(self.ends) or list(self.starts) != sorted(self.starts):
            raise ValueError("function starts must be sorted and match their ends")

    @classmethod
    def read(cls, binary: str | Path, vendor: str = "mariadb") -> SymbolTable:
        """`vendor` ("mariadb" or "mysql", a Flavor's) picks the handler slot order."""
        binary = str(binary)
        layout = LAYOUTS[vendor]
        objdump = _disassembly(binary)
        with ThreadPoolExecutor(1) as pool:    # the disassembly, most of the time, beside the parsing
            calls = pool.submit(_call_lines, binary, objdump)
            try:
                return cls._read(binary, layout, calls)
            except BaseException:
                objdump.kill()                 # an interrupt does not wait for the disassembly
                raise

    @classmethod
    def _read(cls, binary: str, layout: HandlerLayout, calls: Future) -> SymbolTable:
        ranges: dict[int, int] = {}
        for match in _FDE.finditer(_run("readelf", "-wf", binary)):
            start, end = int(match[1], 16), int(match[2], 16)
            if start:
                ranges[start] = max(end, ranges.get(start, 0))
        exported: dict[int, str] = {}
        objects: list[tuple[int, int, str, str]] = []   # address, size, mangled name, demangled
        plain = _run("nm", "-DS", "--defined-only", binary).splitlines()
        demangled = _run("nm", "-DSC", "--defined-only", binary).splitlines()
        for raw, nice in zip(plain, demangled):
            parts, nice_parts = raw.split(maxsplit=3), nice.split(maxsplit=3)
            if len(parts) < 4:
                continue
            address, size, kind = int(parts[0], 16), int(parts[1], 16), parts[2]
            if kind in "Tt" or kind in "Ww" and address in ranges:
                exported.setdefault(address, nice_parts[3])
                ranges.setdefault(address, address + max(size, 1))
            elif kind in "DdRrVvBb" and size:
                objects.append((address, size, parts[3], nice_parts[3]))
        relocations = _relative_relocations(_run("readelf", "-rW", binary))
        names = dict(exported)
        for address, name in _table_names(objects, relocations, ranges, exported, layout).items():
            names.setdefault(address, name)
        for address, name in _vtable_names(binary, relocations, ranges, names).items():
            names[address] = name
        starts = tuple(sorted(ranges))
        ends = tuple(ranges[s] for s in starts)
        names |= _helper_names(_direct_calls(calls.result(), starts, ends),
                               names, set(starts))
        return cls(binary, build_id(binary), starts, ends, names)

    def function(self, address: int) -> int | None:
        """Start of the function containing `address`, if any FDE or symbol covers it."""
        index = bisect.bisect_right(self.starts, address) - 1
        if index >= 0 and address < self.ends[index]:
            return self.starts[index]
        return None

    def name(self, address: int) -> str | None:
        start = self.function(address)
        return None if start is None else self.names.get(start)


def _disassembly(binary: str) -> subprocess.Popen:
    return subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", binary], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)   # a full stderr pipe blocks it


def _call_lines(binary: str, objdump: subprocess.Popen) -> str:
    """The call and jump lines of `objdump -d`, filtered by grep: the whole disassembly of an
    80 MB mysqld is hundreds of MB of text that Python would otherwise carry and scan. grep reads
    it as bytes (LC_ALL=C): in a UTF-8 locale it decodes every line and runs ten times slower."""
    found = subprocess.run(["grep", "-E", r"^\s*[0-9a-f]+:\s+(call|jmp)\s+[0-9a-f]+ <"], stdin=objdump.stdout,
                           capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    objdump.stdout.close()
    if objdump.wait() != 0 or found.returncode not in (0, 1):    # grep: 1 = no line matched
        raise RuntimeError(f"objdump | grep failed on {binary} (exit {objdump.returncode}, "
                           f"{found.returncode}): {found.stderr.strip()[:200]}")
    return found.stdout


def _relative_relocations(text: str) -> dict[int, int]:
    """Location -> target address of each pointer relocation: the addend of R_X86_64_RELATIVE, the
    symbol's value of a symbolic one (an exported typeinfo or function); -1 for an imported
    symbol (e.g. __cxa_pure_virtual in a vtable), so tables stay contiguous."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or not parts[2].startswith("R_X86_64_") or not re.fullmatch(r"[0-9a-f]+", parts[0]):
            continue
        value = int(parts[3], 16) if re.fullmatch(r"[0-9a-f]+", parts[3]) else 0
        out[int(parts[0], 16)] = value if value else -1
    return out


def _table_names(objects, relocations: dict[int, int], ranges: dict[int, int],
                 exported: dict[int, str], layout: HandlerLayout = MARIADB) -> dict[int, str]:
    """Names for unexported functions from the exported tables that point to them: collation and
    charset handlers (directly, or through a CHARSET_INFO), then vtables, then any other table."""
    by_address = {address: mangled for address, _, mangled, _ in objects}
    # start -> (priority, label, owners); lower priority wins, then the label that sorts first.
    # Owners of an equal label are all kept: MySQL's utf8mb3_general_ci shares its collation
    # handler with `filename`, and a reader should see both.
    found: dict[int, tuple[int, str, set[str]]] = {}

    def offer(target: int, priority: int, label: str, owner: str = "") -> None:
        if target in ranges and target not in exported:
            if target not in found or found[target][:2] > (priority, label):
                found[target] = (priority, label, set())
            if found[target][:2] == (priority, label) and owner:
                found[target][2].add(owner)

    def handler(table: int, slots: tuple[str, ...], prefix: str, owner: str, priority: int) -> None:
        for index, role in enumerate(slots):
            target = relocations.get(table + 8 * index)
            if target is not None:
                offer(target, priority, f"{role} [{prefix}", owner)

    for address, size, mangled, nice in objects:
        if mangled.startswith("my_charset_") and size >= layout.coll_offset + 8:
            for offset, slots, kind in ((layout.coll_offset, layout.collation_slots, "collation"),
                                        (layout.cset_offset, layout.charset_slots, "charset")):
                table = relocations.get(address + offset)
                if table is None:
                    continue
                if table in by_address:
                    handler(table, slots, "", by_address[table], 1)
                else:
                    handler(table, slots, f"{kind} of ", mangled, 0)
        elif "collation_handler" in mangled:
            handler(address, layout.collation_slots, "", mangled, 1)
        elif mangled.startswith("my_charset_") and mangled.endswith("_handler"):
            handler(address, layout.charset_slots, "", mangled, 1)
        elif mangled.startswith("_ZTV"):
            owner = nice.removeprefix("vtable for ")
            for slot in range(2, size // 8):
                target = relocations.get(address + 8 * slot)
                if target is not None:
                    offer(target, 2, f"{owner}::virtual#{slot - 2}")
        else:
            for slot in range(size // 8):
                target = relocations.get(address + 8 * slot)
                if target is not None:
                    offer(target, 3, f"entry {slot} of {nice}")
    return {target: label + _owners(owners) for target, (_, label, owners) in found.items()}


def _owners(owners: set[str], shown: int = 3) -> str:
    """The closing part of a handler slot's name: its tables, the first few by name."""
    if not owners:
        return ""
    names = sorted(owners)
    more = f" +{len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more + "]"


def _vtable_names(binary: str, relocations: dict[int, int], ranges: dict[int, int],
                  names: dict[int, str]) -> dict[int, str]:
    """Virtual methods of classes whose vtable is not exported (InnoDB's `ha_innobase`): a vtable
    is found by its RTTI slot (a pointer to a typeinfo whose second word points to a mangled
    class name); slot k is named after the exported function in slot k of the nearest base
    class's vtable ("ha_innobase::rnd_next(unsigned char*)"), else "Class::virtual#k"."""
    image = _Image(binary)
    classes: dict[int, str] = {}     # typeinfo address -> mangled class name
    for target in relocations.values():
        name_ptr = relocations.get(target + 8)
        if name_ptr is not None and target not in classes:
            text = image.string(name_ptr)
            if text and re.fullmatch(r"N?\d+[A-Za-z_]\w*(?:\d+[A-Za-z_]\w*)*E?", text):
                classes[target] = text
    vtables: dict[int, list[int]] = {}    # typeinfo -> function starts by slot
    for location, target in sorted(relocations.items()):
        if target in classes and relocations.get(location - 8) is None and location + 8 in relocations:
            slots, slot = [], location + 8
            while relocations.get(slot, 0) in ranges or relocations.get(slot) == -1:
                slots.append(relocations[slot])
                slot += 8
            if slots and target not in vtables:
                vtables[target] = slots
    readable = _demangle([f"_ZTS{m}" for m in classes.values()])
    class_name = {t: readable[i].removeprefix("typeinfo name for ") for i, t in enumerate(classes)}
    out: dict[int, str] = {}
    for typeinfo, slots in vtables.items():
        bases = []
        base = relocations.get(typeinfo + 16)
        while base in classes and len(bases) < 8:
            bases.append(base)
            base = relocations.get(base + 16)
        for index, function in enumerate(slots):
            if function in names or function in out:
                continue
            method = None
            for b in bases:
                inherited = vtables.get(b, [])
                if index < len(inherited) and inherited[index] in names and "::" in names[inherited[index]]:
                    method = names[inherited[index]].split("::")[-1]
                    break
            out[function] = f"{class_name[typeinfo]}::{method or f'virtual#{index}'}"
    return out


def _demangle(symbols: list[str]) -> list[str]:
    if not symbols:
        return []
    result = subprocess.run(["c++filt"], input="\n".join(symbols), capture_output=True, text=True)
    lines = result.stdout.splitlines()
    return lines if len(lines) == len(symbols) else symbols


class _Image:
    """Bytes of an ELF file addressed by virtual address (its PT_LOAD segments)."""

    def __init__(self, binary: str):
        self.data = Path(binary).read_bytes()
        self.segments = []
        for line in _run("readelf", "-lW", binary).splitlines():
            parts = line.split()
            if parts[:1] == ["LOAD"]:
                offset, vaddr, filesz = int(parts[1], 16), int(parts[2], 16), int(parts[4], 16)
                self.segments.append((vaddr, vaddr + filesz, offset))

    def string(self, address: int, limit: int = 200) -> str | None:
        for start, end, offset in self.segments:
            if start <= address < end:
                at = offset + address - start
                raw = self.data[at: at + limit].split(b"\0", 1)[0]
                return raw.decode("ascii", errors="replace")
        return None


def _direct_calls(disassembly: str, starts: tuple[int, ...], ends: tuple[int, ...]) -> dict[int, set[int]]:
    """Callee start -> starts of the functions that call or jump to it directly (objdump -d)."""
    callers: dict[int, set[int]] = {}
    for match in _CALL.finditer(disassembly):
        site, target = int(match[1], 16), int(match[2], 16)
        index = bisect.bisect_right(starts, site) - 1
        if index < 0 or site >= ends[index] or starts[index] == target:
            continue
        callers.setdefault(target, set()).add(starts[index])
    return callers


def _helper_names(callers: dict[int, set[int]], names: dict[int, str], starts: set[int]) -> dict[int, str]:
    """Unnamed functions named after their direct callers: first those all of whose callers are
    named, then (a helper also reached from unnamed code) those with at least one named caller,
    a few rounds each; the name lists the first caller and keeps the helper's own address."""
    named = dict(names)
    added: dict[int, str] = {}
    pending = {callee: sources for callee, sources in callers.items() if callee in starts and callee not in named}
    for strict in (True, False):
        for _ in range(HELPER_ROUNDS):
            fresh = {}
            for callee, sources in pending.items():
                known = [s for s in sources if s in named]
                if not known or (strict and len(known) < len(sources)):
                    continue
                caller_names = sorted({named[s].split(" › ")[0].split(" (+")[0] for s in known})
                more = len(sources) - 1
                fresh[callee] = caller_names[0] + (f" (+{more} more)" if more else "") + f" › {callee:#x}"
            if not fresh:
                break
            named |= fresh
            added |= fresh
            for callee in fresh:
                del pending[callee]
    return added
