"""Server products and versions: the one place where MySQL and MariaDB, 5.7 and 8.x, differ.

What differs, and why it matters here:
- turning the binary log off: 8.0+ logs by default and only `skip-log-bin` turns it off; 5.7 and
  MariaDB log nothing unless asked, so no line is the faithful "off";
- initialising a data directory: `mariadb-install-db` vs `mysqld --initialize-insecure`;
- names: the accent-insensitive UCA collation is `utf8mb4_0900_ai_ci` on MySQL 8+ and
  `utf8mb4_uca1400_ai_ci` on MariaDB >= 10.10; 5.7 and early 8.0 spell utf8mb3 `utf8`. Params
  may name a role (`uca_ai`) instead, which `resolve` spells for each server before it starts;
- counters: MariaDB counts binlog commits and group commits in SHOW GLOBAL STATUS, MySQL does
  not; its witnesses are the binlog transaction cache and performance_schema's file I/O summary.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from ..errors import TargetUnavailable
from .options import ServerOptions

# Roles a params file may use for a charset or collation, resolved per server flavour.
ROLES = ("uca_ai",)
# Counters both products have (SHOW GLOBAL STATUS), read before and after each measurement.
COMMON_COUNTERS = (
    "Innodb_data_fsyncs", "Innodb_os_log_written", "Innodb_data_written",
    "Questions", "Com_insert", "Com_select", "Com_update", "Com_delete", "Com_commit",
    "Com_call_procedure", "Handler_commit", "Handler_write", "Handler_update", "Handler_delete",
    "Handler_read_key", "Handler_read_next", "Handler_read_rnd_next",
)
MARIADB_BINLOG_COUNTERS = ("Binlog_commits", "Binlog_group_commits", "Binlog_bytes_written")
# MySQL: transactions (and non-transactional statements) that went through the binlog caches:
# one per binlog commit. Group commits have no counter; see `witness_queries`.
MYSQL_BINLOG_COUNTERS = ("Binlog_cache_use", "Binlog_stmt_cache_use", "Binlog_cache_disk_use")
# performance_schema.file_summary_by_event_name for the binlog files: the bytes written, and the
# "misc" operations, which are the fsyncs (one per group commit with sync_binlog=1) plus the
# rare open/close/stat. On by default on MySQL (file instruments are enabled at start).
_PFS_BINLOG = ("SELECT COUNT_MISC, SUM_NUMBER_OF_BYTES_WRITE FROM performance_schema."
               "file_summary_by_event_name WHERE EVENT_NAME = 'wait/io/file/sql/binlog'")
PFS_BINLOG_METRICS = ("pfs.binlog_misc_ops", "pfs.binlog_bytes_written")


def parse_version(text: str) -> tuple[int, int, int]:
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    if not m:
        raise TargetUnavailable(f"cannot read a version from {text!r}")
    return int(m[1]), int(m[2]), int(m[3])


def canonical_name(name: str) -> str:
    """`utf8` and `utf8_general_ci` are the old spellings of `utf8mb3` and `utf8mb3_general_ci`:
    5.7 and early 8.0 answer with them when asked for the new ones."""
    return re.sub(r"^utf8(?=_|$)", "utf8mb3", name.strip().lower())


@dataclass(frozen=True)
class Flavor:
    """One server product and version. What is the same for both products lives here; what
    differs is a method each product's subclass answers, so no caller asks which product it has."""

    version: tuple[int, int, int]
    vendor: ClassVar[str]            # the key symbols.LAYOUTS and manifests know a product by
    product: ClassVar[str]

    @staticmethod
    def from_version_text(text: str) -> "Flavor":
        """From `SELECT VERSION()` or `--version`: MariaDB says so; anything else is MySQL."""
        product = MariaDB if "mariadb" in text.lower() else MySQL
        return product(parse_version(re.sub(r"^5\.5\.5-", "", text.strip())))

    def __str__(self) -> str:
        return f"{self.product} {'.'.join(map(str, self.version))}"

    @property
    def mysql8(self) -> bool:
        """MySQL 8.0 or later: binary log on by default, UCA 9.0.0 collations, X Protocol."""
        return False

    @property
    def slow_shutdown(self) -> bool:
        """A clean shutdown that mostly waits (see MySQL.slow_shutdown); the runner hides it
        behind the next server's start (units.Stopping)."""
        return False

    # -- option files and initialisation ---------------------------------------------------
    def option_lines(self, opts: ServerOptions) -> list[str]:
        """The settings' lines of an option file. Charset and collation names must already be
        resolved for this flavour (`resolve_options`)."""
        lines = []
        if opts.log_bin is True:
            lines += ["log-bin=binlog", "server-id=1"]
        elif opts.log_bin is False and self.mysql8:
            # 8.0 logs by default, and `log_bin=OFF` in an option file does not turn it off.
            lines.append("skip-log-bin")
        for name in ("sync_binlog", "innodb_flush_log_at_trx_commit", "character_set_server",
                     "collation_server", "innodb_buffer_pool_size", "binlog_format"):
            value = getattr(opts, name)
            if value is not None:
                lines.append(f"{name.replace('_', '-')}={value}")
        lines += [f"{k}={v}" for k, v in opts.extra]
        return lines

    def base_lines(self, home: Path) -> list[str]:
        """What every server of this flavour needs in its option file, beside the experiment's
        settings (which come later and so win where they repeat a name)."""
        return []

    def init_command(self, binary: Path, defaults_file: Path) -> list[str]:
        """Initialise with the same option file the server will start with: init-only settings
        (lower_case_table_names, innodb_page_size) must be there at initialisation."""
        raise NotImplementedError

    def valgrind_options(self, opts: ServerOptions, pool: str = "128M") -> ServerOptions:
        """The settings InnoDB needs to start under valgrind, which does not emulate native AIO
        (both products then use simulated AIO)."""
        size = opts.innodb_buffer_pool_size or pool
        return opts.merged(ServerOptions(innodb_buffer_pool_size=size, extra=tuple(self._valgrind_extra(size).items())))

    def _valgrind_extra(self, size: str) -> dict[str, str]:
        raise NotImplementedError

    # -- names: roles and spellings --------------------------------------------------------
    def resolve(self, name: str) -> tuple[str | None, str | None]:
        """A charset or collation name (or role) as this server spells it: (name, None), or
        (None, why this server has nothing that fits)."""
        lowered = name.lower()
        if lowered == "uca_ai":
            spelled = self._uca_ai()
            if spelled is None:
                return None, f"{self} has no UCA 9.0/14.0 accent-insensitive collation (role uca_ai)"
            return spelled, None
        reason = self._missing_collation(name, lowered)
        if reason:
            return None, reason
        if lowered.startswith("utf8mb3_") and self._old_utf8_names():
            return "utf8_" + name[len("utf8mb3_"):], None
        return name, None

    def _uca_ai(self) -> str | None:
        """This server's UCA 9.0/14.0 accent-insensitive collation, if it has one."""
        raise NotImplementedError

    def _missing_collation(self, name: str, lowered: str) -> str | None:
        """Why this server has no collation of that family, or None if it may have it."""
        raise NotImplementedError

    def _old_utf8_names(self) -> bool:
        """Whether utf8mb3 collations are still named `utf8_*` here."""
        raise NotImplementedError

    def resolve_options(self, opts: ServerOptions) -> tuple[ServerOptions | None, str | None]:
        changes = {}
        for field in ("character_set_server", "collation_server"):
            value = getattr(opts, field)
            if value is not None:
                spelled, reason = self.resolve(value)
                if spelled is None:
                    return None, f"{field}: {reason}"
                changes[field] = spelled
        if changes.get("collation_server", "").startswith("utf8mb4_") and "character_set_server" not in changes:
            changes["character_set_server"] = "utf8mb4"
        return replace(opts, **changes), None

    @staticmethod
    def same_name(wanted: str, reported: str) -> bool:
        return canonical_name(wanted) == canonical_name(reported)

    # -- counters --------------------------------------------------------------------------
    def status_counters(self) -> tuple[str, ...]:
        """SHOW GLOBAL STATUS counters this flavour must have: a missing one is an error, never
        a silently absent metric."""
        raise NotImplementedError

    def witness_queries(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Further counters from queries: (SQL returning one row, metric names of its columns)."""
        return ()

    # -- client ----------------------------------------------------------------------------
    def connector_note(self) -> str | None:
        """Why the client library may not fit this server, if it may not."""
        return None


@dataclass(frozen=True)
class MariaDB(Flavor):
    vendor: ClassVar[str] = "mariadb"
    product: ClassVar[str] = "MariaDB"

    def init_command(self, binary: Path, defaults_file: Path) -> list[str]:
        installer = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
        if not installer:
            raise TargetUnavailable("mariadb-install-db not found: install it with "
                                    "`apt-get install mariadb-server`")
        return [installer, f"--defaults-file={defaults_file}", "--user=root",
                "--auth-root-authentication-method=normal", "--skip-test-db"]

    def _valgrind_extra(self, size: str) -> dict[str, str]:
        """MariaDB 10.11 reserves address space for `innodb_buffer_pool_size_max` and cannot
        reserve its default under valgrind, so the maximum is capped at the pool's size."""
        return {"innodb-buffer-pool-size-max": size, "skip-innodb-use-native-aio": "ON"}

    def _uca_ai(self) -> str | None:
        return "utf8mb4_uca1400_ai_ci" if self.version >= (10, 10, 0) else None

    def _missing_collation(self, name: str, lowered: str) -> str | None:
        if "_0900_" in lowered and self.version < (11, 4, 5):
            return f"{self} has no utf8mb4_0900_* collations ({name}); MariaDB's analogue is role uca_ai"
        if "_uca1400_" in lowered and self.version < (10, 10, 0):
            return f"{self} has no UCA 14.0 collations ({name})"
        return None

    def _old_utf8_names(self) -> bool:
        """Before MariaDB 10.6, utf8mb3 collations are named `utf8_*`."""
        return self.version < (10, 6, 0)

    def status_counters(self) -> tuple[str, ...]:
        """MariaDB 10.8 dropped Innodb_os_log_fsyncs (its redo log is written differently since)."""
        log = ("Innodb_os_log_fsyncs",) if self.version < (10, 8, 0) else ()
        return COMMON_COUNTERS + log + MARIADB_BINLOG_COUNTERS


@dataclass(frozen=True)
class MySQL(Flavor):
    vendor: ClassVar[str] = "mysql"
    product: ClassVar[str] = "MySQL"

    @property
    def mysql8(self) -> bool:
        return self.version >= (8, 0, 0)

    @property
    def slow_shutdown(self) -> bool:
        """Oracle MySQL's clean shutdown waits out its InnoDB master thread's one-second sleep and
        its native AIO threads' 500 ms reap timeout, neither of which a setting shortens (strace
        of MySQL 9.7.4: 1.2-1.5 s a stop, against 0.03 s for MariaDB 10.11)."""
        return True

    def base_lines(self, home: Path) -> list[str]:
        files = home / "files"
        files.mkdir(parents=True, exist_ok=True)
        lines = [f"secure-file-priv={files}"]     # its default, /var/lib/mysql-files, must exist
        if self.mysql8:
            # Else X Protocol opens port 33060; `loose-`, since builds without the X plugin (source
            # builds configured without it) refuse `mysqlx` as an unknown option.
            lines.append("loose-mysqlx=OFF")
        if self.version >= (8, 0, 30):
            # The 100 MiB default stalls a 1M-row load on redo checkpoints (MariaDB's 96M log
            # file does not); sized like a server that loads such tables would be.
            lines.append("innodb-redo-log-capacity=512M")
        return lines

    def init_command(self, binary: Path, defaults_file: Path) -> list[str]:
        return [str(binary), f"--defaults-file={defaults_file}", "--initialize-insecure", "--user=root"]

    def _valgrind_extra(self, size: str) -> dict[str, str]:
        """MySQL has no `innodb_buffer_pool_size_max` (it would refuse to start)."""
        return {"innodb-use-native-aio": "OFF"}

    def _uca_ai(self) -> str | None:
        return "utf8mb4_0900_ai_ci" if self.mysql8 else None

    def _missing_collation(self, name: str, lowered: str) -> str | None:
        if "_0900_" in lowered and not self.mysql8:
            return f"{self} has no UCA 9.0.0 collations ({name})"
        if "_uca1400_" in lowered:
            return f"{self} has no UCA 14.0 collations ({name}); MySQL's analogue is role uca_ai"
        return None

    def _old_utf8_names(self) -> bool:
        """Before MySQL 8.0.30, utf8mb3 collations are named `utf8_*`."""
        return self.version < (8, 0, 30)

    def status_counters(self) -> tuple[str, ...]:
        return COMMON_COUNTERS + ("Innodb_os_log_fsyncs",) + MYSQL_BINLOG_COUNTERS

    def witness_queries(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return ((_PFS_BINLOG, PFS_BINLOG_METRICS),) if self.version >= (5, 7, 0) else ()

    def connector_note(self) -> str | None:
        """mysql-connector-python 9.x is tested by Oracle against 8.0 and later only."""
        if self.version < (8, 0, 0):
            return (f"{self}: mysql-connector-python 9.x does not support MySQL 5.7 servers "
                    "(it connects with mysql_native_password, but is untested there)")
        return None
