"""The speed probe's size: 1% of the warm-up calls' median, within a floor and a cap."""

from __future__ import annotations

import pytest

from claimlab import witness


def test_the_probe_is_sized_from_the_warm_up_calls_median_not_the_fastest():
    # a C3 MySQL warm-up as measured: one call per condition, the conditions 3x
    # apart. Sized from the fastest (1.5 ms), a few ms of probe spread flagged 31-38% of the run;
    # the median gives 4.4 ms.
    assert witness.target_seconds([0.1451, 0.4408, 0.4639]) == pytest.approx(0.004408)


@pytest.mark.parametrize("calls, seconds", [
    ([0.05, 0.07], witness.MIN_S),          # C2's MariaDB scans: 1% is under the floor
    ([3.0, 4.0], witness.MAX_S),            # a long call: the cap
    ([], witness.DEFAULT_S),                # no warm-up
    ([0.0, -1.0], witness.DEFAULT_S),       # nothing measurable
    ([0.0, 0.5], 0.005),                    # a call of no time is left out
])
def test_floor_cap_and_no_warm_up(calls, seconds):
    assert witness.target_seconds(calls) == pytest.approx(seconds)
