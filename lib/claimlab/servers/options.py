"""What a params file may say about a server: the settings an experiment varies (`ServerOptions`)
and where a server comes from (`TargetSpec`). Both are validated when built."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

KINDS = ("mariadb", "mysql-debian", "mysql-tarball", "external")
READY_TIMEOUT_S = 60.0
INIT_TIMEOUT_S = 300.0
# `\Z`, not `$` (which also matches before a final newline): these end up as lines of my.cnf
_IDENT = re.compile(r"[A-Za-z0-9_]+\Z")
_OPTION_NAME = re.compile(r"[a-z][a-z0-9_\-]*\Z")
_SIZE = re.compile(r"[0-9]+[KMGkmg]?\Z")
# Where a server's files go and how it is reached are claimlab's: each server gets its own data
# directory, socket and files, and nothing else. An `extra` option naming one of these came last in
# the option file and won: `datadir` pointed a server (which then changed accounts) at a directory
# claimlab does not own. Names are compared with '-' as '_' and without loose-/skip-/enable-/disable-.
MANAGED_OPTIONS = frozenset({
    "datadir", "socket", "port", "bind_address", "networking", "name_resolve", "log_error", "pid_file",
    "tmpdir", "basedir", "user", "secure_file_priv", "plugin_dir", "lc_messages_dir", "character_sets_dir",
    "init_file", "grant_tables", "mysqlx", "mysqlx_port", "mysqlx_socket", "mysqlx_bind_address",
    "admin_address", "admin_port", "innodb_data_home_dir", "innodb_log_group_home_dir",
    "innodb_undo_directory", "innodb_temp_tablespaces_dir", "innodb_tmpdir", "defaults_file",
    "defaults_extra_file", "defaults_group_suffix", "log_bin_basename", "log_bin_index", "relay_log",
    "relay_log_index", "relay_log_info_file"})
_OPTION_PREFIXES = ("loose_", "skip_", "enable_", "disable_")



@dataclass(frozen=True)
class ServerOptions:
    """The server settings an experiment may vary. `None` leaves the server's default.

    `character_set_server` and `collation_server` may name a role (see `Flavor.resolve`), which is
    spelled for each server before it starts."""

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
            if value is not None and not _IDENT.fullmatch(value):
                raise ValueError(f"{name}: {value!r} is not a charset/collation name")
        if self.innodb_buffer_pool_size is not None and not _SIZE.fullmatch(self.innodb_buffer_pool_size):
            raise ValueError(f"innodb_buffer_pool_size: {self.innodb_buffer_pool_size!r} is not a size")
        if self.innodb_flush_log_at_trx_commit not in (None, 0, 1, 2):
            raise ValueError("innodb_flush_log_at_trx_commit: must be 0, 1 or 2")
        if self.sync_binlog is not None and self.sync_binlog < 0:
            raise ValueError("sync_binlog: must be >= 0")
        if self.binlog_format not in (None, "ROW", "STATEMENT", "MIXED"):
            raise ValueError("binlog_format: must be ROW, STATEMENT or MIXED")
        for key, value in self.extra:
            if not _OPTION_NAME.fullmatch(key):
                raise ValueError(f"extra: {key!r} is not an option name")
            if any(c in value for c in "\n\r\0"):
                raise ValueError(f"extra.{key}: the value may not contain line breaks")
            if managed_option(key):
                raise ValueError(f"extra.{key}: set by claimlab (each server gets its own data directory, "
                                 "socket and files); leave it out")

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
    mirror: str | None = None          # mysql-tarball: base URL holding the archive (http(s):// or file://)
    archive: str | None = None         # mysql-tarball: the mirror's file, for a build its version does not name
    host: str | None = None            # external
    port: int | None = None
    socket: str | None = None
    user: str | None = None
    password_env: str | None = None
    allow_remote: bool = False
    ready_timeout: float = READY_TIMEOUT_S   # local kinds: seconds to wait for a started server
    init_timeout: float = INIT_TIMEOUT_S     # local kinds: seconds an initialisation may take

    @property
    def local(self) -> bool:
        """Started, stopped and configured by claimlab (the kind says; see kinds.py)."""
        from .kinds import kind_of  # kinds builds on this module
        return kind_of(self).local

    def public(self) -> dict[str, Any]:
        """What may be written to manifests: everything but nothing secret (only the variable's name)."""
        out = {"name": self.name, "kind": self.kind}
        for key in ("binary", "version", "path", "sha256", "md5", "mirror", "archive", "host", "port", "socket",
                    "user", "password_env"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if not self.local:
            out["allow_remote"] = self.allow_remote
        if self.options != ServerOptions():
            out["options"] = self.options.as_dict()
        return out


def managed_option(name: str) -> bool:
    """Whether an option name (any spelling) is one claimlab sets for every server it starts."""
    name = name.lower().replace("-", "_")
    while name.startswith(_OPTION_PREFIXES):
        name = name.split("_", 1)[1]
    return name in MANAGED_OPTIONS
