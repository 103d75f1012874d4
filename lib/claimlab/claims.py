"""The claims under test, loaded from `data/claims.yaml` into frozen, validated dataclasses.

The yaml is the single place where a published figure becomes a testable expectation, so the
loader is strict: an unknown key is an error (a typo such as `publised_ratio` must not silently
drop the figure a verdict is judged against), every number is checked for sign and direction,
and every error names the file and the field path (`claims.C1.comparisons[0].metric`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from claimlab.errors import ConfigError

KINDS = ("effect", "null")
DIRECTIONS = ("lower", "higher", "two_sided")
DEFAULT_EQUIVALENCE_MARGIN = 0.05
_CLAIM_ID = re.compile(r"^C[0-9]+$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")


@dataclass(frozen=True)
class PublishedFigure:
    """One number a source published: a single value, or a (low, high) range when it gave one."""

    what: str
    value: float | tuple[float, float]
    unit: str
    note: str = ""

    def __post_init__(self) -> None:
        if not self.what or not self.unit:
            raise ValueError("a published figure needs `what` and `unit`")
        if isinstance(self.value, tuple):
            low, high = self.value
            if not low <= high:
                raise ValueError(f"range {self.value} is not (low, high)")


@dataclass(frozen=True)
class Condition:
    """Factor levels that select one side of a comparison, e.g. (("binlog", "on"),).

    Stored as sorted pairs rather than a dict so the dataclass stays immutable and hashable.
    """

    levels: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        if not self.levels:
            raise ValueError("a condition needs at least one factor level")
        factors = [factor for factor, _ in self.levels]
        if len(set(factors)) != len(factors):
            raise ValueError(f"factor repeated in {self.levels}")

    @classmethod
    def of(cls, levels: Mapping[str, str]) -> Condition:
        return cls(tuple(sorted(levels.items())))

    @property
    def factors(self) -> tuple[str, ...]:
        return tuple(factor for factor, _ in self.levels)

    @property
    def label(self) -> str:
        return ",".join(f"{factor}={level}" for factor, level in self.levels)


@dataclass(frozen=True)
class Comparison:
    """Treatment against baseline on one workload and metric, and what the source predicts.

    `published_ratio` is treatment/baseline of the metric as published (None when the source gave
    only a direction). `direction` says which way the ratio moves if the claim holds; it is
    derived from the ratio when one is published. A `null` comparison predicts no difference and
    is decided against `equivalence_margin` (a ratio within 1 ± margin counts as no difference).
    `family` names the multiplicity family whose error rate is controlled jointly (default: the
    comparison alone); equivalence comparisons never share a family with effects.
    """

    name: str
    experiment: str
    workload: str
    metric: str
    baseline: Condition
    treatment: Condition
    kind: str
    source_target: str
    direction: str | None = None
    published_ratio: float | None = None
    equivalence_margin: float = DEFAULT_EQUIVALENCE_MARGIN
    note: str = ""
    family: str = ""

    def __post_init__(self) -> None:
        if not self.family:
            object.__setattr__(self, "family", self.name)
        if not _NAME.match(self.family):
            raise ValueError(f"family {self.family!r}: use lower_snake_case")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        if self.baseline.factors != self.treatment.factors:
            raise ValueError("baseline and treatment must set the same factors")
        if self.baseline == self.treatment:
            raise ValueError("baseline and treatment are the same condition")
        if not 0 < self.equivalence_margin < 1:
            raise ValueError("equivalence_margin must lie strictly between 0 and 1")
        if self.kind == "null":
            if self.published_ratio is not None or self.direction is not None:
                raise ValueError("a null comparison predicts no difference: no ratio or direction")
            return
        if self.published_ratio is not None:
            if not (math.isfinite(self.published_ratio) and self.published_ratio > 0):
                raise ValueError("published_ratio must be a positive number")
            if self.published_ratio == 1:
                raise ValueError("a published ratio of 1 is no effect: use kind 'null'")
            implied = "lower" if self.published_ratio < 1 else "higher"
            if self.direction != implied:
                raise ValueError(
                    f"published_ratio {self.published_ratio:g} implies direction {implied!r}, "
                    f"not {self.direction!r}"
                )
        if self.direction not in DIRECTIONS:
            raise ValueError(f"an effect needs a direction in {DIRECTIONS} or a published ratio")


@dataclass(frozen=True)
class Claim:
    """A family of published statements from one or more source documents."""

    id: str
    title: str
    sources: tuple[str, ...]
    source_target: str
    setup: str
    published: tuple[PublishedFigure, ...]
    comparisons: tuple[Comparison, ...]
    notes: str = ""

    def __post_init__(self) -> None:
        if not _CLAIM_ID.match(self.id):
            raise ValueError(f"claim id {self.id!r} is not of the form C<number>")
        if not self.sources:
            raise ValueError("a claim needs at least one source file")
        names = [comparison.name for comparison in self.comparisons]
        if len(set(names)) != len(names):
            raise ValueError(f"comparison names repeat: {names}")
        kinds: dict[str, set[str]] = {}
        for comparison in self.comparisons:
            kinds.setdefault(comparison.family, set()).add(comparison.kind)
        mixed = sorted(family for family, found in kinds.items() if len(found) > 1)
        if mixed:
            raise ValueError(f"family {', '.join(mixed)} mixes effect and null comparisons: "
                             "equivalence is never tested in a family with effects")


def load_claims(path: str | Path) -> dict[str, Claim]:
    """Read and validate a claims file; raise ConfigError naming the file and field."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(path, "", f"cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(path, "", f"not valid YAML: {exc}") from exc
    return parse_claims(data, path)


def parse_claims(data: Any, source: str | Path) -> dict[str, Claim]:
    """Build claims from already-parsed YAML; `source` only names the origin in errors."""
    top = _Fields(data, source, "", required=("claims",), optional=("version",))
    if top.get("version", 1) != 1:
        raise ConfigError(source, "version", "only version 1 is understood")
    claims_field = top.child("claims")
    raw_claims = claims_field.value
    if not isinstance(raw_claims, dict) or not raw_claims:
        raise ConfigError(source, "claims", "expected a non-empty mapping of claim id to claim")
    return {
        str(claim_id): _claim(str(claim_id), claims_field.at(claim_id))
        for claim_id in raw_claims
    }


def _claim(claim_id: str, node: _Node) -> Claim:
    fields = _Fields(
        node.value,
        node.source,
        node.path,
        required=("title", "sources", "source_target", "setup", "published", "comparisons"),
        optional=("notes",),
    )
    target = fields.string("source_target")
    published = fields.child("published").items()
    comparisons = fields.child("comparisons").items()
    return node.build(
        Claim,
        id=claim_id,
        title=fields.string("title"),
        sources=tuple(item.string() for item in fields.child("sources").items()),
        source_target=target,
        setup=fields.string("setup"),
        published=tuple(_figure(item) for item in published),
        comparisons=tuple(_comparison(item, target) for item in comparisons),
        notes=fields.string("notes", ""),
    )


def _figure(node: _Node) -> PublishedFigure:
    fields = _Fields(
        node.value, node.source, node.path, required=("what", "value", "unit"), optional=("note",)
    )
    value_node = fields.child("value")
    if isinstance(value_node.value, list):
        low, high = (item.number() for item in value_node.items(length=2))
        value: float | tuple[float, float] = (low, high)
    else:
        value = value_node.number()
    return node.build(
        PublishedFigure,
        what=fields.string("what"),
        value=value,
        unit=fields.string("unit"),
        note=fields.string("note", ""),
    )


def _comparison(node: _Node, claim_target: str) -> Comparison:
    fields = _Fields(
        node.value,
        node.source,
        node.path,
        required=("name", "experiment", "workload", "metric", "baseline", "treatment", "kind"),
        optional=(
            "direction",
            "published_ratio",
            "equivalence_margin",
            "source_target",
            "note",
            "family",
        ),
    )
    name = fields.string("name")
    if not _NAME.match(name):
        raise ConfigError(node.source, f"{node.path}.name", "use lower_snake_case")
    ratio_node = fields.child("published_ratio", None)
    ratio = None if ratio_node.value is None else ratio_node.number()
    direction = fields.string("direction", "") or None
    if direction is None and ratio is not None:
        direction = "lower" if ratio < 1 else "higher"
    margin_node = fields.child("equivalence_margin", DEFAULT_EQUIVALENCE_MARGIN)
    return node.build(
        Comparison,
        name=name,
        experiment=fields.string("experiment"),
        workload=fields.string("workload"),
        metric=fields.string("metric"),
        baseline=_condition(fields.child("baseline")),
        treatment=_condition(fields.child("treatment")),
        kind=fields.string("kind"),
        source_target=fields.string("source_target", claim_target),
        direction=direction,
        published_ratio=ratio,
        equivalence_margin=margin_node.number(),
        note=fields.string("note", ""),
        family=fields.string("family", ""),
    )


def _condition(node: _Node) -> Condition:
    if not isinstance(node.value, dict) or not node.value:
        raise ConfigError(node.source, node.path, "expected a mapping of factor to level")
    levels = {str(factor): node.at(factor).string() for factor in node.value}
    return node.build(Condition, levels=tuple(sorted(levels.items())))


@dataclass(frozen=True)
class _Node:
    """A parsed YAML value with the file and field path that errors must name."""

    value: Any
    source: str | Path
    path: str

    def at(self, key: Any) -> _Node:
        where = f"{self.path}[{key}]" if isinstance(key, int) else f"{self.path}.{key}"
        return _Node(self.value[key], self.source, where.lstrip("."))

    def fail(self, message: str) -> ConfigError:
        return ConfigError(self.source, self.path, message)

    def string(self) -> str:
        if not isinstance(self.value, str) or not self.value.strip():
            raise self.fail(
                f"expected a non-empty string (quote numbers such as '5.7'), got {self.value!r}"
            )
        return self.value.strip()

    def number(self) -> float:
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise self.fail(f"expected a number, got {self.value!r}")
        if not math.isfinite(self.value):
            raise self.fail("expected a finite number")
        return float(self.value)

    def items(self, length: int | None = None) -> list[_Node]:
        if not isinstance(self.value, list) or (length is not None and len(self.value) != length):
            size = f" of {length}" if length is not None else ""
            raise self.fail(f"expected a list{size}, got {self.value!r}")
        return [self.at(index) for index in range(len(self.value))]

    def build(self, cls: type, **kwargs: Any) -> Any:
        """Construct `cls`, turning its own validation errors into ConfigError at this node."""
        try:
            return cls(**kwargs)
        except ValueError as exc:
            raise self.fail(str(exc)) from exc


class _Fields:
    """A YAML mapping whose keys are checked against the allowed set before anything is read."""

    def __init__(
        self,
        value: Any,
        source: str | Path,
        path: str,
        *,
        required: tuple[str, ...],
        optional: tuple[str, ...] = (),
    ):
        self.node = _Node(value, source, path)
        if not isinstance(value, dict):
            raise self.node.fail(f"expected a mapping, got {type(value).__name__}")
        unknown = sorted(str(key) for key in value if key not in required + optional)
        if unknown:
            allowed = ", ".join(required + optional)
            raise self.node.fail(f"unknown key(s) {', '.join(unknown)} (allowed: {allowed})")
        missing = [key for key in required if key not in value]
        if missing:
            raise self.node.fail(f"missing key(s) {', '.join(missing)}")

    def get(self, key: str, default: Any) -> Any:
        return self.node.value.get(key, default)

    def child(self, key: str, *default: Any) -> _Node:
        if key not in self.node.value:
            return _Node(default[0], self.node.source, f"{self.node.path}.{key}".lstrip("."))
        return self.node.at(key)

    def string(self, key: str, *default: str) -> str:
        if default and key not in self.node.value:
            return default[0]
        return self.node.at(key).string()
