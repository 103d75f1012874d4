"""How hand-written YAML (params, ablation and claims files) is read and validated: one declarative
validator (pydantic models: unknown keys refused, strict types, bounded numbers, frozen) whose
errors become one line naming the file and the field path, so a typo never becomes a default.

Reading is defensive because a config file is input: files over MAX_FILE_BYTES, nesting deeper than
MAX_DEPTH, aliases that expand past MAX_NODES (a "billion laughs" bomb is a few hundred bytes) and
duplicated keys (YAML would let the last one win silently) are refused before anything is built,
and an error never echoes more than a short prefix of the value it refuses.
"""

from __future__ import annotations

import re
import reprlib
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from .errors import ConfigError

MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 40
MAX_NODES = 100_000
# Names that end up in SQL identifiers, file names and CSV columns: keep them boring.
# `\Z`, not `$`: `$` also matches before a final newline, which would pass "name\n" into a CSV header
NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}\Z")
# Levels end up in CSV cells and condition ids.
LEVEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,47}\Z")


# --------------------------------------------------------------------------- reading YAML

class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses duplicated keys and nesting deeper than MAX_DEPTH (PyYAML composes
    recursively, so a deep file would otherwise end in a RecursionError)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicated key {show(key)} (first on line {seen[key] + 1})",
                        key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


def _expanded_size(root: yaml.Node) -> int:
    """Nodes the document has once every alias is expanded (shared nodes counted per use), computed
    on the node graph without expanding it; a node that contains itself is refused."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise yaml.composer.ComposerError(None, None, "an alias refers to a node that contains it",
                                              node.start_mark)
        active.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        active.discard(key)
        sizes[key] = min(total, MAX_NODES + 1)
        return sizes[key]

    return size(root)


def read_yaml(path: str | Path) -> Any:
    """Parse one YAML file; every problem is a ConfigError naming the file (and the line)."""
    path = Path(path)
    source = str(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(source, "", f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(source, "", f"larger than {MAX_FILE_BYTES // 1000} kB; not a hand-written config file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(source, "", f"not UTF-8 text (byte {exc.start})") from None
    loader = None
    try:
        loader = _Loader(text)      # its reader already refuses control characters
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_NODES:
            raise ConfigError(source, "", f"aliases expand to more than {MAX_NODES} values; refused")
        return loader.construct_document(node)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - text.rfind("\n", 0, exc.position)
        raise ConfigError(source, f"line {line}, column {column}",
                          f"malformed YAML: unacceptable character #x{exc.character:04x} "
                          "(control characters are not allowed)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(source, where, f"malformed YAML: {cap(problem)}") from None
    finally:
        if loader is not None:
            loader.dispose()


# --------------------------------------------------------------------------- models and errors

_repr = reprlib.Repr()
_repr.maxstring, _repr.maxother, _repr.maxlevel, _repr.maxlist, _repr.maxdict = 40, 40, 2, 4, 4


def cap(text: str, limit: int = 120) -> str:
    """One line of at most `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def printable(text: str) -> str:
    """`text` with control, format (bidi) and other unprintable characters escaped: a field path
    echoes keys as written, and a raw ESC or U+202E would recolour or reorder the terminal line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in str(text))


def show(value: Any) -> str:
    """A value as an error may echo it: repr, cut short (a refused value may be megabytes)."""
    return cap(_repr.repr(value), 60)


def kind_of(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", dict: "a mapping",
            list: "a list", type(None): "nothing"}.get(type(value), type(value).__name__)


def fail(message: str, field: str | None = None) -> PydanticCustomError:
    """An error for a model validator to raise; `field` places it below the model's own path."""
    ctx = {"message": message} | ({"field": field} if field is not None else {})
    return PydanticCustomError("claimlab", "{message}", ctx)


class Model(BaseModel):
    """A mapping of a config file: unknown keys are errors that list every allowed key; types are
    strict (a YAML `yes` is not a count, `"5"` is not a number); NaN and infinities are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)
    unknown: ClassVar[str] = "unknown key"           # what an unexpected key is called in errors
    refused: ClassVar[dict[str, str]] = {}           # keys refused with a reason of their own

    @model_validator(mode="before")
    @classmethod
    def _only_known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise fail(f"expected a mapping, got {kind_of(data)}")
        for key in data:
            if not isinstance(key, str):
                raise fail(f"keys must be strings, got {kind_of(key)} {show(key)}")
            if key in cls.refused:
                raise fail(cls.refused[key], key)
        unknown = sorted(set(data) - set(cls.model_fields))
        if unknown:
            raise fail(f"{cls.unknown} (allowed: {', '.join(sorted(cls.model_fields))})", unknown[0])
        return data


def _matching(pattern: re.Pattern, what: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{show(value)} is not a valid name ({what})")
        return value
    return AfterValidator(check)


def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


Name = Annotated[str, _matching(NAME_RE, "a letter, then letters, digits, underscore")]
LevelName = Annotated[str, _matching(LEVEL_RE, "letters, digits, '_', '.', '-'")]
Text = Annotated[str, AfterValidator(_text)]
M = TypeVar("M", bound=BaseModel)


def check_name(value: Any, source: str, path: str, pattern: re.Pattern = NAME_RE) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ConfigError(source, path, f"{show(value)} is not a valid name")
    return value


def validate(model: type[M], data: Any, source: str | Path, where: str = "") -> M:
    """`model` built from `data`, or a ConfigError naming the file and the field of the first error."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, source, where) from None


def config_error(exc: ValidationError, source: str | Path, where: str = "") -> ConfigError:
    error = exc.errors(include_url=False)[0]
    loc = list(error["loc"])
    if loc and loc[-1] == "[key]":    # a mapping key was refused: name it as written (`on` is True)
        loc[-2:] = [cap(printable(error["input"]), 60)]
    ctx = error.get("ctx") or {}
    if error["type"] == "claimlab" and "field" in ctx:
        loc.append(ctx["field"])
    path = where
    for part in loc:
        part = part if type(part) is int else printable(part)
        path += f"[{part}]" if type(part) is int else (f".{part}" if path else part)
    return ConfigError(source, path or "(top level)", _message(error, ctx))


def _message(error: dict, ctx: dict) -> str:
    kind, value = error["type"], error.get("input")
    got = f"got {kind_of(value)}" + (f" {show(value)}" if value is not None and not isinstance(value, bool) else "")
    expected = {"int_type": "an integer", "int_from_float": "an integer", "float_type": "a number",
                "bool_type": "true or false", "dict_type": "a mapping", "list_type": "a list",
                "tuple_type": "a list"}
    if kind in expected:
        return f"expected {expected[kind]}, {got}"
    if kind == "string_type":
        hint = " (quote it: '5.7', 'off')" if isinstance(value, (bool, int, float)) else ""
        return f"expected a string, {got}{hint}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op, bound = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"),
                     "less_than_equal": ("<=", "le"), "less_than": ("<", "lt")}[kind]
        return f"must be {op} {ctx[bound]}, got {show(value)}"
    if kind == "finite_number":
        return f"must be a finite number, got {show(value)}"
    if kind == "literal_error":
        return f"must be one of {ctx['expected'].replace(' or ', ', ')}; got {show(value)}"
    if kind == "missing":
        return "is required"
    if kind in ("too_short", "too_long"):
        return f"expected {ctx.get('min_length') if kind == 'too_short' else ctx.get('max_length')} " \
               f"item(s) at {'least' if kind == 'too_short' else 'most'}, got {ctx.get('actual_length')}"
    if kind == "value_error":      # a record's own check; it may quote the value at any length
        return cap(str(ctx["error"]), 300)
    if kind == "claimlab":         # ours: values in it already pass through show()
        return " ".join(ctx["message"].split())
    return cap(error["msg"])


def built(build):
    """Build a record whose own checks raise ValueError("field: message"); place the error there."""
    try:
        return build()
    except ValueError as exc:
        text = cap(str(exc), 300)        # records quote the refused value at any length
        field, sep, message = text.partition(": ")
        if sep and " " not in field:
            raise fail(message, field) from None
        first = text.split()[0]
        raise fail(text, first if first.isidentifier() else None) from None


def number_text(value: Any) -> Any:
    """A version or level written as a YAML number (8.0, 57) read as the text it stands for."""
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
