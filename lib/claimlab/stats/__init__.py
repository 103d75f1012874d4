"""Statistics of claimlab: the one import the notebooks, reports and CLI use.

Pure functions of the runner's tidy results table (store contract: one row per measurement and
metric), no I/O (the runner reads the results a sequential look gets; `campaign.should_stop`
reads the claim a design names), no plotting. One module per concern:

- `observations`: the checked table, the three-level design (runs, blocks, rounds), outliers,
  and the pairing of treatment with baseline into block log ratios;
- `intervals`: the one estimand (ratio of geometric means), its interval and test;
- `power`: Holm within a family, power, minimal detectable effect, units needed, and the chance
  that another run of the same design gives the same verdict;
- `verdicts`: the monotone verdict rules and their labels;
- `speed`: the speed witness (slow-state flags from the probes);
- `slow_side`: a slow state inside the fast-state band met by one side more than the other
  (`side_state`), and the bound of the bias it puts into the estimate;
- `selection`: which rows make a comparison, and the exclusion policy;
- `sequential`: group-sequential stopping on every path (`should_stop`, `stop_callback`);
- `analysis`: the verdict table (`analyze`), between-run spread (`between_runs`) and each run's
  estimate beside the machine's speed in it (`run_levels`);
- `costs`: per-operation costs; `diagnostics`: drift, warm-up, outliers;
- `shares`: a mechanism's share of a gap (Fieller's interval for a ratio of paired means), from
  two levels' blocks (`level_share`), and whether it is most of the gap (`share_verdict`); an
  ablation step's share with its bootstrap interval (`share_interval`).
"""

from claimlab.stopping import StopRule

from .analysis import (
                    RUN_COLUMNS,
                    SPREAD_COLUMNS,
                    TABLE_COLUMNS,
                    analyze,
                    between_runs,
                    run_levels,
)
from .costs import COST_METRICS, cost_table, mean_interval, per_operation
from .diagnostics import DRIFT_FLAG_P, Diagnostics, diagnostics
from .intervals import Interval, LogRatio, Sample, hierarchical_draws, log_ratio, ratio_interval, run_components
from .observations import OUTLIER_Z, REQUIRED_COLUMNS, SLOW_HOUR, block_log_ratios, outlier_rule, prepare
from .power import (
                    POWER,
                    agreement_chance,
                    blocks_for_agreement,
                    blocks_for_margin,
                    blocks_needed,
                    holm,
                    label_chances,
                    minimal_detectable_effect,
                    paired_power,
)
from .selection import Policy, claim_metrics, comparison_groups
from .sequential import (
                    Look,
                    SimulatedRuns,
                    StopDecision,
                    design_label_chances,
                    obrien_fleming_spending,
                    repeated_interval,
                    sequential_alpha,
                    sequential_label_chances,
                    sequential_look,
                    should_stop,
                    simulate_sequential,
                    stop_callback,
                    stopping_for,
)
from .shares import (
                    GapShare,
                    Share,
                    ShareInterval,
                    expanded_tail,
                    fieller_ratio,
                    level_share,
                    share_interval,
                    share_of_gap,
                    share_verdict,
)
from .speed import PROBE_METRICS, SLOW_FACTOR, flagged_share, slow_probe_sides, slow_probes, speed_flags
from .verdicts import (
                    EDGE_FACTOR,
                    EDGE_MARK,
                    VERDICTS,
                    Labeller,
                    Verdict,
                    edge_label,
                    equivalence_band,
                    labeller,
                    target_note,
                    verdict,
)

__all__ = [
    "COST_METRICS", "DRIFT_FLAG_P", "EDGE_FACTOR", "EDGE_MARK", "OUTLIER_Z", "POWER", "PROBE_METRICS",
    "REQUIRED_COLUMNS", "RUN_COLUMNS",
    "SLOW_FACTOR", "SLOW_HOUR", "SPREAD_COLUMNS", "TABLE_COLUMNS", "VERDICTS", "Diagnostics", "Interval",
    "Look", "LogRatio", "Policy", "Sample", "Share", "StopDecision", "StopRule", "Verdict", "analyze",
    "agreement_chance", "between_runs", "fieller_ratio", "share_of_gap", "GapShare", "level_share",
    "share_verdict", "ShareInterval", "expanded_tail", "share_interval",
    "block_log_ratios", "blocks_for_agreement", "blocks_for_margin",
    "blocks_needed",
    "claim_metrics",
    "comparison_groups", "cost_table", "diagnostics", "edge_label", "equivalence_band", "flagged_share",
    "hierarchical_draws",
    "holm", "label_chances", "Labeller", "labeller", "log_ratio", "mean_interval", "minimal_detectable_effect",
    "obrien_fleming_spending",
    "outlier_rule", "paired_power", "per_operation", "prepare", "ratio_interval",
    "repeated_interval", "run_components", "run_levels", "sequential_alpha", "sequential_label_chances",
    "design_label_chances",
    "sequential_look", "SimulatedRuns", "simulate_sequential",
    "should_stop", "slow_probe_sides", "slow_probes", "stop_callback", "stopping_for", "speed_flags",
    "target_note", "verdict",
]
