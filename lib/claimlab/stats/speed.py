"""The speed witness: which measurements ran while the virtual CPU was in its slow state.

On this machine the virtual CPUs run at about half speed for seconds at a time, invisibly to
/proc (steal, other processes and busy share stay the same), and a slow stretch roughly
doubles every CPU-bound timing. The runner times a short fixed CPU probe on the server right
before and after each measurement (metrics `probe_before_s`, `probe_after_s`) and stores the
raw probes only; this module derives the flag.

Rule: a measurement is slow when either of its probes exceeds SLOW_FACTOR (1.6) times the
reference probe, the lower quartile of all probes of the same run, target and server version.
Why these choices:
- the reference is a low quantile, not the median: about a quarter of measurements were slow
  in the C2 run, and the median of a bimodal sample drifts toward the slow mode as that share
  grows; the lower quartile stays in the normal mode while under 75% are slow.
- per run, target and server version, not per server start: a slow stretch can cover a whole
  short server start, whose own quartile would then be slow; across starts of one binary the
  probe measures the same fixed work.
- 1.6 lies between the normal state and the slow state (about 2x). The normal state's probes
  are themselves bimodal: a 3-4 ms probe took either about 3.2 or about 4.5 ms (1.4x) on MySQL
  9.7 in C2 (run 20261123T142639Z-e7717c), a third of them in the upper mode, interleaved probe
  by probe, so that mode is scheduling, not a slow CPU; a factor of 1.4 flagged 27-38% of that
  run's measurements with no difference in their scan times. 1.6 clears that jitter and is still
  well below 2x.
- either probe: a stretch that starts or ends inside the measurement shows in one of them.
The flag never drops a row; `analyze` can use normal-state rows only when asked, and says so.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

PROBE_METRICS = ("probe_before_s", "probe_after_s")
SLOW_FACTOR = 1.6
REFERENCE_QUANTILE = 0.25
MEASUREMENT_KEYS = ("run_id", "target", "condition", "workload", "repetition", "attempt", "seq",
                    "iteration")


def speed_flags(results: pd.DataFrame) -> pd.Series:
    """Per row of `results`: True when its measurement ran slow, False when normal, <NA> when
    the measurement has no probe (v1 runs). Nullable boolean, aligned with results.index."""
    keys = [key for key in MEASUREMENT_KEYS if key in results.columns]
    probes = results[results["metric"].isin(PROBE_METRICS)]
    flags = pd.Series(pd.NA, index=results.index, dtype="boolean")
    if probes.empty:
        return flags
    value = pd.to_numeric(probes["value"], errors="coerce")
    reference = value.groupby([probes["run_id"], probes["target"], probes["server_version"]]
                              ).transform(lambda v: v.quantile(REFERENCE_QUANTILE))
    slow_probe = (value > SLOW_FACTOR * reference).where(value.notna())
    per_measurement = slow_probe.groupby([probes[key] for key in keys]).max()
    index = pd.MultiIndex.from_frame(results[keys])
    found = per_measurement.reindex(index)
    flags[:] = pd.array(found.to_numpy(), dtype="boolean")
    return flags


def flagged_share(flags: pd.Series) -> float:
    """Share of rows flagged slow among rows with a witness; NaN when none has one."""
    witnessed = flags.dropna()
    return float(witnessed.astype(bool).mean()) if len(witnessed) else math.nan


def witness_note(flags: pd.Series, normal_only: bool) -> str:
    """What the speed witness saw, for a verdict note."""
    if flags.isna().all():
        return "speed witness: no probes recorded (no witness)"
    share = flagged_share(flags)
    unwitnessed = int(flags.isna().sum())
    text = f"speed witness: {share:.0%} of {int(flags.notna().sum())} measurements flagged slow"
    if unwitnessed:
        text += f" ({unwitnessed} without probes)"
    use = "; only normal-state measurements used" if normal_only else "; all measurements used"
    return text + use


def slow_mask(flags: pd.Series) -> np.ndarray:
    """Rows known to be slow (a missing witness is not slow)."""
    return flags.fillna(False).to_numpy(dtype=bool)
