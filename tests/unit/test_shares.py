"""A mechanism's share of a gap: Fieller's interval is the inversion of the paired t test, so at
its ends the t statistic of part - rho * gap sits exactly on the critical value."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from claimlab.stats import fieller_ratio, share_of_gap


def _t(a, b, rho):
    d = np.asarray(a) - rho * np.asarray(b)
    return d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))


def test_the_ends_are_where_the_paired_t_test_starts_to_reject():
    rng = np.random.default_rng(7)
    gap = rng.normal(1.2, 0.1, 8)
    part = 0.85 * gap + rng.normal(0, 0.05, 8)
    share = fieller_ratio(part, gap)
    crit = sps.t.ppf(0.975, 7)
    assert share.bounded and share.low < share.estimate < share.high
    assert share.estimate == pytest.approx(part.mean() / gap.mean())
    assert abs(_t(part, gap, share.low)) == pytest.approx(crit, rel=1e-9)
    assert abs(_t(part, gap, share.high)) == pytest.approx(crit, rel=1e-9)
    assert abs(_t(part, gap, share.estimate)) < 1e-9
    wider = fieller_ratio(part, gap, confidence=0.99)
    assert wider.low < share.low and wider.high > share.high


def test_a_gap_the_run_cannot_tell_from_zero_gives_no_bounds():
    gap = np.array([0.3, -0.2, 0.1, -0.25, 0.05])
    share = fieller_ratio(gap * 0.5, gap)
    assert not share.bounded and share.low == -math.inf and share.high == math.inf


def test_the_binlogs_share_from_two_block_tables():
    """Yangsh888's own times: 5.7 6.07 s, 8.0 20.06 s, 8.0 with skip-log-bin 7.03 s; the binlog's
    share of the log gap is log(20.06 / 7.03) / log(20.06 / 6.07) = 0.877. Blocks present in one
    table only are left out."""
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.02, (3, 6))
    gap = pd.DataFrame({"run_id": "r", "repetition": range(6),
                        "log_ratio": math.log(20.06 / 6.07) + noise[0] - noise[1]})
    part = pd.DataFrame({"run_id": "r", "repetition": range(7),
                         "log_ratio": np.append(math.log(20.06 / 7.03) + noise[0] - noise[2], 9.0)})
    share = share_of_gap(gap, part)
    assert share.n_blocks == 6
    assert share.low < math.log(20.06 / 7.03) / math.log(20.06 / 6.07) < share.high
    assert 0.8 < share.low and share.high < 0.95


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least 2 blocks"):
        fieller_ratio([1.0], [1.0])
    with pytest.raises(ValueError, match="paired"):
        fieller_ratio([1.0, 2.0], [1.0, 2.0, 3.0])
