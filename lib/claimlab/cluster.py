"""Experiments spread over several machines with Dask distributed, one worker per benchmark host.

Why Dask and not a dispatcher of claimlab's own: its scheduler already places tasks, holds them
while a worker is gone and sends them again when it returns, and it speaks TLS; claimlab adds only
what is its own, the measuring and the store. A worker is started on each host (after `make setup`
there) with the resource `host=1` (`dask worker ADDRESS --name NAME --resources host=1`); every task
asks for it, so a host measures one experiment at a time and nothing of claimlab's shares it.

One task per (experiment, target, host), restricted to that host. On the worker it runs claimlab's
own runner exactly as `claimlab run` would (its own servers, data-directory cache and work
directory, under CLAIMLAB_WORKER_DIR), stamps the host's identity into the manifest, packs the
finished run directory and returns it with its archive's checksum. The client checks the archive
and every file's checksum and moves the run into its store in one rename (`import_run`, which
`claimlab import` also uses): a worker never writes into the client's store, and a run is stored
whole or not at all.

Faults:
- a worker killed mid-run: the client notes the run as interrupted in its session journal, and
  Dask sends the task again when the host's worker returns (with the same worker directory the
  runner resumes the interrupted run there: measured units are not measured twice);
- a killed client: the tasks are `fire_and_forget`, so they finish and wait packed in the
  worker's outbox; `claimlab run --resume SESSION --scheduler ...` submits the same keys again
  and collects them; a run already stored is recognised by its checksums and not stored twice;
- a run that fails on one host (servers that do not start) is one line in the log and the
  journal; the other hosts go on.

Secrets: the task carries the params document, which holds no password (params files name an
environment variable with `password_env`); the runner on the worker reads that variable there.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .errors import ClaimlabError, DataError
from .records import now
from .store import load_manifest, read_jsonl, run_state, runs_root
from .writer import RESERVE, WRITER_LOCK, WRITTEN

RESOURCE = "host"
TOPIC = "claimlab-started"    # a Dask event per task start: which lost tasks were measuring
POLL_S = 1.0
JOURNAL_DIR = ".cluster"      # under the client's data root: one journal per session
STAGING_DIR = ".importing"    # under the data root: unpacked runs before their one rename


# -- where the scheduler is ----------------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    """The scheduler's address and the TLS files to reach it (None: Dask's own configuration,
    e.g. `distributed.comm.tls.*` in ~/.config/dask, which Client reads by itself)."""

    address: str
    tls: dict = field(default_factory=dict)

    def security(self):
        if not self.tls:
            return None
        from distributed.security import Security
        return Security(tls_ca_file=self.tls["ca_file"], tls_client_cert=self.tls["cert"],
                        tls_client_key=self.tls["key"], require_encryption=True)


def endpoint(scheduler: str | None, cluster_file: Path | None) -> Endpoint:
    """`--scheduler ADDRESS`, or a cluster file (YAML) naming it:

        scheduler: tls://bench-0.example:8786
        tls: {ca_file: ca.pem, cert: client.pem, key: client-key.pem}   # optional; relative to the file
    """
    if scheduler:
        return Endpoint(scheduler)
    import yaml
    try:
        doc = yaml.safe_load(cluster_file.read_text())
    except OSError as exc:
        raise ClaimlabError(f"{cluster_file}: cannot read the cluster file ({exc.strerror})") from None
    except yaml.YAMLError:
        raise ClaimlabError(f"{cluster_file}: not valid YAML") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("scheduler"), str) or not doc["scheduler"]:
        raise ClaimlabError(f"{cluster_file}: scheduler: expected the scheduler's address, e.g. tcp://host:8786")
    unknown = sorted(set(doc) - {"scheduler", "tls"})
    if unknown:
        raise ClaimlabError(f"{cluster_file}: {unknown[0]}: not a cluster-file key (scheduler, tls)")
    tls = doc.get("tls") or {}
    if tls:
        missing = [k for k in ("ca_file", "cert", "key") if not isinstance(tls.get(k), str)]
        if missing or set(tls) - {"ca_file", "cert", "key"}:
            raise ClaimlabError(f"{cluster_file}: tls: expected ca_file, cert and key (paths)")
        tls = {k: str((cluster_file.parent / v).resolve()) for k, v in tls.items()}
    return Endpoint(doc["scheduler"], tls)


def connect(where: Endpoint, timeout: float = 20):
    from distributed import Client
    try:
        return Client(where.address, security=where.security(), timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ClaimlabError(f"--scheduler {where.address}: cannot connect ({exc})") from None


def hosts(client) -> dict[str, str]:
    """Worker name -> the host (address without port) of each worker offering `host=1`.

    Tasks are restricted by host, not by worker address: a worker that comes back on the same
    machine listens on a new port, and its task must still find it."""
    out = {}
    for address, info in client.scheduler_info(n_workers=-1)["workers"].items():
        if info.get("resources", {}).get(RESOURCE, 0) >= 1:
            out[str(info.get("name", address))] = info["host"]
    return out


# -- on the worker -------------------------------------------------------------------------------

def worker_dir() -> Path:
    """The worker's own runs, scratch space and outbox: never the client's."""
    return Path(os.environ.get("CLAIMLAB_WORKER_DIR") or Path.home() / ".cache" / "claimlab" / "worker")


def measure(key: str, experiment: str, params_text: str, profile: str, target: str) -> dict:
    """The task: run `experiment` on `target` here with claimlab's runner, pack the run.

    A retry of the same key (the worker was killed, or the client was) finds what the first try
    left in this worker's directory: a packed run is returned as it is, an unfinished one is
    resumed, so a unit measured before the kill is not measured again."""
    from distributed import get_worker

    from . import params as params_mod
    from . import runner, stats
    name = str(get_worker().name)
    get_worker().log_event(TOPIC, {"key": key})
    checkout = Path(__file__).resolve().parents[2]   # a worker started elsewhere (SSHCluster: in ~)
    if "CLAIMLAB_ROOT" not in os.environ and (checkout / "params").is_dir():
        os.environ["CLAIMLAB_ROOT"] = str(checkout)     # records the commit of the code that measures
    base = worker_dir()
    outbox = base / "outbox" / f"{key}.tar.gz"
    if outbox.exists():
        return _packed(outbox, name, resumed=False)
    source = base / "params" / key / f"{experiment}.yaml"
    source.parent.mkdir(parents=True, exist_ok=True)
    if not source.exists():     # whole or not at all: a retry loads what the first try wrote
        tmp = source.with_name(f".{source.name}.tmp")
        tmp.write_text(params_text)
        os.replace(tmp, source)
    exp = params_mod.with_default_target(params_mod.load(source, profile), target, "--target")
    data_root = base / "runs"
    earlier = _earlier_run(data_root / experiment, source)
    resume = None
    if earlier is not None and load_manifest(earlier).status != "complete":
        resume = earlier.name
    if earlier is None or resume:
        should_stop = stats.stopping_for(exp) if exp.design.sequential is not None else None
        outcome = runner.run(exp, data_root=data_root, work_root=base / "work", resume=resume,
                             progress=False, should_stop=should_stop)
        earlier = outcome.path
    _stamp_host(earlier, name)
    outbox.parent.mkdir(parents=True, exist_ok=True)
    tmp = outbox.with_name(f".{outbox.name}.tmp")
    tmp.write_bytes(archive_run(earlier))
    os.replace(tmp, outbox)
    return _packed(outbox, name, resumed=resume is not None)


def _earlier_run(runs: Path, source: Path) -> Path | None:
    """The run an earlier try of this task started (its params file is the task's own)."""
    for manifest in sorted(runs.glob("*/manifest.json")):
        try:
            if load_manifest(manifest.parent).params_file == str(source):
                return manifest.parent
        except DataError:
            continue
    return None


def _stamp_host(path: Path, name: str) -> None:
    """The host's identity in the manifest: the worker's name beside the processor, cores and
    kernel the runner recorded, and the server builds the run's starts reported. The manifest is
    not among the checksummed files, so this changes no checksum."""
    from .writer import RunStore, lock_writer
    manifest = load_manifest(path)
    builds = sorted({f"{r.get('target')}: {r.get('version')}" for r in read_jsonl(path / "servers.jsonl")})
    host = dict(manifest.provenance.get("host", {})) | {"worker_name": name, "server_builds": builds}
    store = RunStore(path, manifest.columns, lock_writer(path))
    try:
        store.write_manifest(manifest.with_(provenance=manifest.provenance | {"host": host}))
    finally:
        store.close()


def _writers_own(name: str) -> bool:
    """The writer's bookkeeping in a run directory (its lock, its record of writes, its reserve):
    the writing machine's business, not the run's data, so it is neither sent nor imported."""
    return name in (WRITER_LOCK, WRITTEN, RESERVE)


def archive_run(path: Path) -> bytes:
    """A run directory as a gzipped tar whose one top-level entry is the run id."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(path, arcname=path.name,
                filter=lambda info: None if _writers_own(Path(info.name).name) else info)
    return buf.getvalue()


def _packed(outbox: Path, host: str, resumed: bool) -> dict:
    data = outbox.read_bytes()
    return {"archive": data, "sha256": hashlib.sha256(data).hexdigest(), "host": host, "resumed": resumed}


# -- on the client: the store --------------------------------------------------------------------

def import_run(source: Path | bytes, data_root: Path | None = None) -> tuple[Path, bool]:
    """Append a run made elsewhere (a directory, a .tar.gz, or an archive's bytes) to the store:
    checked, then moved in with one rename. Returns (its path, whether it was new): the same run
    imported twice is stored once; a different run under a stored run's id is refused."""
    data_root = Path(data_root or runs_root())
    if not isinstance(source, bytes) and not Path(source).exists():
        raise DataError(f"{source}: no such run directory or archive")
    staging = data_root / STAGING_DIR / uuid.uuid4().hex
    try:
        staging.mkdir(parents=True)
    except OSError as exc:
        raise DataError(f"{data_root}: cannot stage an import there ({exc.strerror})") from None
    try:
        label = "the worker's archive" if isinstance(source, bytes) else str(source)
        if isinstance(source, bytes) or Path(source).is_file():
            run = _unpack(source, staging, label)
        else:
            run = staging / Path(source).name
            shutil.copytree(source, run, symlinks=True, ignore=lambda _, names: [n for n in names if _writers_own(n)])
        manifest = _checked(run, label)
        dest = data_root / manifest.experiment / manifest.run_id
        if dest.exists():
            if load_manifest(dest).checksums == manifest.checksums and not run_state(dest).changed:
                return dest, False
            raise DataError(f"{label}: run {manifest.run_id} is already stored in {dest} with other data; "
                            "nothing was imported")
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(run, dest)
        return dest, True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _unpack(source: Path | bytes, into: Path, label: str) -> Path:
    """Regular files and directories under one top-level directory, nothing else (no links, no
    absolute or climbing paths): an archive can only ever fill its own staging directory."""
    try:
        fileobj = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")
        with fileobj, tarfile.open(fileobj=fileobj, mode="r:*") as tar:
            members = tar.getmembers()
            tops = {m.name.split("/")[0] for m in members}
            bad = [m.name for m in members if not (m.isfile() or m.isdir()) or m.name.startswith("/")
                   or ".." in m.name.split("/")]
            if bad or len(tops) != 1:
                raise DataError(f"{label}: not a run archive (one run directory of plain files)")
            tar.extractall(into, filter="data")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DataError(f"{label}: unreadable archive ({exc})") from None
    return into / tops.pop()


def _checked(run: Path, label: str):
    manifest = load_manifest(run)
    if manifest.run_id != run.name:
        raise DataError(f"{label}: manifest.json: run_id {manifest.run_id} is not the directory's name {run.name}")
    if not manifest.checksums:
        raise DataError(f"{label}: run {manifest.run_id} is {manifest.status} and has no checksums; "
                        "only a finished run is imported")
    links = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_symlink())
    if links:
        raise DataError(f"{label}: run {manifest.run_id}: {links[0]} is a symbolic link, not data; "
                        "nothing was imported")
    state = run_state(run)
    if state.changed:
        raise DataError(f"{label}: run {manifest.run_id}: {', '.join(state.changed)} do not match the "
                        "manifest's checksums; nothing was imported")
    listed = set(manifest.checksums) | {"manifest.json"}
    if "packed" in manifest.extra:    # a shipped run whose tables are Parquet (claimlab publish)
        from .pack import packed_tables
        listed |= {entry["file"] for entry in packed_tables(manifest).values()}
    extra = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and
                   str(p.relative_to(run)) not in listed
                   and not (manifest.format_version < 2 and p.parent.name == "variables"))   # not checksummed in 1
    if extra:
        raise DataError(f"{label}: run {manifest.run_id}: {extra[0]} is not covered by a checksum; "
                        "nothing was imported")
    return manifest


# -- on the client: the session ------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """One task: (experiment, target, host). Its key names the session, so a resumed session
    submits the very same keys."""

    session: str
    experiment: str
    target: str
    host: str
    profile: str

    @property
    def key(self) -> str:
        return f"claimlab-{self.session}-{self.experiment}-{self.target}-{self.host}"


@dataclass
class Session:
    session: str
    stored: dict[Job, Path] = field(default_factory=dict)
    failed: dict[Job, str] = field(default_factory=dict)
    interrupted: list[Job] = field(default_factory=list)


class Journal:
    """The client's record of a session (append-only JSON lines under the data root): what was
    sent, which host was lost mid-run, what was stored or failed. `--resume` reads it."""

    def __init__(self, data_root: Path, session: str):
        self.path = data_root / JOURNAL_DIR / f"{session}.jsonl"

    def write(self, event: str, job: Job | None = None, **fields) -> None:
        from .writer import _append
        self.path.parent.mkdir(parents=True, exist_ok=True)
        where = {"experiment": job.experiment, "target": job.target, "host": job.host,
                 "profile": job.profile, "key": job.key} if job else {}
        _append(self.path, json.dumps({"at": now(), "event": event, **where, **fields}, sort_keys=True) + "\n")

    def read(self) -> list[dict]:
        if not self.path.exists():
            raise ClaimlabError(f"no cluster session {self.path.stem!r} under {self.path.parent}")
        return read_jsonl(self.path)


def new_session() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def run(where: Endpoint, experiments: list[str], *, profile: str, targets: list[str] | None = None,
        declared_only: bool = False, data_root: Path | None = None, resume: str | None = None,
        log: Callable[[str], None] = print) -> Session:
    """Every experiment on each target (None: its default) and each host, all sent at once so
    that each host works through its own queue; runs stored as they come back. `declared_only`:
    each experiment on those of `targets` it declares, else its default (`report.chosen_targets`).
    With `resume`, the session's jobs not yet stored are sent again (what finished while no
    client waited is collected from the workers' outboxes)."""
    from . import params as params_mod
    from .store import project_root
    data_root = Path(data_root or runs_root())
    root = project_root()
    client = connect(where)
    try:
        on = hosts(client)
        if resume:
            journal = Journal(data_root, resume)
            records = journal.read()
            done = {r["key"] for r in records if r["event"] in ("stored", "failed")}
            jobs = list({r["key"]: Job(resume, r["experiment"], r["target"], r["host"], r["profile"])
                         for r in records if r["event"] == "submitted" and r["key"] not in done}.values())
            session = Session(resume)
            gone = sorted({j.host for j in jobs} - set(on))
            if gone:
                log(f"waiting for host(s) {', '.join(gone)}: their jobs are sent when their workers join")
        else:
            if not on:
                raise ClaimlabError(f"--scheduler {where.address}: no worker offers the resource {RESOURCE}=1; start "
                                    f"each with `dask worker {where.address} --name NAME --resources {RESOURCE}=1`")
            session = Session(new_session())
            journal = Journal(data_root, session.session)
            jobs = []
            for experiment in experiments:
                exp = params_mod.load(params_mod.find(experiment, root / "params"), profile)
                chosen = targets or [exp.default_target]
                if declared_only:
                    chosen = [t for t in chosen if t in exp.targets] or [exp.default_target]
                for target in chosen:
                    params_mod.with_default_target(exp, target, "--target")   # a wrong name: one line, now
                    jobs += [Job(session.session, exp.name, target, name, profile) for name in sorted(on)]
            log(f"cluster session {session.session}: {len(jobs)} run(s) on {len(on)} host(s) "
                f"({', '.join(sorted(on))}); resume with --resume {session.session}")
        _collect(client, journal, jobs, on, session, data_root, root, log)
    finally:
        client.close()
    return session


def _collect(client, journal: Journal, jobs: list[Job], on: dict[str, str], session: Session,
             data_root: Path, root: Path, log) -> None:
    from distributed import fire_and_forget

    from . import params as params_mod
    futures = {}
    for job in jobs:
        text = params_mod.find(job.experiment, root / "params").read_text()
        future = client.submit(measure, job.key, job.experiment, text, job.profile, job.target,
                               key=job.key, workers=[on.get(job.host, job.host)], allow_other_workers=False,
                               resources={RESOURCE: 1}, retries=0, pure=False)
        fire_and_forget(future)     # a killed client leaves it to finish, packed in the outbox
        futures[future] = job
        journal.write("submitted", job)
    pending = dict(futures)
    where: dict[str, str] = {}      # key -> the worker address processing it, as last seen
    lost: dict[str, int] = {}       # key -> starts already counted as interrupted
    while pending:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        for address, keys in client.processing().items():
            for key in keys:
                where[key] = address
        starts: dict[str, int] = {}
        for _, event in client.get_events(TOPIC):
            starts[event["key"]] = starts.get(event["key"], 0) + 1
        for future, job in list(pending.items()):
            if where.get(job.key) and where[job.key] not in workers and not future.done():
                del where[job.key]      # sent to a worker, not yet started there: Dask simply sends it again
                if starts.get(job.key, 0) <= lost.get(job.key, 0):
                    continue
                lost[job.key] = starts[job.key]
                session.interrupted.append(job)
                journal.write("interrupted", job, reason="the host's worker left mid-run")
                log(f"{job.host}: lost mid-run ({job.experiment} on {job.target}): interrupted; "
                    "Dask sends it again when the host's worker returns")
            if not future.done():
                continue
            del pending[future]
            _store(future, job, journal, session, data_root, log)
        if pending:
            time.sleep(POLL_S)


def _store(future, job: Job, journal: Journal, session: Session, data_root: Path, log) -> None:
    try:
        result = future.result()
    except Exception as exc:   # noqa: BLE001 - a host's failure is its own line; the others go on
        reason = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
        session.failed[job] = reason
        journal.write("failed", job, reason=reason)
        log(f"{job.host}: {job.experiment} on {job.target} not run: {reason}")
        return
    if hashlib.sha256(result["archive"]).hexdigest() != result["sha256"]:
        reason = "the archive's checksum does not match what the worker sent"
        session.failed[job] = reason
        journal.write("failed", job, reason=reason)
        log(f"{job.host}: {job.experiment} on {job.target}: {reason}; not stored")
        return
    path, new = import_run(result["archive"], data_root)
    session.stored[job] = path
    journal.write("stored", job, run_id=path.name, new=new, resumed=result["resumed"])
    log(f"{job.host}: {job.experiment} on {job.target}: run {path.name} stored"
        + ("" if new else " (already stored)") + (" (resumed after an interruption)" if result["resumed"] else ""))


# -- the report's runs and the per-host view -----------------------------------------------------

def report_runs(where: Endpoint, experiments: list[str] | None, *, profile: str, targets: list[str],
                data_root: Path | None, log=print) -> list[str]:
    """`claimlab report --scheduler`: every claim's runs on every host, stored here; the report
    then re-analyses them as stored runs. A target an experiment does not declare is left out
    for it (as `report.chosen_targets` does on one machine)."""
    from . import report
    session = run(where, experiments or list(report.NOTEBOOKS), profile=profile, targets=targets,
                  declared_only=True, data_root=data_root, log=log)
    run_ids = [path.name for path in session.stored.values()]
    if not run_ids:
        raise ClaimlabError(f"--scheduler {where.address}: no run came back from any host")
    return run_ids


def host_of(path: Path) -> tuple[str, str]:
    """(the worker's name, the processor in words) of a stored run; "local" for a run made here."""
    from .provenance import cpu_label
    host = load_manifest(path).provenance.get("host") or {}
    return str(host.get("worker_name") or "local"), cpu_label(host)


def host_tables(run_ids: list[str], data_root: Path | None = None):
    """(per-host rows, pooled rows) over every claim of `run_ids`: each host's runs analysed on
    their own (its own table), then pooled by host (`stats.hosts`)."""
    import pandas as pd

    from .report import analyze_runs
    from .stats import hosts as by_host
    from .store import find_run
    groups: dict[str, list[str]] = {}
    cpus = {}
    for run_id in run_ids:
        name, cpu = host_of(find_run(run_id, data_root))
        groups.setdefault(name, []).append(run_id)
        cpus[name] = cpu
    tables: dict[str, dict[str, pd.DataFrame]] = {}
    claims = {}
    for name, ids in groups.items():
        for analysis in analyze_runs(ids, data_root):
            tables.setdefault(analysis.claim.id, {})[name] = analysis.table
            claims[analysis.claim.id] = analysis.claim
    per = [by_host.per_host(t, cpus) for t in tables.values()]
    pooled = [by_host.pool(p, claims[claim]) for claim, p in zip(tables, per)]
    return (pd.concat(per, ignore_index=True) if per else by_host.per_host({}),
            pd.concat(pooled, ignore_index=True) if pooled else pd.DataFrame(columns=list(by_host.POOLED_COLUMNS)))


def host_lines(per_host, pooled) -> list[str]:
    """The per-host view in words: one line per host (processor, ratio, verdict), then the pool."""
    lines = []
    for (claim, comparison, target), group in per_host.groupby(["claim", "comparison", "target"], sort=False):
        lines.append(f"{claim} {comparison} [{target}]")
        for r in group.itertuples(index=False):
            lines.append(f"  {r.host:<12} {r.processor}: {r.estimate:.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}] "
                         f"{r.verdict_label}")
        p = pooled[(pooled["claim"] == claim) & (pooled["comparison"] == comparison)
                   & (pooled["target"] == target)].iloc[0]
        tau = "" if p["tau"] != p["tau"] else f", between-host sd {p['tau']:.3g} (log scale)"
        lines.append(f"  pooled over {p['n_hosts']} hosts: {p['estimate']:.3g} [{p['ci_low']:.3g}, "
                     f"{p['ci_high']:.3g}]{tau}: {p['verdict_label']}; holds on {p['holds_on']} host: "
                     f"supported on {p['hosts_supported']}")
    return lines


HOLDS_WORDS = {"every": "holds on every host", "some": "holds on some hosts", "none": "holds on no host"}


def host_view(per_host, pooled, table=None):
    """The per-host view for people (`host_tables`' frames): for each comparison and server, one
    row per host (its processor, ratio [interval] and verdict), then the pooled row (the pooled
    ratio [interval], the spread between hosts, and whether the claim holds on every host, on
    some or on none). `table`, the verdict table of the same runs, names comparisons and servers
    as the rest of the report does; without it they read as keys and target names."""
    import pandas as pd

    from . import narrative
    words, servers = {}, {}
    if table is not None and len(table):
        workload = narrative.several_workloads(table)
        for r in table[table["target"].notna()].to_dict("records"):
            key = (r["claim"], r["comparison"], r["target"])
            words[key] = narrative.comparison_words(r, workload=workload)
            servers[key] = narrative.server_name(r.get("server_version"), r["target"])

    def ratio(estimate, low, high) -> str:
        return f"{narrative.number(estimate)} [{narrative.number(low)}, {narrative.number(high)}]"

    rows = []
    for key, group in per_host.groupby(["claim", "comparison", "target"], sort=False):
        claim, comparison, target = key
        named = {"claim": claim, "comparison": words.get(key, narrative.comparison_label(comparison)),
                 "server": servers.get(key, target)}
        for r in group.itertuples(index=False):
            rows.append(named | {"host": r.host, "processor": r.processor,
                                 "ratio [interval]": ratio(r.estimate, r.ci_low, r.ci_high),
                                 "verdict": r.verdict_label})
        p = pooled[(pooled["claim"] == claim) & (pooled["comparison"] == comparison)
                   & (pooled["target"] == target)].iloc[0]
        spread = (f"hosts read {narrative.number(p['host_low'])} to {narrative.number(p['host_high'])}"
                  + ("" if p["tau"] != p["tau"] else
                     f"; between-host SD {narrative.percent(p['tau'])} (log scale, beyond each host's noise)"))
        rows.append(named | {"host": f"pooled over {p['n_hosts']} hosts", "processor": spread,
                             "ratio [interval]": ratio(p["estimate"], p["ci_low"], p["ci_high"]),
                             "verdict": f"{p['verdict_label']}; {HOLDS_WORDS.get(p['holds_on'], p['holds_on'])} "
                                        f"({p['hosts_supported']} supported)"})
    return pd.DataFrame(rows, columns=["claim", "comparison", "server", "host", "processor", "ratio [interval]",
                                       "verdict"])


def host_view_html(run_ids: list[str], table=None, data_root: Path | None = None) -> str:
    """The summary's per-host view of `run_ids`: the table of `host_view` when they come from
    several hosts, else one line saying they come from one (naming it and its processor)."""
    import html

    from . import narrative
    from .store import find_run
    hosts: dict[str, set[str]] = {}
    for run_id in run_ids:
        name, cpu = host_of(find_run(run_id, data_root))
        hosts.setdefault(name, set()).add(cpu)
    if len(hosts) < 2:
        if not hosts:
            return "<p>No run to show by host.</p>"
        name, cpus = next(iter(hosts.items()))
        where = "this machine" if name == "local" else f"host {name}"
        return (f"<p>All {len(run_ids)} runs come from one host ({html.escape(where)}: "
                f"{html.escape('; '.join(sorted(cpus)))}), so there is no per-host view: runs from several "
                "hosts (<code>claimlab run --scheduler</code>, or <code>claimlab import</code>) give one.</p>")
    per_host, pooled = host_tables(run_ids, data_root)
    return narrative.table_html(
        host_view(per_host, pooled, table),
        caption=f"{len(hosts)} hosts: each host's own analysis, then the hosts pooled (random effects, "
                "Hartung-Knapp interval); the verdict says on how many hosts the claim holds")
