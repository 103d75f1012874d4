"""What a params file may say about servers: a target's mapping (`kind` picks its model) and the
server options a target or a level sets, validated into servers.TargetSpec and ServerOptions.
Ablation files declare their targets and option sets the same way."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, model_validator

from .errors import ConfigError
from .schema import Model, Name, Text, built, fail, number_text, show, validate
from .servers import KINDS, ServerOptions, TargetSpec

_SIZE = re.compile(r"([0-9]+)([KMGkmg]?)\Z")
_SIZE_RANGE = (5 << 20, 1 << 40)     # innodb_buffer_pool_size: MySQL's minimum 5M; at most 1T


def _size_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _option_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value) if isinstance(value, (int, float)) else value


class ServerOptionsIn(Model):
    """servers.ServerOptions as written in a file; `extra` passes other options through by name."""

    log_bin: bool | None = None
    sync_binlog: Annotated[int, Field(ge=0, le=4_294_967_295)] | None = None
    innodb_flush_log_at_trx_commit: int | None = None
    character_set_server: str | None = None
    collation_server: str | None = None
    innodb_buffer_pool_size: Annotated[str, BeforeValidator(_size_text)] | None = None
    binlog_format: str | None = None
    extra: dict[str, Annotated[str, BeforeValidator(_option_text), Field(max_length=1000)]] = {}

    @model_validator(mode="after")
    def _valid(self):
        size = _SIZE.fullmatch(self.innodb_buffer_pool_size or "")
        if size:
            value = int(size[1]) << {"": 0, "k": 10, "m": 20, "g": 30}[size[2].lower()]
            if not _SIZE_RANGE[0] <= value <= _SIZE_RANGE[1]:
                raise fail(f"{self.innodb_buffer_pool_size} is outside 5M..1024G", "innodb_buffer_pool_size")
        built(self.record)
        return self

    def record(self) -> ServerOptions:
        values = self.model_dump(exclude={"extra"})
        return ServerOptions(**values, extra=tuple(sorted(self.extra.items())))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Target(Model):
    kind: str

    def record(self, name: str) -> TargetSpec:
        values = self.model_dump(exclude={"kind", "options"})
        options = self.options.record() if "options" in type(self).model_fields else ServerOptions()
        return TargetSpec(name=name, kind=self.kind, options=options, **values)


class _LocalTarget(_Target):
    options: ServerOptionsIn = ServerOptionsIn()
    ready_timeout: Annotated[float, Field(ge=1, le=3600)] = TargetSpec.ready_timeout   # seconds to wait for a start
    init_timeout: Annotated[float, Field(ge=1, le=3600)] = TargetSpec.init_timeout     # seconds to initialise


class MariadbTarget(_LocalTarget):
    binary: Text | None = None          # a mariadbd to use instead of the one on PATH


class DebianMysqlTarget(_LocalTarget):
    binary: Text | None = None


class TarballTarget(_LocalTarget):
    version: Annotated[str, BeforeValidator(number_text)] | None = None
    path: Text | None = None
    sha256: Annotated[str, Field(pattern=r"^[0-9a-fA-F]{64}$")] | None = None
    md5: Annotated[str, Field(pattern=r"^[0-9a-fA-F]{32}$")] | None = None
    mirror: Annotated[str, Field(pattern=r"^(https?|file)://\S+$")] | None = None   # base URL holding the archive
    archive: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*\.(tar\.gz|tar\.xz|tgz)$")] | None = None

    @model_validator(mode="after")
    def _source(self):
        if self.version is not None and not re.fullmatch(r"\d+\.\d+\.\d+", self.version):
            raise fail(f"{show(self.version)} is not a MySQL version like 8.0.40 (a full release)", "version")
        if not self.version and not self.path:
            raise fail("a mysql-tarball target needs `path` (a local tarball) or `version`", "path")
        if self.archive and not self.version:
            raise fail("`archive` names a mirror's file for a `version`; give the version too", "archive")
        return self


class ExternalTarget(_Target):
    refused: ClassVar[dict[str, str]] = {
        "password": "passwords never go in params files; name an environment variable with `password_env`",
        "options": "claimlab never reconfigures an external server; remove `options`"}
    host: Text | None = None
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    socket: Text | None = None
    user: Text = "root"
    password_env: Name | None = None
    allow_remote: bool = False

    @model_validator(mode="after")
    def _reachable(self):
        if not self.host and not self.socket:
            raise fail("an external target needs `host` (and `port`) or `socket`", "host")
        if self.host and not self.allow_remote and not _is_loopback(self.host):
            raise fail(f"{self.host[:60]} is not a loopback address; set `allow_remote: true` to "
                       "benchmark a remote server", "host")
        return self


# Every kind servers.KINDS knows; a kind without a model here is refused (see test_params).
TARGET_MODELS: dict[str, type[_Target]] = {
    kind: model for kind, model in (("mariadb", MariadbTarget), ("mysql-debian", DebianMysqlTarget),
                                    ("mysql-tarball", TarballTarget), ("external", ExternalTarget))
    if kind in KINDS}


def target(name: str, data: Any, source: str, where: str) -> TargetSpec:
    """A servers.TargetSpec from its mapping in a file (kind defaults to mariadb)."""
    kind = data.get("kind", "mariadb") if isinstance(data, dict) else "mariadb"
    if kind not in TARGET_MODELS:
        raise ConfigError(source, f"{where}.kind", f"must be one of {', '.join(TARGET_MODELS)}; got {show(kind)}")
    if isinstance(data, dict):
        data = {"kind": kind} | data
    return validate(TARGET_MODELS[kind], data, source, where).record(name)


def server_options(data: Any, source: str, where: str = "") -> ServerOptions:
    return validate(ServerOptionsIn, data, source, where).record()
