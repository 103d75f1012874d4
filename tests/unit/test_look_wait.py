"""How long a block's start waits for the sequential look taken before it (runner.look_wait): the
start's cost at the chance that this look stops the run, even over the looks left and the cap."""

import pytest

from claimlab.runner import look_wait


def test_nothing_known_or_nothing_left_waits_nothing():
    assert look_wait(None, 3) == 0.0
    assert look_wait(0.0, 3) == 0.0
    assert look_wait(2.0, 0) == 0.0


@pytest.mark.parametrize(("cost", "left", "wait"), [(3.0, 2, 1.0), (3.0, 1, 1.5), (0.5, 24, 0.02)])
def test_the_wait_is_the_starts_cost_at_the_chance_of_a_stop(cost, left, wait):
    # C2's MySQL run looks first with two looks left (blocks 5 and 6 of 7): a third of its two
    # starts' cost; MariaDB's first look of 36 starts leaves 24 and waits about nothing
    assert look_wait(cost, left) == pytest.approx(wait)


def test_fewer_looks_left_or_a_dearer_start_wait_longer():
    waits = [look_wait(1.0, left) for left in range(10, 0, -1)]
    assert waits == sorted(waits) and len(set(waits)) == len(waits)
    assert look_wait(2.0, 5) > look_wait(1.0, 5)
