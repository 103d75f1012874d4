"""The speed witness: which measurements ran while the machine was in a slow state.

On these machines work inside the server sometimes runs at about half speed for seconds at a
time, invisibly to /proc. Two kinds were seen, and each has its own witness; a measurement is
flagged slow when either sees it.

The probe. The runner times a short fixed CPU probe on the server right before and after each
measurement (metrics `probe_before_s`, `probe_after_s`) and stores the raw probes only. Where
the virtual CPU itself is slow (steal, other processes and busy share the same, the server's CPU
time doubling with the elapsed time) the probe is slow too. Rule: either probe over SLOW_FACTOR
(1.6) times the reference probe, the lower quartile of all probes of the same run, target and
server version. Why these choices:
- the reference is a low quantile, not the median: about a quarter of measurements were slow
  in the C2 run, and the median of a bimodal sample drifts toward the slow mode as that share
  grows; the lower quartile stays in the normal mode while under 75% are slow.
- per run, target and server version, not per server start: a slow stretch can cover a whole
  short server start, whose own quartile would then be slow; across starts of one binary the
  probe measures the same fixed work.
- 1.6 lies between the normal state and the slow state (about 2x). The normal state's probes
  are themselves bimodal: a 3-4 ms probe took either about 3.2 or about 4.5 ms (1.4x) on MySQL
  9.7 in one C2 run, a third of them in the upper mode, interleaved probe
  by probe, so that mode is scheduling, not a slow CPU; a factor of 1.4 flagged 27-38% of that
  run's measurements with no difference in their scan times. 1.6 clears that jitter and is still
  well below 2x.
- either probe: a stretch that starts or ends inside the measurement shows in one of them.

Idle time. A workload that keeps every vCPU busy (C1's sysbench, client and server on two
vCPUs) sometimes leaves them idle for part of a measurement: its queries wait between the
client and the server while the probe, one server thread computing, runs at its usual speed.
On one Intel host C1's QPS fell to 0.55-0.65x in exactly the
iterations whose busy share fell from 0.99 to 0.80-0.87, with every probe normal. Over the stored
C1 runs of both AMD hosts, measurements 3 points under their group's busy share ran 10-14%
slower on average, and under 3% of the others ran 15% slow; the idle time also moves the ratio
toward 1 (MariaDB's mismatch / latin1 1-4% higher in flagged iterations there, 7% on that Intel
host), since the waiting is the same for every level.
Rule: where a group (run, target, server version, condition, workload) keeps the machine busy
(median `machine_busy_share` >= SATURATED, 0.95), a measurement whose busy share is more than
BUSY_DROP (0.03, three times the normal state's spread of about 0.01) under that median is
flagged. Workloads that wait by design (fsyncs, busy shares of 0.1-0.45; a single-threaded scan
on two vCPUs, 0.44-0.52) have no idle-time witness, and neither has a run confined to one vCPU
(`design.cpus`, as C1 runs: busy about 0.5), where a wake-up is a switch on that vCPU
and the vCPU stayed 0.99-1.0 busy in every burst.

The flag never drops a row; `analyze` can use normal-state rows only when asked, and says so.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

PROBE_METRICS = ("probe_before_s", "probe_after_s")
BUSY_METRIC = "machine_busy_share"
SLOW_FACTOR = 1.6
REFERENCE_QUANTILE = 0.25
SATURATED = 0.95
BUSY_DROP = 0.03
MEASUREMENT_KEYS = ("run_id", "target", "condition", "workload", "repetition", "attempt", "seq",
                    "iteration")


def speed_flags(results: pd.DataFrame) -> pd.Series:
    """Per row of `results`: True when its measurement ran slow by either witness, False when
    normal, <NA> when no witness applies (v1 runs; no probe and a workload that waits by design).
    Nullable boolean, aligned with results.index."""
    keys = _measurement_keys(results)
    index = pd.MultiIndex.from_frame(results[keys])
    found = [slow.reindex(index).to_numpy(dtype=float)
             for slow in (_slow_by_probe(results), _slow_by_idle_time(results, keys))
             if slow is not None]
    flags = pd.Series(pd.NA, index=results.index, dtype="boolean")
    if not found:
        return flags
    slow = np.column_stack(found)                 # 1 slow, 0 normal, NaN no witness
    seen = ~np.isnan(slow).all(axis=1)
    flags[seen] = np.nan_to_num(slow[seen]).max(axis=1) > 0
    return flags


def _measurement_keys(results: pd.DataFrame) -> list[str]:
    return [key for key in MEASUREMENT_KEYS if key in results.columns]


def _slow_by_probe(results: pd.DataFrame) -> pd.Series | None:
    """Per measurement: either probe over SLOW_FACTOR x its run's lower-quartile probe."""
    counts = slow_probes(results)
    return None if counts is None else (counts > 0).astype(float).where(counts.notna())


def slow_probes(results: pd.DataFrame) -> pd.Series | None:
    """Per measurement (MEASUREMENT_KEYS): how many of its two probes ran slow (0, 1 or 2; NaN
    without a probe value); None for runs without probes. One slow probe of two is what a
    transient between measurements looks like, which is why the count is worth having beside the
    flag."""
    sides = slow_probe_sides(results)
    return None if sides is None else sides.sum(axis=1, min_count=1)


def slow_probe_sides(results: pd.DataFrame) -> pd.DataFrame | None:
    """Per measurement (MEASUREMENT_KEYS): whether its probe before and its probe after
    (columns PROBE_METRICS: 1.0 slow, 0.0 normal, NaN not recorded) ran over SLOW_FACTOR x its
    run's lower-quartile probe; None for runs without probes. Which side was slow is what tells a
    state seen coming from one seen going."""
    keys = _measurement_keys(results)
    probes = results[results["metric"].isin(PROBE_METRICS)]
    if probes.empty:
        return None
    value = pd.to_numeric(probes["value"], errors="coerce")
    reference = value.groupby([probes["run_id"], probes["target"], probes["server_version"]]
                              ).transform(lambda v: v.quantile(REFERENCE_QUANTILE))
    slow_probe = (value > SLOW_FACTOR * reference).astype(float).where(value.notna())
    sides = slow_probe.groupby([probes[key] for key in keys] + [probes["metric"]]).max().unstack("metric")
    return sides.reindex(columns=list(PROBE_METRICS))


def _slow_by_idle_time(results: pd.DataFrame, keys: list[str]) -> pd.Series | None:
    """Per measurement of a workload that keeps the machine busy: its busy share more than
    BUSY_DROP under its group's median; measurements of other workloads are left out."""
    busy = results[results["metric"] == BUSY_METRIC]
    if busy.empty:
        return None
    value = pd.to_numeric(busy["value"], errors="coerce")
    group = [busy[key] for key in ("run_id", "target", "server_version", "condition", "workload")
             if key in busy.columns]
    median = value.groupby(group).transform("median")
    idle = (value < median - BUSY_DROP).astype(float).where(value.notna() & (median >= SATURATED))
    per_measurement = idle.groupby([busy[key] for key in keys]).max()
    return per_measurement.dropna()


def flagged_share(flags: pd.Series) -> float:
    """Share of rows flagged slow among rows with a witness; NaN when none has one."""
    witnessed = flags.dropna()
    return float(witnessed.astype(bool).mean()) if len(witnessed) else math.nan


def witness_note(flags: pd.Series, normal_only: bool) -> str:
    """What the speed witness saw, for a verdict note."""
    if flags.isna().all():
        return "speed witness: no witness recorded (no probes, and the workload does not keep the machine busy)"
    share = flagged_share(flags)
    unwitnessed = int(flags.isna().sum())
    text = f"speed witness: {share:.0%} of {int(flags.notna().sum())} measurements flagged slow"
    if unwitnessed:
        text += f" ({unwitnessed} without a witness)"
    use = "; only normal-state measurements used" if normal_only else "; all measurements used"
    return text + use


def slow_mask(flags: pd.Series) -> np.ndarray:
    """Rows known to be slow (a missing witness is not slow)."""
    return flags.fillna(False).to_numpy(dtype=bool)
