"""The records a run is made of, at the bottom layer: what a workload measured (`Metric`), one
stored measurement (`MeasurementRecord`), what a run is (`RunManifest`) and the columns they are
stored under. Workloads and accounting build them, the store writes and reads them, params checks
factor names against them; none of those need each other for that.

Each record is frozen and validated when built (pyperf's Run as the model), so a bad value fails
where it is made, not when a statistic reads it."""

from __future__ import annotations

import datetime as dt
import math
import re
import secrets
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)   # v1: one server start per condition; v2 adds paired designs and probes
BASE_COLUMNS = ("run_id", "claim", "experiment", "condition")
TAIL_COLUMNS = ("target", "server_version", "workload", "repetition", "iteration", "seq", "attempt",
                "metric", "value", "unit", "started_at", "ended_at", "contention")
# Factor names become columns between these: a factor may not be named like any of them.
RESERVED_COLUMNS = frozenset(BASE_COLUMNS + TAIL_COLUMNS)
INTERVAL_COLUMNS = ("run_id", "condition", "workload", "repetition", "iteration", "seq", "t_s",
                    "threads", "tps", "qps", "latency_p95_ms", "errors_per_s", "reconnects_per_s")
STATUSES = ("running", "complete", "interrupted", "failed")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")   # a run id or an experiment: one folder name


def new_run_id() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Metric:
    """One measured value. Non-finite values are refused: a NaN stored as a measurement would
    silently drop out of (or poison) every statistic computed from it."""

    name: str
    value: float
    unit: str

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str):
            raise ValueError(f"metric name {self.name!r} is not a name")
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)) \
                or not math.isfinite(self.value):
            raise ValueError(f"metric {self.name}: value {self.value!r} is not a finite number")


@dataclass(frozen=True)
class Measurement:
    """What one run of a workload measured, before it is placed in a run (`MeasurementRecord`)."""

    metrics: tuple[Metric, ...]
    intervals: tuple[dict, ...] = ()   # sysbench's per-interval report lines

    def __post_init__(self):
        if not self.metrics or not all(isinstance(m, Metric) for m in self.metrics):
            raise ValueError("a measurement needs at least one Metric")


@dataclass(frozen=True)
class MeasurementRecord:
    """One stored measurement: where it ran, when, and every metric taken of it (one row each)."""

    run_id: str
    claim: str
    experiment: str
    condition: str
    levels: tuple[tuple[str, str], ...]   # (factor, level) in the experiment's factor order
    target: str
    server_version: str
    workload: str
    repetition: int
    iteration: int
    seq: int
    attempt: int
    started_at: str
    ended_at: str
    contention: bool
    metrics: tuple[Metric, ...]
    intervals: tuple[dict, ...] = ()

    def __post_init__(self):
        for name in ("repetition", "iteration", "seq"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"measurement {name} must be an integer >= 0, got {value!r}")
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int) or self.attempt < 1:
            raise ValueError(f"measurement attempt must be an integer >= 1, got {self.attempt!r}")
        if not self.metrics or not all(isinstance(m, Metric) for m in self.metrics):
            raise ValueError("a measurement needs at least one Metric")
        names = [m.name for m in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"measurement repeats metrics: {sorted({n for n in names if names.count(n) > 1})}")
        for factor, _ in self.levels:
            if factor in RESERVED_COLUMNS:
                raise ValueError(f"factor {factor!r} is a results column")

    def rows(self) -> list[dict]:
        base = {"run_id": self.run_id, "claim": self.claim, "experiment": self.experiment,
                "condition": self.condition, **dict(self.levels), "target": self.target,
                "server_version": self.server_version, "workload": self.workload,
                "repetition": self.repetition, "iteration": self.iteration, "seq": self.seq,
                "attempt": self.attempt, "started_at": self.started_at, "ended_at": self.ended_at,
                "contention": bool(self.contention)}
        return [base | {"metric": m.name, "value": repr(float(m.value)), "unit": m.unit} for m in self.metrics]

    def interval_rows(self) -> list[dict]:
        key = {"run_id": self.run_id, "condition": self.condition, "workload": self.workload,
               "repetition": self.repetition, "iteration": self.iteration, "seq": self.seq}
        return [key | iv for iv in self.intervals]


_MANIFEST_FIELDS = ("run_id", "experiment", "claim", "profile", "status", "format_version", "columns",
                    "factors", "created_at", "seed", "params_file", "params", "design", "targets",
                    "default_target", "conditions", "plan", "skipped_targets", "provenance",
                    "speed_probe", "finished_at", "checksums", "work_root")


@dataclass(frozen=True)
class RunManifest:
    """What a run is: the resolved params, plan, provenance, status and checksums (pyperf's Run
    as the model: built once, validated when built, changed only by making a new record).

    Keys this version does not know (older or newer writers) are kept in `extra` and written back."""

    run_id: str
    experiment: str
    claim: str
    profile: str
    status: str
    format_version: int
    columns: tuple[str, ...]
    factors: tuple[str, ...]
    created_at: str
    seed: int | None = None
    params_file: str | None = None
    params: Any = None                 # the params document as loaded (resume compares it)
    design: dict = field(default_factory=dict)
    targets: dict = field(default_factory=dict)
    default_target: str | None = None
    conditions: tuple = ()
    plan: tuple = ()
    skipped_targets: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    speed_probe: dict | None = None   # {"sql", "n", "target_s"} once calibrated
    finished_at: str | None = None
    checksums: dict = field(default_factory=dict)
    work_root: str | None = None      # where its servers run (--work): a resume reaps them there
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.format_version not in READABLE_VERSIONS:
            raise ValueError(f"format_version {self.format_version!r} is not one of {READABLE_VERSIONS}; "
                             "use the claimlab version that wrote it")
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")
        if not self.run_id or "/" in self.run_id or self.run_id.startswith("."):
            raise ValueError(f"run_id {self.run_id!r} is not a run id")
        # a folder name of the store (<experiment>/<run id>): never a path, which an imported run
        # could otherwise use to land outside it
        if not isinstance(self.experiment, str) or not _NAME.fullmatch(self.experiment):
            raise ValueError(f"experiment {self.experiment!r} is not an experiment name")
        if not isinstance(self.checksums, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.checksums.items()):
            raise ValueError("checksums: expected {file: sha256}")
        clash = RESERVED_COLUMNS & set(self.factors)
        if clash:
            raise ValueError(f"factors {sorted(clash)} are named like results columns")
        if tuple(self.columns) != columns_for(self.factors):
            raise ValueError("columns do not match the factors")

    @classmethod
    def new(cls, *, experiment: str, claim: str, profile: str, factors: Iterable[str], **fields) -> "RunManifest":
        factors = tuple(factors)
        return cls(run_id=fields.pop("run_id", None) or new_run_id(), experiment=experiment, claim=claim,
                   profile=profile, status="running", format_version=FORMAT_VERSION,
                   columns=columns_for(factors), factors=factors, created_at=now(), **fields)

    @classmethod
    def from_dict(cls, data: dict) -> "RunManifest":
        known = {k: data[k] for k in _MANIFEST_FIELDS if k in data}
        for key in ("columns", "factors", "conditions", "plan"):
            if key in known and known[key] is not None:
                known[key] = tuple(known[key])
        for key in ("design", "targets", "skipped_targets", "provenance", "checksums"):
            if known.get(key) is None:
                known.pop(key, None)
        known.setdefault("factors", ())
        return cls(**known, extra={k: v for k, v in data.items() if k not in _MANIFEST_FIELDS})

    def as_dict(self) -> dict:
        out = {k: getattr(self, k) for k in _MANIFEST_FIELDS}
        for key in ("columns", "factors", "conditions", "plan"):
            out[key] = list(out[key])
        return self.extra | out

    def with_(self, **changes) -> "RunManifest":
        return replace(self, **changes)


def columns_for(factors: Iterable[str]) -> tuple[str, ...]:
    return BASE_COLUMNS + tuple(factors) + TAIL_COLUMNS
