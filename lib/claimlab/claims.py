"""The claims under test, loaded from `data/claims.yaml` into frozen, validated dataclasses.

The yaml is the single place where a published figure becomes a testable expectation, so the
loader is strict: an unknown key is an error (a typo such as `publised_ratio` must not silently
drop the figure a verdict is judged against), every number is checked for sign and direction,
and every error names the file and the field path (`claims.C1.comparisons[0].metric`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, model_validator

from .errors import ConfigError
from .schema import MAX_FILE_BYTES, Model, Text, fail, kind_of, read_yaml, show, validate

KINDS = ("effect", "null")
DIRECTIONS = ("lower", "higher", "two_sided")
STATISTICS = ("mean", "near_min", "near_max")   # what a block contributes: see Comparison
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


def equivalence_band(margin: float) -> tuple[float, float]:
    """The ratios that count as "no difference" at `margin`: [1 / (1 + m), 1 + m], symmetric on
    the log scale so that the verdict does not depend on which side is the baseline. Declared with
    the margin, so that a claim is checked against the band its verdicts use."""
    return 1 / (1 + margin), 1 + margin


@dataclass(frozen=True)
class Comparison:
    """Treatment against baseline on one workload and metric, and what the source predicts.

    `published_ratio` is treatment/baseline of the metric as published (None when the source gave
    only a direction). `direction` says which way the ratio moves if the claim holds; it is
    derived from the ratio when one is published. A `null` comparison predicts no difference and
    is decided against `equivalence_margin` (a ratio in `equivalence_band(margin)` counts as no difference).
    `family` names the multiplicity family whose error rate is controlled jointly (default: the
    comparison alone); equivalence comparisons never share a family with effects. `statistic`
    says what each block contributes: "mean" (geometric means; the default) or each side's
    fast-state values only, "near_min" for a time, "near_max" for a rate (CPU-bound work whose
    noise only slows it: see `stats.observations.fast_state`).
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
    statistic: str = "mean"

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, not {self.statistic!r}")
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
            # A published effect inside the no-effect band could never be "supported, as
            # published", and an interval around it could be called "no effect".
            low, high = equivalence_band(self.equivalence_margin)
            if low <= self.published_ratio <= high:
                below = max(self.published_ratio - 1, 1 / self.published_ratio - 1)
                raise ValueError(
                    f"published_ratio {self.published_ratio:g} lies inside the no-effect band "
                    f"[{low:.3g}, {high:.3g}] (margin {self.equivalence_margin:g}): declare an "
                    f"equivalence_margin below {below:.3g}"
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

    def comparison(self, name: str) -> Comparison:
        found = [comparison for comparison in self.comparisons if comparison.name == name]
        if not found:
            raise KeyError(f"claim {self.id} has no comparison {name!r}")
        return found[0]


class _Figure(Model):
    what: Text
    value: Any
    unit: Text
    note: str = ""

    @model_validator(mode="after")
    def _value(self):
        value = self.value
        numbers = value if isinstance(value, list) else [value]
        if isinstance(value, list) and len(value) != 2:
            raise fail(f"expected a number or a [low, high] list, got {show(value)}", "value")
        for number in numbers:
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise fail(f"expected a number, got {kind_of(number)} {show(number)}", "value")
            if not math.isfinite(number):
                raise fail("expected a finite number", "value")
        return self


def _snake_case(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"{show(name)}: use lower_snake_case")
    return name


class _Comparison(Model):
    name: Annotated[str, AfterValidator(_snake_case)]
    experiment: Text
    workload: Text
    metric: Text
    baseline: dict[Text, Text]
    treatment: dict[Text, Text]
    kind: Text
    direction: Text | None = None
    published_ratio: float | None = None
    equivalence_margin: float = DEFAULT_EQUIVALENCE_MARGIN
    source_target: Text | None = None
    family: Text | None = None
    statistic: Text = "mean"
    note: str = ""


class _Claim(Model):
    title: Text
    sources: list[Text]
    source_target: Text
    setup: Text
    published: list[_Figure]
    comparisons: list[_Comparison]
    notes: str = ""


class _ClaimsFile(Model):
    version: int = 1
    claims: dict[str, _Claim]

    @model_validator(mode="after")
    def _valid(self):
        if self.version != 1:
            raise fail("only version 1 is understood", "version")
        if not self.claims:
            raise fail("expected a non-empty mapping of claim id to claim", "claims")
        return self


def load_claims(path: str | Path) -> dict[str, Claim]:
    """Read and validate a claims file; raise ConfigError naming the file and field. Each text
    of the file is parsed once: reports, notebooks and benchmarks ask for it per run analysed (a
    tenth of a second each), and its records are frozen."""
    try:
        text = Path(path).read_bytes()
    except OSError:
        text = None                                     # read_yaml says what is wrong
    if text is None or len(text) > MAX_FILE_BYTES:
        return parse_claims(read_yaml(path), path)
    return dict(_load_claims(str(path), text))


@functools.lru_cache(maxsize=8)
def _load_claims(path: str, text: bytes) -> dict[str, Claim]:
    return parse_claims(read_yaml(path), path)


def parse_claims(data: Any, source: str | Path) -> dict[str, Claim]:
    """Build claims from already-parsed YAML; `source` only names the origin in errors."""
    doc = validate(_ClaimsFile, data, source)
    return {claim_id: _claim(claim_id, claim, source) for claim_id, claim in doc.claims.items()}


def _build(cls: type, source: str | Path, where: str, **values: Any) -> Any:
    """Construct a record, turning its own validation errors into a ConfigError at `where`."""
    try:
        return cls(**values)
    except ValueError as exc:
        raise ConfigError(source, where, str(exc)) from None


def _claim(claim_id: str, claim: _Claim, source: str | Path) -> Claim:
    where = f"claims.{claim_id}"
    published = tuple(_build(PublishedFigure, source, f"{where}.published[{i}]", what=f.what,
                             value=tuple(float(v) for v in f.value) if isinstance(f.value, list) else float(f.value),
                             unit=f.unit, note=f.note)
                      for i, f in enumerate(claim.published))
    comparisons = tuple(_comparison(c, claim.source_target, source, f"{where}.comparisons[{i}]")
                        for i, c in enumerate(claim.comparisons))
    return _build(Claim, source, where, id=claim_id, title=claim.title, sources=tuple(claim.sources),
                  source_target=claim.source_target, setup=claim.setup, published=published,
                  comparisons=comparisons, notes=claim.notes)


def _comparison(c: _Comparison, claim_target: str, source: str | Path, where: str) -> Comparison:
    direction = c.direction
    if direction is None and c.published_ratio is not None:
        direction = "lower" if c.published_ratio < 1 else "higher"
    sides = {}
    for side in ("baseline", "treatment"):
        levels = getattr(c, side)
        if not levels:
            raise ConfigError(source, f"{where}.{side}", "expected a mapping of factor to level")
        sides[side] = Condition(tuple(sorted(levels.items())))
    return _build(Comparison, source, where, name=c.name, experiment=c.experiment, workload=c.workload,
                  metric=c.metric, kind=c.kind, source_target=c.source_target or claim_target,
                  direction=direction, published_ratio=c.published_ratio,
                  equivalence_margin=c.equivalence_margin, family=c.family or "", note=c.note,
                  statistic=c.statistic, **sides)
