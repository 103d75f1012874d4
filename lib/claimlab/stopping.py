"""The sequential stopping rule of a design: one record, read by the params (validated at load),
the runner (asked after each block) and the statistics (which analyse with the level it leaves).

The methods that apply it live in `stats.sequential` (`should_stop`, `stop_callback`,
`sequential_alpha`, `sequential_look`).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LOOKS = 100   # the alpha-spending boundaries are simulated for at most this many looks


@dataclass(frozen=True)
class StopRule:
    """When the runner may stop adding blocks: decided, or precise enough, or at the cap.

    After each complete block (from `min_blocks` on) every comparison of the claim is looked
    at through its repeated confidence interval (see `stats.sequential_look`). A comparison is done
    when that interval decides it (see `stats.verdict`) or is narrower than `target_rel_width`
    (high / low - 1). The run stops when every comparison is done, or at `max_blocks`.

    Error rates: decisions read off repeated confidence intervals keep `alpha` under any
    stopping (Jennison & Turnbull 1989). The final analysis uses `stats.sequential_alpha`, the level
    the looks left (Lan & DeMets 1983), which is exact when the stopping time says nothing
    about the effect. Precision stops depend on the spread only, and because O'Brien-Fleming
    intervals are wide early, they come late, where the spread is well estimated; the
    simulated A/A rate stays near `alpha` (tests/unit/test_simulation.py). Measuring the width with
    fixed-sample critical values instead stops on luckily small spreads and inflated that rate
    to about 7.5% in the same simulation, which is why the repeated interval is used.
    """

    target_rel_width: float = 0.10
    min_blocks: int = 3
    max_blocks: int = 20
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5:
            raise ValueError("alpha must lie in (0, 0.5)")
        if not self.target_rel_width > 0:
            raise ValueError("target_rel_width must be > 0")
        if not 2 <= self.min_blocks <= self.max_blocks:
            raise ValueError("min_blocks must lie between 2 and max_blocks")
        if self.max_blocks - self.min_blocks + 1 > MAX_LOOKS:
            raise ValueError(f"max_blocks allows at most {MAX_LOOKS} looks (max_blocks - min_blocks + 1)")

    @classmethod
    def of_manifest(cls, manifest: dict) -> StopRule | None:
        """The rule a run was designed with (None for a fixed design): its analysis must use the
        same rule, so that stopping early keeps the promised error rate."""
        recorded = (manifest.get("design") or {}).get("sequential")
        return cls(**recorded) if recorded else None

    def describe(self) -> str:
        return (f"O'Brien-Fleming alpha spending, alpha {self.alpha:g}, blocks "
                f"{self.min_blocks}-{self.max_blocks}, target width {self.target_rel_width:.0%}")
