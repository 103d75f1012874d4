"""The speed probe's size: 1% of a measured call, taken from the warm-up's fastest call."""

from __future__ import annotations

import pytest

from claimlab import witness


def test_the_probe_is_sized_from_the_fastest_warm_up_call_not_a_typical_one():
    # MySQL's C2 warm-up of 2026-11-29 17:36 (its first start's eight calls, each a table's first scan
    # in that start; measured scans there 0.12-0.20 s): the median would give 2.5 ms, the fastest 2.0
    calls = [0.2598, 0.2032, 0.2878, 0.2689, 0.2447, 0.2537, 0.212, 0.2468]
    assert witness.target_seconds(calls) == pytest.approx(0.002032)


@pytest.mark.parametrize("calls, seconds", [
    ([0.05, 0.07], witness.MIN_S),          # C2's MariaDB scans: 1% is under the floor
    ([3.0, 4.0], witness.MAX_S),            # a long call: the cap
    ([], witness.DEFAULT_S),                # no warm-up
    ([0.0, -1.0], witness.DEFAULT_S),       # nothing measurable
    ([0.0, 0.5], 0.005),                    # a call of no time is not the fastest
])
def test_floor_cap_and_no_warm_up(calls, seconds):
    assert witness.target_seconds(calls) == pytest.approx(seconds)
