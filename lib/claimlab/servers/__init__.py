"""Targets: where a server comes from, how claimlab starts and stops it, and what it really runs with.

Four kinds share one interface (kinds.py, one class each):
- `mariadb`: the OS package's mariadbd;
- `mysql-debian`: Oracle MySQL from Debian's archive, unpacked into claimlab's cache (debian.py);
- `mysql-tarball`: MySQL in the generic Linux tarball layout (local path, or downloaded once);
- `external`: a server someone else runs; never started, stopped or reconfigured.

Modules, in the order a run uses them: options (what params may say), flavor (the one place for
product and version differences: a `MariaDB` or `MySQL` answers them), kinds (what differs between
target kinds), debian and tarball (where programs come from), launcher (target to server), initcache
(initialised data directories kept for reuse), placement (a fresh copy of a binary per block), local
(server lifecycle and facts), reaper (servers of dead runs).
"""

from . import debian, tarball
from .external import ExternalServer
from .flavor import ROLES, Flavor, MariaDB, MySQL, canonical_name, parse_version
from .kinds import TargetKind, cache_dir, kind_of, mariadb_binary
from .launcher import Launcher, check_available, check_cpus, flavor_of, installation
from .local import (
    LOST_CONNECTION_ERRNOS,
    VOLATILE_VARIABLES,
    Installation,
    LocalServer,
    Server,
    ServerFacts,
    binary_version,
    confined,
    remove_socket_dir,
    stop_all,
    verify_settings,
)
from .options import INIT_TIMEOUT_S, KINDS, READY_TIMEOUT_S, ServerOptions, TargetSpec
from .placement import Placement, Placer
from .reaper import reap, reap_stale, reaping
from .tarball import tarball_urls

__all__ = [
    "INIT_TIMEOUT_S", "KINDS", "LOST_CONNECTION_ERRNOS", "READY_TIMEOUT_S", "ROLES", "VOLATILE_VARIABLES",
    "binary_version", "cache_dir", "canonical_name", "check_available", "check_cpus", "confined", "debian",
    "ExternalServer", "Flavor", "flavor_of", "installation", "Installation", "kind_of", "Launcher",
    "LocalServer", "MariaDB", "mariadb_binary", "MySQL", "parse_version", "Placement", "Placer", "reap",
    "reap_stale", "reaping", "remove_socket_dir", "Server", "ServerFacts", "ServerOptions", "stop_all",
    "tarball", "tarball_urls", "TargetKind", "TargetSpec", "verify_settings",
]
