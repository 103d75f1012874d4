"""A cluster session's journal: the client's append-only record of what it sent to which host,
which run a lost worker interrupted, which job moved to another host, and what was stored or
failed. `claimlab run --resume SESSION` reads it to send again what is unfinished, under the same
Dask keys, so that Dask and the store, not claimlab, decide what is measured twice (nothing).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ClaimlabError, DataError
from .records import now
from .store import read_jsonl
from .writer import append_lines

JOURNAL_DIR = ".cluster"      # under the client's data root: one journal per session


@dataclass(frozen=True)
class Job:
    """One task: (experiment, target, host). Its key names the session, so a resumed session
    submits the very same keys. A job moved from a host gone for good (`moved_from`) has a key of
    its own: the new host's own job of the same experiment keeps its key."""

    session: str
    experiment: str
    target: str
    host: str
    profile: str
    moved_from: str = ""

    @property
    def key(self) -> str:
        moved = f"-from-{self.moved_from}" if self.moved_from else ""
        return f"claimlab-{self.session}-{self.experiment}-{self.target}-{self.host}{moved}"


@dataclass
class Session:
    session: str
    stored: dict[Job, Path] = field(default_factory=dict)
    failed: dict[Job, str] = field(default_factory=dict)
    interrupted: list[Job] = field(default_factory=list)
    moved: dict[Job, Job] = field(default_factory=dict)     # the job of a host gone -> the job sent instead


_JOB_FIELDS = ("experiment", "target", "host", "profile", "key")
_JOURNAL_FIELDS = {"submitted": _JOB_FIELDS, "moved": (*_JOB_FIELDS, "to"), "interrupted": _JOB_FIELDS,
                   "stored": _JOB_FIELDS, "failed": _JOB_FIELDS}


class Journal:
    """The client's record of a session (append-only JSON lines under the data root): what was
    sent, which host was lost mid-run, what was stored or failed. `--resume` reads it."""

    def __init__(self, data_root: Path, session: str):
        self.path = data_root / JOURNAL_DIR / f"{session}.jsonl"

    def write(self, event: str, job: Job | None = None, **fields) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        where = {"experiment": job.experiment, "target": job.target, "host": job.host,
                 "profile": job.profile, "key": job.key} if job else {}
        if job and job.moved_from:
            where["moved_from"] = job.moved_from
        append_lines(self.path, json.dumps({"at": now(), "event": event, **where, **fields}, sort_keys=True) + "\n")

    def read(self) -> list[dict]:
        """The session's records, each checked for the fields `unfinished` reads: a hand-edited or
        damaged journal is refused with its entry named, not met as a KeyError mid-resume."""
        if not self.path.exists():
            raise ClaimlabError(f"no cluster session {self.path.stem!r} under {self.path.parent}")
        records = read_jsonl(self.path)
        for number, r in enumerate(records, 1):
            needed = _JOURNAL_FIELDS.get(r.get("event") if isinstance(r, dict) else None)
            missing = [f for f in needed or () if not isinstance(r.get(f), str)]
            if needed is None or missing:
                what = f"lacks {', '.join(missing)}" if needed else "is no event of a session journal"
                raise DataError(f"{self.path}: entry {number} {what}; restore the file from a backup, or "
                                f"start a new session (its stored runs stay in the data root)")
        return records

    def unfinished(self, records: list[dict]) -> list[Job]:
        """The jobs of the session neither stored nor failed: a moved job's first key is done,
        its new one is not."""
        jobs: dict[str, Job] = {}
        for r in records:
            if r["event"] == "submitted":
                jobs[r["key"]] = Job(self.path.stem, r["experiment"], r["target"], r["host"], r["profile"],
                                     r.get("moved_from", ""))
            elif r["event"] == "moved":
                jobs.pop(r["key"], None)
                job = Job(self.path.stem, r["experiment"], r["target"], r["to"], r["profile"],
                          r.get("moved_from") or r["host"])
                jobs[job.key] = job
            elif r["event"] in ("stored", "failed"):
                jobs.pop(r["key"], None)
        return list(jobs.values())


def new_session() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
