"""Shared fixtures. Integration tests start real MariaDB servers (never a mock) in tmp_path."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

# Before any test imports pandas: imported after it, mysql-connector's C extension cannot load
# ("libcrypto.so.3: version `OPENSSL_3.3.0' not found", then "cannot allocate memory in static TLS
# block"), so the connector's C-extension test failed whenever a module importing pandas had run
# first in the same worker.
import mysql.connector  # noqa: F401
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
RAW = ROOT / "data" / "raw"
# The shipped runs the suite reads, and the only ones: golden tests read these three, every other
# test makes its runs (a server, the writer, a copy of one of these) or simulates them, so the
# shipped set can change without a test changing. A test reads them through the store (CSV or
# packed Parquet alike) or takes a copy (`copy_run`); `_frozen_runs_only` fails a test that reads
# any other run under data/raw.
FROZEN = {
    "format_1": "binlog_default/20261122T082956Z-4c9448",       # C4 on MariaDB, the one format-1 run
    "c1": "charset_mismatch/20261127T205013Z-4e92a5",           # C1 on MariaDB, with its CPU evidence
    "why_slower": "seed004_hunt_mysql/20261123T155510Z-a94d26",  # the investigation's ablation on MySQL
}
# A tiny C2 experiment for the runner's tests: two collations of a 500-row scan on one local server
# of kind {kind}; a test appends its own `design:` line (a str.format template: braces doubled).
C2_TWO_COLLATIONS = """
claim: C2
targets:
  default: {{kind: {kind}, options: {{innodb_buffer_pool_size: 64M}}}}
workloads:
  varchar_scan: {{kind: varchar_scan, rows: 500}}
factors:
  collation:
    utf8mb3_general_ci: {{workloads: {{varchar_scan: {{charset: utf8mb3, collation: utf8mb3_general_ci}}}}}}
    utf8mb4_general_ci: {{workloads: {{varchar_scan: {{charset: utf8mb4, collation: utf8mb4_general_ci}}}}}}
"""

# A small run of two collations on the embedded MariaDB, for the resume and fault tests: two
# repetitions of three iterations, retried up to three times.
SMALL_SCAN = """
claim: C2
targets:
  default: {kind: mariadb, options: {innodb_buffer_pool_size: 64M}}
workloads:
  scan: {kind: varchar_scan, rows: 300}
factors:
  collation:
    general: {workloads: {scan: {charset: utf8mb4, collation: utf8mb4_general_ci}}}
    latin1: {workloads: {scan: {charset: latin1, collation: latin1_swedish_ci}}}
design: {repetitions: 2, warmup: 0, iterations: 3, max_attempts: 3}
"""

def frozen(name: str) -> Path:
    """A frozen run's directory (FROZEN)."""
    return RAW / FROZEN[name]


def frozen_id(name: str) -> str:
    return frozen(name).name


def unfrozen_run(path) -> str | None:
    """The shipped run ("experiment/run id") a file lies in when it is not a frozen one, else None."""
    text = os.path.abspath(os.fsdecode(path))
    if not text.startswith(_RAW_PREFIX):
        return None
    parts = text[len(_RAW_PREFIX):].split(os.sep)
    run = "/".join(parts[:2])
    return run if len(parts) > 2 and run not in FROZEN.values() else None


_RAW_PREFIX = str(RAW) + os.sep
_UNFROZEN_READS: list[str] = []


def _note_unfrozen_reads(event: str, args: tuple) -> None:
    """An audit hook (it cannot be removed, so it only notes): files opened in this process."""
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        run = unfrozen_run(args[0])
        if run:
            _UNFROZEN_READS.append(run)


sys.addaudithook(_note_unfrozen_reads)


@pytest.fixture(autouse=True)
def _frozen_runs_only():
    """A test, or a fixture set up for it, that opened a file of a shipped run other than FROZEN
    fails. Subprocesses are not watched: tests give them frozen run ids or a `frozen_checkout`."""
    yield
    read = sorted(set(_UNFROZEN_READS))
    _UNFROZEN_READS.clear()
    assert not read, f"read shipped runs that are not frozen (conftest.FROZEN): {', '.join(read)}"


def copy_run(source: Path, dest_root: Path, run_id: str | None = None, jitter: int | None = None) -> Path:
    """A copy of a stored run under dest_root/<experiment>/, its tables as CSV whether the source
    is packed or not, its checksums the copy's. Named `run_id`, it is another run of the same
    claim; with `jitter` (a seed), its values scaled by a seeded 1% noise, as a second session's."""
    import numpy as np

    from claimlab import pack, store, writer
    manifest = store.load_manifest(source)
    dest = dest_root / manifest.experiment / (run_id or manifest.run_id)
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("*.parquet"))
    rewritten = set(pack.packed_tables(manifest))
    if run_id or jitter is not None:
        rewritten |= {n for n in ("results.csv", "intervals.csv") if n in manifest.checksums}
    for name in sorted(rewritten):
        table = pack.read_table(source, name).assign(run_id=dest.name)
        if name == "results.csv" and jitter is not None:
            table["value"] = table["value"] * np.exp(np.random.default_rng(jitter).normal(0, 0.01, len(table)))
        table.to_csv(dest / name, index=False)
    copied = manifest.with_(run_id=dest.name, extra={k: v for k, v in manifest.extra.items() if k != "packed"})
    writer.RunStore(dest, manifest.columns).write_manifest(copied.with_(checksums=store.checksums(dest)))
    return dest


@pytest.fixture(scope="session")
def frozen_checkout(tmp_path_factory) -> Path:
    """A checkout (set CLAIMLAB_ROOT to it) whose shipped runs are copies of the frozen ones: C1's
    and C4's published, a second session of each listed as an earlier run, and the
    investigation's run; params, notebooks and claims are the project's. What the tests of the
    published set read, in place of the published runs."""
    root = tmp_path_factory.mktemp("checkout")
    for name in ("params", "notebooks"):
        (root / name).symlink_to(ROOT / name)
    (root / "data").mkdir()
    (root / "data" / "claims.yaml").symlink_to(ROOT / "data" / "claims.yaml")
    published, earlier = {}, {}
    for seed, name in enumerate(("c1", "format_1")):
        run = copy_run(frozen(name), root / "data" / "raw")
        again = copy_run(frozen(name), root / "data" / "raw", run_id=f"{run.name[:-6]}{seed:06d}", jitter=seed)
        published[run.parent.name], earlier[run.parent.name] = [run.name], [again.name]
    copy_run(frozen("why_slower"), root / "data" / "raw")
    for file, listed in (("published_runs.json", published), ("earlier_runs.json", earlier)):
        (root / "data" / file).write_text(json.dumps(listed, indent=1) + "\n")
    return root


def wait_for(predicate, timeout: float = 120.0):
    """The predicate's first truthy value, polled while a run goes on in another process; the
    timeout only bounds a hung run, it measures nothing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


# Loaded data directories the tests make are kept for the session only, not in the user's cache
# (MySQL's run to hundreds of megabytes each); subprocesses inherit the variable.
_DATADIRS = None if os.environ.get("CLAIMLAB_DATADIRS") else tempfile.mkdtemp(prefix="claimlab-test-datadirs-")
if _DATADIRS:
    os.environ["CLAIMLAB_DATADIRS"] = _DATADIRS


# The suite's data directories (the system temporary directory, the checkout's work/, and the
# initialised ones kept in ~/.cache/claimlab) peaked at 12.1-12.7 GiB above the start on one file
# system (`make test` after its set-up, df sampled each second, three runs, 2026-12-06); CI once
# failed with 6 GB free before the clone. Said in the header, so that a failure for want of disk is
# read as such.
SUITE_DISK_BYTES = 13 << 30


def pytest_report_header(config):
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if free < SUITE_DISK_BYTES:
        return (f"WARNING: {free / 2**30:.1f} GiB free in {tempfile.gettempdir()}; the suite needs about "
                f"{SUITE_DISK_BYTES / 2**30:.0f} GiB there: server starts will fail for want of disk")
    return f"disk: {free / 2**30:.0f} GiB free in {tempfile.gettempdir()}"


def pytest_sessionfinish(session, exitstatus):
    if _DATADIRS:
        shutil.rmtree(_DATADIRS, ignore_errors=True)


# The longest modules first, then the tiers. With four workers (Makefile) each taking whole
# modules, a long module that starts late is the suite's tail. Measured with pytest --durations:
# the notebook modules build reports for three to four minutes each (the smoke report on both
# servers; the re-render of the shipped runs), test_mysql and test_runner take about three
# minutes of server starts, test_cluster about two (its hosts' workers and servers),
# test_evidence_mysql a minute and a half in one test, test_evidence_mirror a minute (MySQL 5.7
# and 8.0 under callgrind); every other module takes under a minute.
_LONGEST = ("notebooks/test_reports.py", "notebooks/test_stored_runs.py", "integration/test_mysql.py",
            "integration/test_runner.py", "integration/test_cluster.py", "integration/test_evidence_mysql.py",
            "integration/test_evidence_mirror.py")
_TIER_ORDER = {"notebooks": 0, "integration": 1, "unit": 2}


def _start_order(item) -> int:
    module = f"{item.path.parent.name}/{item.path.name}"
    if module in _LONGEST:
        return _LONGEST.index(module)
    return len(_LONGEST) + _TIER_ORDER.get(item.path.parent.name, len(_TIER_ORDER))


def pytest_collection_modifyitems(config, items):
    """Tiers are the test directories; the integration and notebook tiers carry a marker of their name."""
    items.sort(key=_start_order)
    for item in items:
        if item.path.parent.name in ("integration", "notebooks"):
            item.add_marker(getattr(pytest.mark, item.path.parent.name))


@pytest.fixture(scope="session")
def mariadbd() -> str:
    """Integration tests need the OS package; its absence is a setup failure, not a skip."""
    found = shutil.which("mariadbd") or ("/usr/sbin/mariadbd" if os.path.exists("/usr/sbin/mariadbd") else None)
    assert found, "mariadbd not found: run `make setup` (installs mariadb-server) before the tests"
    return found


@pytest.fixture
def launcher(tmp_path, mariadbd):
    from claimlab.servers import Launcher
    return Launcher(tmp_path / "work")


@pytest.fixture
def default_target():
    from claimlab.servers import TargetSpec
    return TargetSpec(name="default", kind="mariadb")


@pytest.fixture
def server(launcher, default_target):
    from claimlab.servers import ServerOptions
    srv = launcher.prepare(default_target, ServerOptions(innodb_buffer_pool_size="64M"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def write_params(tmp_path):
    """Write a params file from YAML text; returns its path."""
    def write(text: str, name: str = "exp") -> Path:
        path = tmp_path / "params" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path
    return write


def run_cli(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 300):
    return subprocess.run([sys.executable, "-m", "claimlab.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})},
                          stdin=subprocess.DEVNULL)



def interrupt_when(args: list[str], child, signum: int, *, cwd: Path = ROOT, env: dict | None = None,
                   after: float = 0.0) -> tuple[int, str, list[psutil.Process]]:
    """Run `claimlab ARGS`, wait until a process below it matches `child` (a psutil.Process ->
    bool), send `signum` `after` seconds later, and give its exit status, its stderr and the
    matched processes. The command must end within two minutes: an interrupt that hangs fails."""
    proc = subprocess.Popen([sys.executable, "-m", "claimlab.cli", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    matched: list[psutil.Process] = []
    try:
        while proc.poll() is None and not matched:
            try:
                matched = [p for p in psutil.Process(proc.pid).children(recursive=True) if child(p)]
            except psutil.NoSuchProcess:
                break
            time.sleep(0.05)
        assert matched, f"nothing to interrupt came up: {proc.poll()} {proc.stderr.read()[-2000:]}"
        time.sleep(after)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err, matched


def looks_that_go_on(reason):
    """A sequential run's stopping callback that never stops: the server starts each look saw
    (a list it appends to), and the callback, whose reason is `reason(starts)`."""
    seen: list[int] = []

    def should_stop(results):
        seen.append(results["repetition"].nunique())
        return False, reason(seen[-1])

    return seen, should_stop

def written_bytes() -> int:
    """Bytes this process (and the children it reaped) sent toward storage: /proc/self/io."""
    return int(re.search(r"^write_bytes: (\d+)$", Path("/proc/self/io").read_text(), re.M)[1])


def pid_alive(pid: int) -> bool:
    """Running, not a zombie (which still answers kill(0))."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def query(server, sql: str, database: str | None = None) -> list[tuple]:
    """Run one statement on a server and return its rows (the connection is closed after)."""
    conn = server.connect(**({"database": database} if database else {}))
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall() if cur.with_rows else []
    finally:
        conn.close()


@pytest.fixture(scope="session")
def mysql_target():
    """Oracle MySQL from Debian's archive (`make setup` / `claimlab setup-mysql` fetches it; CI
    does). Where it cannot be set up, the MySQL tests skip with one line saying why."""
    from claimlab.errors import TargetUnavailable
    from claimlab.servers import TargetSpec, installation
    target = TargetSpec(name="mysql", kind="mysql-debian")
    try:
        installation(target)
    except TargetUnavailable as exc:
        pytest.skip(f"MySQL 9.7 not set up here: {exc}")
    return target


@contextlib.contextmanager
def module_scratch(request, tmp_path_factory, name: str):
    """A module fixture's directory, removed when the module is done unless one of its tests
    failed (as pytest keeps a failed test's tmp_path): pytest otherwise keeps every fixture's
    directory to the end of the session, and the servers' data directories in them held 8 GB by
    then (MySQL allocates its spare redo log files in full)."""
    path = tmp_path_factory.mktemp(name)
    failed = request.session.testsfailed
    yield path
    if request.session.testsfailed == failed:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def mysql_launcher(request, tmp_path_factory, mysql_target):
    """One work directory for a module: servers with equal options reuse one data directory."""
    from claimlab.servers import Launcher
    with module_scratch(request, tmp_path_factory, "mysql-work") as work:
        yield Launcher(work)


def evidence_servers(binary: str) -> list[str]:
    """Command lines of `binary`'s servers still running from an evidence work directory: a
    collection must stop every server it started. Only that binary's, since another module may be
    collecting evidence on another server at the same time."""
    lines = (" ".join(p.info["cmdline"] or ()) for p in psutil.process_iter(["cmdline"]))
    return [line for line in lines if "claimlab-evidence-" in line and binary in line]


def notebook_errors(nb_path: Path) -> list[str]:
    """The errors an executed notebook's outputs hold, as "Name: message"."""
    import nbformat
    nb = nbformat.read(nb_path, as_version=4)
    return [o.get("ename", "") + ": " + o.get("evalue", "") for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o.output_type == "error"]


# Every table, figure and card must fit the page: its right edge within the viewport, and a
# table not wider than its own box (a cut-off column).
OVERFLOW_JS = """return Array.from(document.querySelectorAll('table, img, svg, .card, pre')).filter(e => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && (r.right > document.documentElement.clientWidth + 1
                         || (e.tagName === 'TABLE' && e.scrollWidth > e.clientWidth + 1));
}).map(e => e.tagName + ' ' + Math.round(e.getBoundingClientRect().right) + 'px');"""


def settle(browser) -> None:
    """Wait until the page's fonts are loaded and laid out before measuring it. A table once
    measured 1317 px wide in a full suite and not alone; a font still loading under the suite's
    load on two cores (the fallback's wider glyphs) is the likely cause."""
    browser.execute_async_script("const done = arguments[arguments.length - 1]; document.fonts.ready.then("
                                 "() => requestAnimationFrame(() => requestAnimationFrame(() => done(true))));")


def headless_browser(profile_dir: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile_dir}", "--window-size=1280,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for a module's pages: starting it costs more than a page. A test
    that reads the console log takes it first (get_log drains it), so earlier pages' entries
    stay theirs."""
    driver = headless_browser(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


def store_evidence(run_dir: Path, experiment: str, stacks: dict[str, str], binaries: dict[str, str],
                   added: dict[str, str] | None = None) -> Path:
    """CPU evidence laid out as `evidence.collect` stored it before callgrind could count sysbench
    (folded stacks per condition, an empty instructions.csv, evidence.json with their checksums),
    with `added` files (name -> text) listed under `added` as `evidence.add_instructions` lists
    them. Returns the evidence directory."""
    import datetime as dt
    import json

    from claimlab.store import sha256_file
    out = run_dir / "evidence"
    out.mkdir(parents=True)
    for condition, stack in stacks.items():
        (out / f"{condition}.folded").write_text(f"{stack} 5\n")
    (out / "instructions.csv").write_text("\n")
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    meta = {"experiment": experiment, "targets": ["mysql57"], "profile": "smoke", "sample_seconds": 1.0,
            "event": "cpu-clock", "frequency_hz": 999, "binaries": binaries, "created_at": now,
            "naming": "claimlab.symbols", "not_profiled": {},
            "checksums": {f.name: sha256_file(f) for f in sorted(out.iterdir())}}
    for name, text in (added or {}).items():
        (out / name).write_text(text)
    if added:
        meta["added"] = {"what": "callgrind instruction counts", "conditions": list(stacks), "created_at": now,
                         "binaries": {}, "checksums": {name: sha256_file(out / name) for name in added}}
    (out / "evidence.json").write_text(json.dumps(meta, indent=1))
    return out


def mirror_target(name: str, version: str):
    """A MySQL tarball target from the mirror (CLAIMLAB_MYSQL_MIRROR; the Makefile sets it where a
    mirror sits beside the clone). Skipped (one line) where no mirror is given; a failure where
    one is given but cannot serve the version."""
    from claimlab.errors import TargetUnavailable
    from claimlab.servers import TargetSpec, installation, tarball
    if not os.environ.get(tarball.MIRROR_ENV):
        pytest.skip(f"no MySQL tarball mirror: {tarball.MIRROR_HINT}")
    target = TargetSpec(name=name, kind="mysql-tarball", version=version)
    try:
        installation(target)
    except TargetUnavailable as exc:
        pytest.fail(f"the mirror is given but cannot serve {version}: {exc}")
    return target


@pytest.fixture(scope="session")
def mysql57():
    """MySQL 5.7.23 from the mirror (skipped without one)."""
    return mirror_target("mysql57", "5.7.23")


@pytest.fixture(scope="session")
def mysql80():
    """MySQL 8.0.40 from the mirror (skipped without one)."""
    return mirror_target("mysql80", "8.0.40")
