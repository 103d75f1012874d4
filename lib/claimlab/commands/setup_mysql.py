"""`claimlab setup-mysql`: Oracle MySQL from Debian's archive, into claimlab's cache."""

from __future__ import annotations

import sys

from ..errors import TargetUnavailable

NAME = "setup-mysql"


def add_parser(sub) -> None:
    sm = sub.add_parser(NAME, help="fetch Oracle MySQL from Debian's archive into the cache",
                        description="Download mysql-server-core and every package it needs from Debian "
                                    "sid with this host's apt tools (private lists; signatures verified "
                                    "with debian-archive-keyring), unpack them into the cache "
                                    "(CLAIMLAB_CACHE, default ~/.cache/claimlab) for `mysql-debian` "
                                    "targets. A no-op when the newest version is already there.")
    sm.add_argument("--if-possible", action="store_true",
                    help="on a host that cannot (not Debian/Ubuntu, no network), say why and exit 0")


def main(args) -> int:
    from ..servers import cache_dir, debian
    try:
        debian.setup(cache_dir(), log=lambda line: print(f"setup-mysql: {line}", file=sys.stderr))
    except TargetUnavailable as exc:
        if not args.if_possible:
            raise
        print(f"setup-mysql: skipped: {exc}; MySQL targets will be reported unavailable")
    return 0
