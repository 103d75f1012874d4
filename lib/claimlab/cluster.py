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
and every file's checksum and moves the run into its store in one rename (`transfer.import_run`,
which `claimlab import` also uses): a worker never writes into the client's store, and a run is
stored whole or not at all.

Faults:
- a worker killed mid-run: the client notes the run as interrupted in its session journal, and
  Dask sends the task again when the host's worker returns (with the same worker directory the
  runner resumes the interrupted run there: measured units are not measured twice);
- a host gone for longer than a grace period (`move_after`): its jobs move to a live host of the
  same kind, a worker resource `kind-NAME` (hosts of one processor measure alike, so one stands in
  for another). Moving uses Dask's own means only: the task is cancelled (so the first host, should
  it return, does not measure it too) and submitted again under a key of its own, restricted to
  the other host; the journal says "moved". The run then names the host that measured it;
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
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from .errors import ClaimlabError, DataError, Interrupted
from .journal import Job, Journal, Session, new_session
from .store import load_manifest, read_jsonl, runs_root
from .transfer import archive_run, import_run
from .writer import RunStore, lock_writer, write_atomic

RESOURCE = "host"
KIND = "kind-"                # a worker's kind: the resource kind-NAME=1 it offers besides host=1
MOVE_AFTER_S = 600.0          # a host gone this long has its jobs moved to a live host of its kind
TOPIC = "claimlab-started"    # a Dask event per task start: which lost tasks were measuring
POLL_S = 1.0


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
        return Endpoint(_address(scheduler, "--scheduler"))
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
        if not isinstance(tls, dict) or set(tls) != {"ca_file", "cert", "key"} or \
                not all(isinstance(v, str) for v in tls.values()):
            raise ClaimlabError(f"{cluster_file}: tls: expected ca_file, cert and key (paths)")
        tls = {k: str((cluster_file.parent / v).resolve()) for k, v in tls.items()}
        absent = [k for k, v in tls.items() if not Path(v).is_file()]
        if absent:
            raise ClaimlabError(f"{cluster_file}: tls.{absent[0]}: no such file {tls[absent[0]]}")
    return Endpoint(_address(doc["scheduler"], f"{cluster_file}: scheduler"), tls)


def _address(address: str, where: str) -> str:
    """A scheduler's address as Dask takes it (tcp:// or tls://, a host and a port): anything else
    was a traceback from Dask's parser, or a wait on a port that never answered."""
    if not re.fullmatch(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):[0-9]{1,5}", address):
        raise ClaimlabError(f"{where} {address}: expected tcp://HOST:PORT or tls://HOST:PORT "
                            "(the scheduler's port, 8786 by default)")
    return address


def connect(where: Endpoint, timeout: float = 20):
    """A client of the scheduler, or one line. Dask's own timeout does not cover a port where
    something else answers (the dashboard's HTTP port: it waited for good), so the attempt runs
    in a thread of its own with a deadline."""
    import threading

    from distributed import Client
    made: dict = {}

    def attempt() -> None:
        try:
            made["client"] = Client(where.address, security=where.security(), timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            made["error"] = exc

    thread = threading.Thread(target=attempt, name="claimlab-connect", daemon=True)
    thread.start()
    thread.join(timeout + 5)
    if thread.is_alive():
        raise ClaimlabError(f"--scheduler {where.address}: no Dask scheduler answered in {timeout + 5:g} s "
                            "(another program's port, such as the dashboard's?)")
    error = made.get("error")
    if isinstance(error, (OSError, TimeoutError)):
        raise ClaimlabError(f"--scheduler {where.address}: cannot connect ({error})") from None
    if isinstance(error, TypeError):     # tls:// without TLS files, in a cluster file or Dask's configuration
        raise ClaimlabError(f"--scheduler {where.address}: cannot connect ({error}); a tls:// scheduler needs "
                            "the CA, certificate and key: a cluster file's tls, or Dask's distributed.comm.tls "
                            "settings") from None
    if error is not None:
        raise error
    return made["client"]


def hosts(client) -> dict[str, str]:
    """Worker name -> the host (address without port) of each worker offering `host=1`.

    Tasks are restricted by host, not by worker address: a worker that comes back on the same
    machine listens on a new port, and its task must still find it."""
    return {name: host for name, (host, _) in offering(client.scheduler_info(n_workers=-1)["workers"]).items()}


def offering(workers: dict) -> dict[str, tuple[str, str]]:
    """Worker name -> (its host, its kind) of each worker (`scheduler_info()["workers"]`) offering
    `host=1`. The kind is NAME of the resource `kind-NAME` it offers; "" (none declared): the
    host stands in for no other, and its jobs wait for it alone."""
    out = {}
    for address, info in workers.items():
        resources = info.get("resources", {})
        if resources.get(RESOURCE, 0) >= 1:
            name = str(info.get("name", address))
            if name == address:   # Dask names an unnamed worker by its address, whose port changes
                raise ClaimlabError(f"cluster: the worker at {address} has no name; start it with "
                                    f"`--name HOST` (the host's name in manifests, and how --resume finds it)")
            out[name] = (info["host"], worker_kind(resources))
    return out


def worker_kind(resources) -> str:
    """NAME of the first resource `kind-NAME` among a worker's resources; "" when it declares none."""
    kinds = sorted(r[len(KIND):] for r in resources if r.startswith(KIND))
    return kinds[0] if kinds else ""


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
    from . import runner
    from .campaign import should_stop
    worker = get_worker()
    name, kind = str(worker.name), worker_kind(worker.state.total_resources)
    worker.log_event(TOPIC, {"key": key})
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
        write_atomic(source, params_text)
    exp = params_mod.with_default_target(params_mod.load(source, profile), target, "--target")
    data_root = base / "runs"
    earlier = _earlier_run(data_root / experiment, source)
    resume = None
    if earlier is not None and load_manifest(earlier).status != "complete":
        resume = earlier.name
    if earlier is None or resume:
        outcome = runner.run(exp, data_root=data_root, work_root=base / "work", resume=resume,
                             progress=False, should_stop=should_stop(exp))
        earlier = outcome.path
    _stamp_host(earlier, name, kind)
    outbox.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(outbox, archive_run(earlier))
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


def _stamp_host(path: Path, name: str, kind: str) -> None:
    """The host's identity in the manifest: the worker's name and kind (which hosts may stand in for
    it) beside the processor, cores and kernel the runner recorded, and the server builds the run's
    starts reported. The manifest is not among the checksummed files, so this changes no checksum."""
    manifest = load_manifest(path)
    builds = sorted({f"{r.get('target')}: {r.get('version')}" for r in read_jsonl(path / "servers.jsonl")})
    host = dict(manifest.provenance.get("host", {})) | {"worker_name": name, "worker_kind": kind,
                                                       "server_builds": builds}
    store = RunStore(path, manifest.columns, lock_writer(path))
    try:
        store.write_manifest(manifest.with_(provenance=manifest.provenance | {"host": host}))
    finally:
        store.close()


def _packed(outbox: Path, host: str, resumed: bool) -> dict:
    data = outbox.read_bytes()
    return {"archive": data, "sha256": hashlib.sha256(data).hexdigest(), "host": host, "resumed": resumed}


# -- on the client: the session ------------------------------------------------------------------

def run(where: Endpoint, experiments: list[str], *, profile: str, targets: list[str] | None = None,
        declared_only: bool = False, data_root: Path | None = None, resume: str | None = None,
        move_after: float | None = None, log: Callable[[str], None] = print) -> Session:
    """Every experiment on each target (None: its default) and each host, all sent at once so
    that each host works through its own queue; runs stored as they come back. `declared_only`:
    each experiment on those of `targets` it declares, else its default (`campaign.chosen_targets`).
    With `resume`, the session's jobs not yet stored are sent again (what finished while no
    client waited is collected from the workers' outboxes). A host gone for `move_after` seconds
    (default MOVE_AFTER_S) has its jobs moved to a live host of its kind."""
    from . import params as params_mod
    from .store import project_root
    if move_after is not None and not move_after >= 0:
        raise ClaimlabError(f"--move-after {move_after:g}: expected the seconds a host may be gone (0 or more)")
    data_root = Path(data_root or runs_root())
    root = project_root()
    client = connect(where)
    try:
        live = offering(client.scheduler_info(n_workers=-1)["workers"])
        on = {name: host for name, (host, _) in live.items()}
        kinds = {name: kind for name, (_, kind) in live.items()}
        if resume:
            journal = Journal(data_root, resume)
            records = journal.read()
            jobs = journal.unfinished(records)
            kinds = {r["host"]: r["kind"] for r in records if r.get("kind")} | kinds
            session = Session(resume)
            if not jobs:
                log(f"cluster session {resume}: every job is stored or failed; nothing left to collect")
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
                f"({', '.join(sorted(on))}); if this stops, {_resume_hint(session.session)}")
        pending = {}
        for job in jobs:
            pending[_submit(client, job, on.get(job.host, job.host), root)] = job
            journal.write("submitted", job, kind=kinds.get(job.host, ""))
        try:
            _collect(client, journal, pending, kinds, session, data_root, root, log,
                     MOVE_AFTER_S if move_after is None else move_after)
        except (KeyboardInterrupt, Interrupted):   # this client stops waiting; the hosts go on
            stopped = Interrupted(f"cluster session {session.session}: interrupted here; the hosts go on with "
                                  "their runs and keep them in their outboxes")
            stopped.advice = (f"cluster session {session.session} keeps what was measured; resume with: claimlab "
                              f"run {jobs[0].experiment if jobs else 'EXPERIMENT'} --resume {session.session} "
                              "with the same --scheduler or --cluster-file",)
            raise stopped from None
    finally:
        client.close()
    return session


def _resume_hint(session: str) -> str:
    return (f"`claimlab run EXPERIMENT --resume {session}` with the same --scheduler or --cluster-file "
            "collects the session's runs (any of its experiments; then `claimlab report --from-data RUN ...`)")


def _submit(client, job: Job, host: str, root: Path):
    """The job's task, restricted to `host` (its worker's address, or its name while it is gone)."""
    from distributed import fire_and_forget

    from . import params as params_mod
    text = params_mod.find(job.experiment, root / "params").read_text()
    future = client.submit(measure, job.key, job.experiment, text, job.profile, job.target,
                           key=job.key, workers=[host], allow_other_workers=False,
                           resources={RESOURCE: 1}, retries=0, pure=False)
    fire_and_forget(future)     # a killed client leaves it to finish, packed in the outbox
    return future


def _collect(client, journal: Journal, pending: dict, kinds: dict[str, str], session: Session,
             data_root: Path, root: Path, log, move_after: float) -> None:
    where: dict[str, str] = {}      # key -> the worker address processing it, as last seen
    lost: dict[str, int] = {}       # key -> starts already counted as interrupted
    gone: dict[str, float] = {}     # host -> since when (monotonic) no worker of that name is there
    while pending:
        workers = client.scheduler_info(n_workers=-1).get("workers")
        if workers is None:   # the scheduler is gone (its answer is empty while the client reconnects)
            raise ClaimlabError(f"cluster session {session.session}: the scheduler stopped answering; the hosts "
                                f"keep what they measure: once it is back, {_resume_hint(session.session)}")
        live = offering(workers)
        kinds.update({name: kind for name, (_, kind) in live.items()})
        for host in {job.host for job in pending.values()}:
            if host in live:
                gone.pop(host, None)
            else:
                gone.setdefault(host, time.monotonic())
        for address, keys in client.processing().items():
            for key in keys:
                where[key] = address
        starts: dict[str, int] = {}
        for _, event in client.get_events(TOPIC):
            starts[event["key"]] = starts.get(event["key"], 0) + 1
        for future, job in list(pending.items()):
            if where.get(job.key) and where[job.key] not in workers and not future.done():
                del where[job.key]      # sent to a worker, not yet started there: Dask simply sends it again
                if starts.get(job.key, 0) > lost.get(job.key, 0):
                    lost[job.key] = starts[job.key]
                    session.interrupted.append(job)
                    journal.write("interrupted", job, reason="the host's worker left mid-run")
                    log(f"{job.host}: lost mid-run ({job.experiment} on {job.target}): interrupted; "
                        "Dask sends it again when the host's worker returns"
                        + (f" (or, after {move_after:g} s, to another host of kind {kinds[job.host]})"
                           if kinds.get(job.host) else ""))
            if future.done():
                del pending[future]
                _store(future, job, journal, session, data_root, log)
            elif job.host in gone and time.monotonic() - gone[job.host] >= move_after:
                to = _move(client, future, job, pending, live, kinds.get(job.host, ""), journal, session, root)
                if to:
                    log(f"{job.host}: gone for {move_after:g} s or more; {job.experiment} on {job.target} "
                        f"moved to {to}, a host of its kind ({kinds[job.host]})")
        if pending:
            time.sleep(POLL_S)


def _move(client, future, job: Job, pending: dict, live: dict[str, tuple[str, str]], kind: str,
          journal: Journal, session: Session, root: Path) -> str | None:
    """A gone host's job, to the live host of its kind with the fewest jobs waiting (its name;
    None: no host of its kind is there, and the job waits for its own). The old task
    is cancelled first, with force (a fire-and-forget task is otherwise kept for its other
    owner), so the first host, should it return, does not measure it too; the journal's "moved"
    names the new job, which `--resume` sends in place of the old."""
    waiting = Counter(j.host for j in pending.values())
    others = sorted((waiting[name], name) for name, (_, k) in live.items() if kind and k == kind and name != job.host)
    if not others:
        return None
    to = others[0][1]
    client.cancel([future], force=True, reason=f"moved to {to}")
    moved = replace(job, host=to, moved_from=job.moved_from or job.host)
    del pending[future]
    pending[_submit(client, moved, live[to][0], root)] = moved
    session.moved[job] = moved
    journal.write("moved", job, to=to, new_key=moved.key, kind=kind)
    return to


def _store(future, job: Job, journal: Journal, session: Session, data_root: Path, log) -> None:
    from distributed import KilledWorker
    try:
        result = future.result()
    except KilledWorker as exc:   # its worker died mid-run again and again: the run waits on the host
        reason = f"its worker died mid-run too often for Dask to send it again ({type(exc).__name__})"
        session.failed[job] = reason
        journal.write("interrupted", job, reason=reason)    # not "failed": --resume sends it again
        log(f"{job.host}: {job.experiment} on {job.target}: its worker died during the run too often for Dask "
            f"to send it again; the host keeps what it measured, and {_resume_hint(job.session)}")
        return
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
    try:
        path, new = import_run(result["archive"], data_root)
    except (DataError, OSError) as exc:   # this host's run only: the others are still stored
        reason = str(exc).replace("the worker's archive", f"{job.host}'s archive")
        session.failed[job] = reason
        journal.write("failed", job, reason=reason)
        log(f"{job.host}: {job.experiment} on {job.target}: not stored: {reason}")
        return
    session.stored[job] = path
    journal.write("stored", job, run_id=path.name, new=new, resumed=result["resumed"])
    log(f"{job.host}: {job.experiment} on {job.target}: run {path.name} stored"
        + ("" if new else " (already stored)") + (" (resumed after an interruption)" if result["resumed"] else ""))


# -- the report's runs ---------------------------------------------------------------------------

def failed_line(session: Session) -> str:
    """The runs a session could not store, by host: said last, and the exit status says it too."""
    hosts = sorted({job.host for job in session.failed})
    return (f"{len(session.failed)} run(s) of cluster session {session.session} not stored, on "
            f"{', '.join(hosts)} (the reasons are above); the results cover the other hosts only")


def report_runs(where: Endpoint, experiments: list[str] | None, *, profile: str, targets: list[str],
                data_root: Path | None, move_after: float | None = None, log=print) -> tuple[list[str], str]:
    """`claimlab report --scheduler`: every claim's runs on every host, stored here (their ids, and
    a line on those not stored, "" if none); the report then re-analyses them as stored runs. A
    target an experiment does not declare is left out for it (as `campaign.chosen_targets` does on
    one machine)."""
    from . import report
    session = run(where, experiments or list(report.NOTEBOOKS), profile=profile, targets=targets,
                  declared_only=True, data_root=data_root, move_after=move_after, log=log)
    run_ids = [path.name for path in session.stored.values()]
    if not run_ids:
        raise ClaimlabError(f"--scheduler {where.address}: no run came back from any host")
    return run_ids, failed_line(session) if session.failed else ""


