"""`claimlab publish`: ship runs in data/raw, their large tables packed as Parquet."""

from __future__ import annotations

from pathlib import Path

from . import READ_HELP

NAME = "publish"


def add_parser(sub) -> None:
    pb = sub.add_parser(NAME, help="ship runs in data/raw, their tables packed as Parquet",
                        description="Copy each complete, verified run from runs/ into data/raw/<experiment>/ "
                                    "with its large tables stored as zstd Parquet (read back and compared "
                                    "before the CSV goes); a run already in data/raw is packed in place.")
    pb.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="runs to ship (`claimlab runs` lists them)")
    pb.add_argument("--data", type=Path, metavar="DIR", help=READ_HELP)
    pb.add_argument("--mark-published", action="store_true",
                    help="also list each run in data/published_runs.json (the runs the reports read)")


def main(args) -> int:
    from ..pack import mark_published, publish
    from ..store import load_manifest
    for run_id in args.run_ids:
        dest, changed = publish(run_id, args.data)
        manifest = load_manifest(dest)
        if changed:
            sizes = ", ".join(f"{name} {t['csv_bytes'] / 1e6:.2f} MB -> {t['file']} "
                              f"{(dest / t['file']).stat().st_size / 1e6:.2f} MB"
                              for name, t in manifest.extra["packed"]["tables"].items())
            print(f"published {manifest.run_id}: {dest} ({sizes})")
        else:
            print(f"{manifest.run_id} is shipped already, packed: {dest}")
        if args.mark_published and mark_published(manifest.experiment, manifest.run_id):
            print(f"listed {manifest.run_id} in data/published_runs.json under {manifest.experiment}")
    return 0
