"""Reading hand-written YAML mappings strictly: unknown keys are errors, types are checked,
and every error names the file and the field path, so a typo never silently becomes a default."""

from __future__ import annotations

import re
from typing import Any, Iterable

from .errors import ConfigError

# Names that end up in SQL identifiers, file names and CSV columns: keep them boring.
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
# Levels end up in CSV cells and condition ids.
LEVEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,47}$")


class Fields:
    """A view on one mapping of a config file that remembers where it came from.

    Every key must be consumed by `get`/`require`; `done()` rejects what was left over.
    """

    def __init__(self, data: Any, source: str, path: str = ""):
        if not isinstance(data, dict):
            raise ConfigError(source, path or "(top level)", f"expected a mapping, got {_kind(data)}")
        for key in data:
            if not isinstance(key, str):
                raise ConfigError(source, path, f"keys must be strings, got {key!r}")
        self.data, self.source, self.path = dict(data), source, path
        self._seen: set[str] = set()

    def where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.source, self.where(key), message)

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, types: type | tuple, default: Any = None) -> Any:
        self._seen.add(key)
        if key not in self.data or self.data[key] is None:
            return default
        value = self.data[key]
        types = types if isinstance(types, tuple) else (types,)
        # bool is an int in Python; a YAML `yes` must not pass as a count.
        if isinstance(value, bool) and bool not in types:
            raise self.error(key, f"expected {_names(types)}, got a boolean")
        if not isinstance(value, types):
            raise self.error(key, f"expected {_names(types)}, got {_kind(value)} {value!r}")
        return value

    def require(self, key: str, types: type | tuple) -> Any:
        if key not in self.data or self.data[key] is None:
            self._seen.add(key)
            raise self.error(key, "is required")
        return self.get(key, types)

    def sub(self, key: str, required: bool = False) -> "Fields":
        value = self.require(key, dict) if required else self.get(key, dict, {})
        return Fields(value, self.source, self.where(key))

    def positive_int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.get(key, int, default)
        if value is None:
            raise self.error(key, "is required")
        if value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value}")
        return value

    def number(self, key: str, default: float | None = None, minimum: float | None = None) -> float:
        value = self.get(key, (int, float), default)
        if value is None:
            raise self.error(key, "is required")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value}")
        return float(value)

    def choice(self, key: str, choices: Iterable[str], default: str | None = None) -> str | None:
        choices = tuple(choices)
        value = self.get(key, str, default)
        if value is not None and value not in choices:
            raise self.error(key, f"must be one of {', '.join(choices)}; got {value!r}")
        return value

    def name(self, key: str, default: str | None = None, pattern: re.Pattern = NAME_RE) -> str | None:
        value = self.get(key, str, default)
        if value is not None and not pattern.match(value):
            raise self.error(key, f"{value!r} is not a valid name (letters, digits, underscore)")
        return value

    def entries(self) -> list[tuple[str, Any]]:
        """A mapping whose keys are names chosen by the user (targets, factors, levels)."""
        self._seen.update(self.data)
        return list(self.data.items())

    def done(self) -> None:
        unknown = sorted(set(self.data) - self._seen)
        if unknown:
            raise self.error(unknown[0], "unknown key (allowed: " + ", ".join(sorted(self._seen)) + ")")


def check_name(value: str, source: str, path: str, pattern: re.Pattern = NAME_RE) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise ConfigError(source, path, f"{value!r} is not a valid name")
    return value


def _names(types: tuple) -> str:
    return " or ".join({"str": "a string", "int": "an integer", "float": "a number",
                        "dict": "a mapping", "list": "a list", "bool": "true/false"}.get(t.__name__, t.__name__)
                       for t in types)


def _kind(value: Any) -> str:
    return {"str": "a string", "int": "an integer", "float": "a number", "dict": "a mapping",
            "list": "a list", "bool": "a boolean", "NoneType": "nothing"}.get(type(value).__name__,
                                                                             type(value).__name__)
