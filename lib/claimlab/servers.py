"""Targets: where a server comes from, how claimlab starts and stops it, and what it really runs with.

Three kinds share one interface:
- `mariadb`: the OS package's mariadbd, launched by claimlab in its own data directory and port;
- `mysql-tarball`: an official MySQL generic Linux tarball (local path, or downloaded once);
- `external`: a server someone else runs; never started, stopped or reconfigured.

Version differences (how to turn the binlog on or off, how to initialise a data directory) live in
`Flavor` only. The truth about a running server is what it reports (`facts()`), never the option file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import mysql.connector

from .errors import ConfigError, ServerGone, ServerStartError, TargetUnavailable

KINDS = ("mariadb", "mysql-tarball", "external")
_IDENT = re.compile(r"^[A-Za-z0-9_]+$")
_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_\-]*$")
_SIZE = re.compile(r"^[0-9]+[KMGkmg]?$")
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0
_SOCKET_DIR_PREFIX = "claimlab-"   # private socket directories under the system tmp
# CR_SERVER_GONE_ERROR, CR_SERVER_LOST, CR_SERVER_LOST_EXTENDED: the connection died, not the query.
LOST_CONNECTION_ERRNOS = (2006, 2013, 2055)
# Variables that differ between two starts of the same configuration and say nothing about it.
VOLATILE_VARIABLES = frozenset({
    "port", "socket", "pid_file", "datadir", "log_error", "hostname", "tmpdir", "general_log_file",
    "slow_query_log_file", "log_bin_basename", "log_bin_index", "relay_log_basename",
    "relay_log_index", "innodb_data_home_dir", "innodb_log_group_home_dir", "basedir",
    "server_uuid", "gtid_binlog_pos", "gtid_binlog_state", "gtid_current_pos", "gtid_slave_pos",
    "gtid_executed", "gtid_purged", "timestamp", "last_insert_id", "rand_seed1", "rand_seed2",
    "secure_file_priv", "plugin_dir", "lc_messages_dir", "character_sets_dir",
    "innodb_undo_directory", "innodb_tmpdir", "mysqlx_port", "mysqlx_socket", "report_port",
})


@dataclass(frozen=True)
class ServerOptions:
    """The server settings an experiment may vary. `None` leaves the server's default."""

    log_bin: bool | None = None
    sync_binlog: int | None = None
    innodb_flush_log_at_trx_commit: int | None = None
    character_set_server: str | None = None
    collation_server: str | None = None
    innodb_buffer_pool_size: str | None = None
    binlog_format: str | None = None
    extra: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        for name in ("character_set_server", "collation_server"):
            value = getattr(self, name)
            if value is not None and not _IDENT.match(value):
                raise ValueError(f"{name}: {value!r} is not a charset/collation name")
        if self.innodb_buffer_pool_size is not None and not _SIZE.match(self.innodb_buffer_pool_size):
            raise ValueError(f"innodb_buffer_pool_size: {self.innodb_buffer_pool_size!r} is not a size")
        if self.innodb_flush_log_at_trx_commit not in (None, 0, 1, 2):
            raise ValueError("innodb_flush_log_at_trx_commit: must be 0, 1 or 2")
        if self.sync_binlog is not None and self.sync_binlog < 0:
            raise ValueError("sync_binlog: must be >= 0")
        if self.binlog_format not in (None, "ROW", "STATEMENT", "MIXED"):
            raise ValueError("binlog_format: must be ROW, STATEMENT or MIXED")
        for key, value in self.extra:
            if not _OPTION_NAME.match(key):
                raise ValueError(f"extra: {key!r} is not an option name")
            if any(c in value for c in "\n\r\0"):
                raise ValueError(f"extra.{key}: the value may not contain line breaks")

    def merged(self, other: "ServerOptions") -> "ServerOptions":
        """Other's settings win where it sets them; extra options are merged by name."""
        values = {name: getattr(other, name) if getattr(other, name) is not None else getattr(self, name)
                  for name in self.__dataclass_fields__ if name != "extra"}
        extra = dict(self.extra) | dict(other.extra)
        return ServerOptions(**values, extra=tuple(sorted(extra.items())))

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "extra"
               and getattr(self, k) is not None}
        if self.extra:
            out["extra"] = dict(self.extra)
        return out

    def key(self) -> str:
        """A short stable name for a configuration: servers with equal options share a data directory."""
        return hashlib.sha256(repr(sorted(self.as_dict().items())).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class TargetSpec:
    """A target as declared in a params file (validated; secrets are only named, never held)."""

    name: str
    kind: str
    options: ServerOptions = ServerOptions()
    binary: str | None = None          # mariadb: mariadbd to use instead of the one on PATH
    version: str | None = None         # mysql-tarball: e.g. "8.0.40", downloaded once
    path: str | None = None            # mysql-tarball: a local .tar.gz/.tar.xz or an extracted directory
    sha256: str | None = None          # mysql-tarball: checksum the archive must have
    md5: str | None = None             # mysql-tarball: the checksum MySQL publishes on its download page
    host: str | None = None            # external
    port: int | None = None
    socket: str | None = None
    user: str | None = None
    password_env: str | None = None
    allow_remote: bool = False
    ready_timeout: float = READY_TIMEOUT_S   # local kinds: seconds to wait for a started server

    def public(self) -> dict[str, Any]:
        """What may be written to manifests: everything but nothing secret (only the variable's name)."""
        out = {"name": self.name, "kind": self.kind}
        for key in ("binary", "version", "path", "sha256", "md5", "host", "port", "socket", "user",
                    "password_env"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.kind == "external":
            out["allow_remote"] = self.allow_remote
        if self.options != ServerOptions():
            out["options"] = self.options.as_dict()
        return out


@dataclass(frozen=True)
class Flavor:
    """One server product and version: the single place where their option spellings differ."""

    vendor: str                      # "mariadb" or "mysql"
    version: tuple[int, int, int]

    def option_lines(self, opts: ServerOptions) -> list[str]:
        lines = []
        if opts.log_bin is True:
            lines += ["log-bin=binlog", "server-id=1"]
        elif opts.log_bin is False and self.vendor == "mysql" and self.version >= (8, 0, 0):
            # 8.0 logs by default, and `log_bin=OFF` in an option file does not turn it off.
            lines.append("skip-log-bin")
        # 5.7 and MariaDB log nothing unless asked: no line is the faithful "off".
        for name in ("sync_binlog", "innodb_flush_log_at_trx_commit", "character_set_server",
                     "collation_server", "innodb_buffer_pool_size", "binlog_format"):
            value = getattr(opts, name)
            if value is not None:
                lines.append(f"{name.replace('_', '-')}={value}")
        lines += [f"{k}={v}" for k, v in opts.extra]
        return lines

    def init_command(self, server_binary: Path, basedir: Path | None, datadir: Path, tmpdir: Path) -> list[str]:
        # A private tmpdir: a server that starts deletes every `#sql*` file in its tmpdir, which
        # would include the temporary tables of another claimlab's bootstrap sharing /tmp.
        if self.vendor == "mariadb":
            installer = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
            if not installer:
                raise TargetUnavailable("mariadb-install-db not found: install it with "
                                        "`apt-get install mariadb-server`")
            return [installer, "--no-defaults", f"--datadir={datadir}", "--user=root",
                    "--auth-root-authentication-method=normal", "--skip-test-db", f"--tmpdir={tmpdir}"]
        return [str(server_binary), "--no-defaults", "--initialize-insecure", f"--basedir={basedir}",
                f"--datadir={datadir}", f"--tmpdir={tmpdir}", "--user=root"]


def parse_version(text: str) -> tuple[int, int, int]:
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    if not m:
        raise TargetUnavailable(f"cannot read a version from {text!r}")
    return int(m[1]), int(m[2]), int(m[3])


@dataclass(frozen=True)
class ServerFacts:
    """What a server says about itself after a start: the only trusted record of its settings."""

    version: str
    variables: dict[str, str] = field(repr=False)
    log_bin: bool

    def stable_variables(self) -> dict[str, str]:
        return {k: v for k, v in sorted(self.variables.items()) if k not in VOLATILE_VARIABLES}


class Server:
    """A server claimlab can connect to. Local kinds are started and stopped by claimlab."""

    target: TargetSpec
    pid: int | None = None
    options: ServerOptions = ServerOptions()   # what claimlab asked for (empty for external targets)

    def connect_args(self) -> dict[str, Any]:
        raise NotImplementedError

    def connect(self, **extra):
        """A connection with an explicit charset, so the connector never guesses a collation."""
        args = dict(self.connect_args(), charset="utf8mb4", collation="utf8mb4_general_ci",
                    autocommit=True, connection_timeout=10)
        args.update(extra)
        try:
            return mysql.connector.connect(**args)
        except mysql.connector.Error as exc:
            raise ServerGone(f"target {self.target.name}: cannot connect: {exc.msg}") from None

    def lost(self, exc: mysql.connector.Error) -> bool:
        """Whether a failed statement means the server went away (retry on a new process), not
        that the statement itself was wrong."""
        return not self.alive() or exc.errno in LOST_CONNECTION_ERRNOS

    @contextlib.contextmanager
    def answering(self, doing: str) -> Iterator[None]:
        """Statements inside fail as ServerGone when the server went away (the runner retries
        those on a new process); any other connector error passes unchanged."""
        try:
            yield
        except mysql.connector.Error as exc:
            if self.lost(exc):
                raise ServerGone(f"target {self.target.name}: server went away while {doing}: "
                                 f"{exc.msg}") from None
            raise

    def facts(self) -> ServerFacts:
        conn = self.connect()
        try:
            with self.answering("reading its variables"):
                cur = conn.cursor()
                cur.execute("SELECT VERSION()")
                version = cur.fetchone()[0]
                cur.execute("SHOW GLOBAL VARIABLES")
                variables = {str(k): str(v) for k, v in cur.fetchall()}
        finally:
            conn.close()
        return ServerFacts(version=version, variables=variables,
                           log_bin=variables.get("log_bin", "OFF").upper() in ("ON", "1"))

    def alive(self) -> bool:
        return True

    def drop_schema(self, schema: str) -> None:
        """Only ever a schema claimlab owns: the prefix is checked here, where the SQL is built."""
        if not re.fullmatch(r"claimlab_[A-Za-z0-9_]{1,55}", schema):
            raise ValueError(f"refusing to drop {schema!r}: not a claimlab schema")
        conn = self.connect()
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{schema}`")
        finally:
            conn.close()

    def stop(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class LocalServer(Server):
    """A mariadbd or mysqld claimlab runs itself: own data directory, socket and loopback port."""

    def __init__(self, target: TargetSpec, flavor: Flavor, binary: Path, basedir: Path | None,
                 home: Path, options: ServerOptions):
        self.target, self.flavor, self.binary, self.basedir = target, flavor, binary, basedir
        self.home, self.options = home, options
        self.datadir = home / "data"
        self.error_log = home / "error.log"
        self.password_file = home / "root.password"
        self.pid_file = home / "server.pid"
        self.tmpdir = home / "tmp"   # private: see Flavor.init_command
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.sockdir: str | None = None
        self.password: str | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "LocalServer":
        self.home.mkdir(parents=True, exist_ok=True)
        self.tmpdir.mkdir(exist_ok=True)
        fresh = not (self.datadir / "mysql").is_dir()
        if fresh:
            self._initialise()
        # Unix sockets have a 108-byte path limit: keep the socket in a short private directory.
        self.sockdir = tempfile.mkdtemp(prefix=_SOCKET_DIR_PREFIX)
        for attempt in range(3):
            self.port = _free_port()
            cnf = self.home / "my.cnf"
            cnf.write_text(self._option_file())
            log_start = self.error_log.stat().st_size if self.error_log.exists() else 0
            self.proc = subprocess.Popen([str(self.binary), f"--defaults-file={cnf}", "--user=root"],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
            self.pid = self.proc.pid
            self.pid_file.write_text(f"{self.pid}\n")
            try:
                self._wait_ready(self.target.ready_timeout, fresh, log_start)
                return self
            except ServerStartError as exc:
                self._kill()
                if "Address already in use" in str(exc) and attempt < 2:
                    continue
                self._cleanup_sockdir()
                raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # mysqld and mariadbd shut down cleanly on TERM
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._kill()
        self.proc = None
        self.pid_file.unlink(missing_ok=True)
        self._cleanup_sockdir()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def connect_args(self) -> dict[str, Any]:
        return {"unix_socket": self._socket_path(), "user": "root", "password": self.password or ""}

    # -- internals -------------------------------------------------------------------------
    def _socket_path(self) -> str:
        return os.path.join(self.sockdir, "server.sock")

    def _option_file(self) -> str:
        lines = ["[mysqld]", f"datadir={self.datadir}", f"socket={self._socket_path()}",
                 f"port={self.port}", "bind-address=127.0.0.1", f"log-error={self.error_log}",
                 f"pid-file={self.home / 'mysqld.pid'}", f"tmpdir={self.tmpdir}", "skip-name-resolve"]
        if self.basedir:
            lines.append(f"basedir={self.basedir}")
        if self.flavor.vendor == "mysql" and self.flavor.version >= (8, 0, 0):
            lines.append("mysqlx=OFF")
        lines += self.flavor.option_lines(self.options)
        return "\n".join(lines) + "\n"

    def _initialise(self) -> None:
        """All or nothing: initialise beside the data directory and rename it into place, so a
        failed or killed initialisation never leaves a half-made system schema that a later start
        would take for a good one (MariaDB starts on it, without grant tables)."""
        partial = self.home / "data.partial"
        for path in (self.datadir, partial):
            if path.exists():
                shutil.rmtree(path)
        cmd = self.flavor.init_command(self.binary, self.basedir, partial, self.tmpdir)
        result = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).splitlines()
            tail = _tail([ln for ln in lines if "ERROR" in ln] or lines)
            shutil.rmtree(partial, ignore_errors=True)
            raise ServerStartError(f"target {self.target.name}: initialising {self.datadir} failed: {tail}")
        partial.rename(self.datadir)
        self.password_file.unlink(missing_ok=True)

    def _wait_ready(self, timeout: float, fresh: bool, log_start: int) -> None:
        deadline = time.monotonic() + timeout
        if self.password_file.exists():
            self.password = self.password_file.read_text().strip()
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(f"target {self.target.name}: server exited with code "
                                       f"{self.proc.returncode}: {self._log_tail(log_start)}")
            if os.path.exists(self._socket_path()):
                try:
                    conn = mysql.connector.connect(unix_socket=self._socket_path(), user="root",
                                                   password=self.password or "", charset="utf8mb4",
                                                   collation="utf8mb4_general_ci", connection_timeout=5)
                except mysql.connector.Error:
                    time.sleep(0.1)
                    continue
                try:
                    if self.password is None:
                        self._lock_down(conn)
                finally:
                    conn.close()
                return
            time.sleep(0.1)
        raise ServerStartError(f"target {self.target.name}: not ready after {timeout:.0f} s: "
                               f"{self._log_tail(log_start)}")

    def _lock_down(self, conn) -> None:
        """A fresh server has passwordless root and anonymous accounts: keep only root@localhost,
        with a random password that lives beside the data directory (mode 0600) and nowhere else."""
        cur = conn.cursor()
        cur.execute("SET SESSION sql_log_off = 1")   # keep the password out of a general log
        cur.execute("SELECT User, Host FROM mysql.user WHERE User IN ('', 'root') "
                    "AND NOT (User = 'root' AND Host = 'localhost')")
        for user, host in cur.fetchall():
            cur.execute("DROP USER %s@%s", (user, host))
        password = secrets.token_urlsafe(24)
        cur.execute("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (password,))
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(password)
        self.password = password

    def _log_tail(self, start: int = 0) -> str:
        try:
            with open(self.error_log, "rb") as fh:
                fh.seek(start)
                lines = fh.read().decode(errors="replace").splitlines()
        except OSError:
            return "(no error log)"
        errors = [ln for ln in lines if "[ERROR]" in ln] or lines
        return _tail(errors)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _cleanup_sockdir(self) -> None:
        if self.sockdir:
            shutil.rmtree(self.sockdir, ignore_errors=True)
            self.sockdir = None


class ExternalServer(Server):
    """Someone else's server: claimlab only connects, and only touches its own schemas."""

    def __init__(self, target: TargetSpec):
        self.target = target
        self.pid = None

    def connect_args(self) -> dict[str, Any]:
        t = self.target
        args: dict[str, Any] = {"user": t.user}
        if t.socket:
            args["unix_socket"] = t.socket
        else:
            args.update(host=t.host, port=t.port or 3306)
        if t.password_env:
            if t.password_env not in os.environ:
                raise TargetUnavailable(f"target {t.name}: environment variable {t.password_env} "
                                        "(password_env) is not set")
            args["password"] = os.environ[t.password_env]
        return args

    def start(self) -> "ExternalServer":
        try:
            self.connect().close()
        except ServerGone as exc:
            raise TargetUnavailable(str(exc)) from None
        return self


def remove_socket_dir(home: Path) -> None:
    """For a server whose claimlab died: its socket lived in a private directory outside `home`
    (a socket path has a 108-byte limit). Read it back from the option file `start` wrote, and
    remove it only if it is one claimlab made."""
    cnf = home / "my.cnf"
    if not cnf.exists():
        return
    for line in cnf.read_text().splitlines():
        if line.startswith("socket="):
            sockdir = Path(line.removeprefix("socket=")).parent
            if sockdir.name.startswith(_SOCKET_DIR_PREFIX):
                shutil.rmtree(sockdir, ignore_errors=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(lines: list[str], n: int = 3) -> str:
    text = " | ".join(ln.strip() for ln in lines[-n:] if ln.strip())
    return text or "(nothing logged)"


# -- resolving targets to launchable servers -------------------------------------------------

def cache_dir() -> Path:
    return Path(os.environ.get("CLAIMLAB_CACHE", Path.home() / ".cache" / "claimlab"))


def mariadb_binary(target: TargetSpec) -> Path:
    found = target.binary or shutil.which("mariadbd") or _first_existing("/usr/sbin/mariadbd")
    if not found or not os.access(found, os.X_OK):
        raise TargetUnavailable(f"target {target.name}: mariadbd not found; install it with "
                                "`apt-get install mariadb-server` (or run `make setup` as root)")
    return Path(found)


def _first_existing(*paths: str) -> str | None:
    return next((p for p in paths if os.path.exists(p)), None)


def tarball_url(version: str) -> str:
    """Where MySQL keeps a release's generic Linux tarball (its archive holds every GA release)."""
    major_minor = ".".join(version.split(".")[:2])
    if tuple(int(x) for x in version.split(".")[:2]) < (8, 0):
        name = f"mysql-{version}-linux-glibc2.12-x86_64.tar.gz"
    else:
        name = f"mysql-{version}-linux-glibc2.28-x86_64.tar.xz"
    return f"https://cdn.mysql.com/archives/mysql-{major_minor}/{name}"


def tarball_basedir(target: TargetSpec, download: bool = True) -> Path:
    """The extracted tarball's directory, extracting (and downloading) once into the cache."""
    if target.path and Path(target.path).is_dir():
        base = Path(target.path)
    else:
        archive = Path(target.path) if target.path else _download(target, download)
        if not archive.is_file():
            raise TargetUnavailable(f"target {target.name}: tarball {archive} does not exist")
        _verify_checksum(target, archive)
        base = cache_dir() / "mysql" / re.sub(r"\.tar\.(gz|xz)$", "", archive.name)
        if not (base / "bin" / "mysqld").exists():
            _extract(target, archive, base)
    if not (base / "bin" / "mysqld").exists():
        raise TargetUnavailable(f"target {target.name}: {base} has no bin/mysqld; is it a MySQL "
                                "generic Linux tarball?")
    return base


def _download(target: TargetSpec, allowed: bool) -> Path:
    url = tarball_url(target.version)
    archive = cache_dir() / "downloads" / url.rsplit("/", 1)[-1]
    if archive.exists():
        return archive
    if not allowed:
        raise TargetUnavailable(f"target {target.name}: MySQL {target.version} is not in the cache "
                                f"({archive}); give `path:` to a local tarball")
    if not (target.sha256 or target.md5):
        raise TargetUnavailable(f"target {target.name}: downloading needs the published checksum: "
                                "add `md5:` (from MySQL's download page) or `sha256:`")
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(archive.suffix + ".part")
    try:
        with urllib.request.urlopen(url, timeout=30) as response, open(partial, "wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise TargetUnavailable(f"target {target.name}: cannot download {url} ({exc}); with no "
                                "network, download it elsewhere and give its `path:`") from None
    partial.rename(archive)
    return archive


def _verify_checksum(target: TargetSpec, archive: Path) -> None:
    for algo in ("sha256", "md5"):
        expected = getattr(target, algo)
        if expected:
            digest = hashlib.new(algo)
            with open(archive, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
            if digest.hexdigest().lower() != expected.lower():
                raise TargetUnavailable(f"target {target.name}: {archive.name} {algo} is "
                                        f"{digest.hexdigest()}, expected {expected}: refusing it")


def _extract(target: TargetSpec, archive: Path, base: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix="extract-", dir=base.parent if base.parent.exists()
                                    else _mkdir(base.parent)))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="data")
        inner = [p for p in staging.iterdir() if p.is_dir()]
        if len(inner) != 1:
            raise TargetUnavailable(f"target {target.name}: {archive.name} is not a MySQL tarball")
        inner[0].rename(base)
    except (tarfile.TarError, EOFError, OSError) as exc:
        reason = str(exc).splitlines()[0].rstrip(":") if str(exc) else type(exc).__name__
        raise TargetUnavailable(f"target {target.name}: cannot extract {archive.name} (corrupt or "
                                f"truncated?): {reason}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def binary_version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    return (out.stdout or out.stderr).strip()


def check_available(target: TargetSpec) -> str:
    """A one-line description of what would run, or TargetUnavailable saying what to do."""
    if target.kind == "mariadb":
        binary = mariadb_binary(target)
        return binary_version(binary)
    if target.kind == "mysql-tarball":
        base = tarball_basedir(target, download=False)
        return binary_version(base / "bin" / "mysqld")
    server = ExternalServer(target).start()
    facts = server.facts()
    return f"external {facts.version}"


class Launcher:
    """Turns a target and a set of options into a started server, reusing one data directory
    per configuration so that loaded data survives restarts between repetitions."""

    def __init__(self, workdir: Path):
        self.workdir = workdir

    def server(self, target: TargetSpec, options: ServerOptions, fresh: bool = False) -> Server:
        if target.kind == "external":
            if options != ServerOptions():
                raise ConfigError("(params)", f"targets.{target.name}",
                                  "conditions may not set server options on an external target")
            return ExternalServer(target)
        effective = target.options.merged(options)
        home = self.workdir / f"{target.name}-{effective.key()}"
        if fresh and home.exists():
            shutil.rmtree(home)
        if target.kind == "mariadb":
            binary = mariadb_binary(target)
            return LocalServer(target, Flavor("mariadb", parse_version(binary_version(binary))),
                               binary, None, home, effective)
        base = tarball_basedir(target)
        binary = base / "bin" / "mysqld"
        return LocalServer(target, Flavor("mysql", parse_version(binary_version(binary))),
                           binary, base, home, effective)
