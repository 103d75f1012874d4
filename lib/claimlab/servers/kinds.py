"""Target kinds: where a server's program comes from, and whether claimlab runs it at all. Each
kind is one class, so what differs between them is answered by the kind, never by a caller
comparing names. The names are the `kind:` a params file gives a target (options.KINDS)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import ClassVar

from ..errors import TargetUnavailable
from . import debian, tarball
from .external import ExternalServer
from .flavor import Flavor
from .local import Installation, binary_version
from .options import TargetSpec


def cache_dir() -> Path:
    return Path(os.environ.get("CLAIMLAB_CACHE", Path.home() / ".cache" / "claimlab"))


class TargetKind:
    """What a kind of target answers. `local` kinds are started, stopped, confined to vCPUs and
    given server options by claimlab; the others are only connected to."""

    name: ClassVar[str]
    local: ClassVar[bool] = True

    def installation(self, target: TargetSpec, download: bool = True) -> Installation:
        """The program a local target runs. `download`: fetch it if that is how this kind gets it."""
        raise NotImplementedError

    def flavor(self, target: TargetSpec) -> Flavor:
        """Product and version, known before any server starts."""
        return self.installation(target).flavor

    def describe(self, target: TargetSpec, download: bool = True) -> str:
        """One line on what would run, or TargetUnavailable saying what to do."""
        inst = self.installation(target, download=download)
        note = inst.flavor.connector_note()
        return inst.describe() + (f"; note: {note}" if note else "")


def mariadb_binary(target: TargetSpec) -> Path:
    found = target.binary or shutil.which("mariadbd") or next(
        (p for p in ("/usr/sbin/mariadbd",) if os.path.exists(p)), None)
    if not found or not os.access(found, os.X_OK):
        raise TargetUnavailable(f"target {target.name}: mariadbd not found; install it with "
                                "`apt-get install mariadb-server` (or run `make setup` as root)")
    return Path(found)


class EmbeddedMariaDB(TargetKind):
    """The OS package's mariadbd (or the `binary:` a target names)."""

    name = "mariadb"

    def installation(self, target: TargetSpec, download: bool = True) -> Installation:
        binary = mariadb_binary(target)
        try:
            text = binary_version(binary)
        except TargetUnavailable as exc:
            raise TargetUnavailable(f"target {target.name}: {exc}") from None
        return Installation(binary=binary, flavor=Flavor.from_version_text(text), version_text=text,
                            origin="local binary" if target.binary else "OS package")


class DebianMySQL(TargetKind):
    """Oracle MySQL from Debian's archive, unpacked into claimlab's cache; only ever fetched by
    `claimlab setup-mysql`, so `download` does not apply."""

    name = "mysql-debian"

    def installation(self, target: TargetSpec, download: bool = True) -> Installation:
        try:
            return debian.installed(cache_dir())
        except TargetUnavailable as exc:
            raise TargetUnavailable(f"target {target.name}: {exc}") from None


class TarballMySQL(TargetKind):
    """MySQL in the generic Linux tarball layout: a local path, or a release downloaded once."""

    name = "mysql-tarball"

    def installation(self, target: TargetSpec, download: bool = True) -> Installation:
        return tarball.installed(target, cache_dir(), download=download)


class External(TargetKind):
    """A server someone else runs: never started, stopped or reconfigured; asked what it is."""

    name = "external"
    local = False

    def installation(self, target: TargetSpec, download: bool = True) -> Installation:
        raise ValueError(f"target {target.name}: an external target has no installation here")

    def flavor(self, target: TargetSpec) -> Flavor:
        return ExternalServer(target).flavor

    def describe(self, target: TargetSpec, download: bool = True) -> str:
        return f"external {ExternalServer(target).start().facts().version}"


# In the order of options.KINDS, the names a params file may give (a unit test holds them equal).
_KINDS: dict[str, TargetKind] = {k.name: k for k in (EmbeddedMariaDB(), DebianMySQL(), TarballMySQL(), External())}


def kind_of(target: TargetSpec) -> TargetKind:
    return _KINDS[target.kind]
