"""Targets: where a server comes from, how claimlab starts and stops it, and what it really runs with.

Four kinds share one interface:
- `mariadb`: the OS package's mariadbd;
- `mysql-debian`: Oracle MySQL from Debian's archive, unpacked into claimlab's cache (debian.py);
- `mysql-tarball`: MySQL in the generic Linux tarball layout (local path, or downloaded once);
- `external`: a server someone else runs; never started, stopped or reconfigured.

Modules, in the order a run uses them: options (what params may say), flavor (the one place for
product and version differences), debian and tarball (where programs come from), launcher (target
to server), placement (a fresh copy of a binary per block), local (server lifecycle and facts),
reaper (servers of dead runs).
"""

from . import debian, tarball
from .flavor import ROLES, Flavor, canonical_name, parse_version
from .launcher import Launcher, cache_dir, check_available, check_cpus, flavor_of, installation, mariadb_binary
from .local import (
    LOST_CONNECTION_ERRNOS,
    VOLATILE_VARIABLES,
    ExternalServer,
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
    "ExternalServer", "Flavor", "Installation", "Launcher", "LocalServer", "Placement", "Placer", "Server",
    "ServerFacts", "ServerOptions", "TargetSpec", "binary_version", "cache_dir", "canonical_name", "check_available",
    "check_cpus", "confined",
    "flavor_of", "installation", "mariadb_binary", "parse_version", "reap", "reap_stale", "reaping",
    "debian", "remove_socket_dir", "stop_all", "tarball", "tarball_urls", "verify_settings",
]
