"""`claimlab import`: a run made elsewhere (another host, a Dask worker) appended to the store,
every file checked against its manifest's checksums first."""

from __future__ import annotations

from pathlib import Path

NAME = "import"


def add_parser(sub) -> None:
    im = sub.add_parser(NAME, help="append a run made elsewhere to the store, checksums checked",
                        description="Check a run directory or .tar.gz archive (every file against its "
                                    "manifest's checksums) and move it into the store in one step.")
    im.add_argument("source", type=Path, metavar="DIR|ARCHIVE")
    im.add_argument("--data", type=Path, metavar="DIR", help="where runs go (default runs/)")


def writes_data(args) -> bool:
    return True


def main(args) -> int:
    from ..transfer import import_run
    path, new = import_run(args.source, args.data)
    print(f"run {path.name} {'imported into' if new else 'already stored in'} {path}")
    return 0
