"""`claimlab validate`: params, ablation and claims files checked without starting anything."""

from __future__ import annotations

from pathlib import Path

from .. import params as params_mod
from . import params_paths

NAME = "validate"


def add_parser(sub) -> None:
    v = sub.add_parser(NAME, help="check params files without running anything",
                       description="Load every profile of each params file and report the first error.")
    v.add_argument("params", nargs="*",
                   help="names, files or folders (a folder: every .yaml in it; default: every file in params/)")


def main(args) -> int:
    """Params files load with every profile, ablation files (in an `ablation` directory) likewise,
    and a `claims.yaml` as the claims; with no names: params/, params/ablation/ and data/claims.yaml."""
    if args.params:
        paths = [path for name in args.params for path in _validate_paths(name)]
    else:
        paths = params_paths([]) + sorted(Path("params", "ablation").glob("*.yaml"))
        paths += [p for p in [Path("data", "claims.yaml")] if p.is_file()]
    for path in paths:
        if path.name == "claims.yaml":
            from ..claims import load_claims
            load_claims(path)
        elif path.parent.name == "ablation":
            from .. import ablation  # imported only when needed: it loads the statistics and plots
            for profile in params_mod.PROFILES:
                ablation.load(path, profile)
        else:
            from ..design import conditions
            for profile in params_mod.PROFILES:
                exp = params_mod.load(path, profile)
                conditions(exp)   # every combination of levels, too
                for target, design in exp.target_designs.items():
                    if design.sequential is not None and design.sequential.precise:   # the claim's comparisons
                        from ..campaign import should_stop  # only then: it loads the statistics
                        should_stop(params_mod.with_default_target(exp, target, str(path)))
        print(f"ok: {path}")
    return 0


def _validate_paths(name: str) -> list[Path]:
    """A folder's .yaml files (an `ablation` folder's as ablation files), else the one file named."""
    path = Path(name)
    held = sorted(path.glob("*.yaml")) if path.is_dir() else []
    return held or [_validate_path(name)]   # an empty folder: find says it holds none


def _validate_path(name: str) -> Path:
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return params_mod.find(name)
    params_dir = Path("params")
    if not (params_dir / f"{name}.yaml").is_file() and (params_dir / "ablation" / f"{name}.yaml").is_file():
        return params_dir / "ablation" / f"{name}.yaml"
    return params_mod.find(name)
