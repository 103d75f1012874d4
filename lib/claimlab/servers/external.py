"""Someone else's server (a `kind: external` target): claimlab only connects to it, with a
password read from the environment variable the target names, never from a file."""

from __future__ import annotations

import os
from typing import Any

from ..errors import ServerGone, TargetUnavailable
from .flavor import Flavor
from .local import Server
from .options import TargetSpec


class ExternalServer(Server):
    """Someone else's server: claimlab only connects, and only touches its own schemas."""

    def __init__(self, target: TargetSpec):
        self.target = target
        self.pid = None
        self._flavor: Flavor | None = None

    @property
    def flavor(self) -> Flavor:
        if self._flavor is None:
            self._flavor = self.facts().flavor
        return self._flavor

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
