"""How long a block's start waits for the sequential look taken before it (looks.look_wait): the
start's cost at the chance that this look stops the run, even over the looks left and the cap;
and the wait itself (`Look.answered`)."""

import pytest

from claimlab.looks import look_wait


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


class _Signalled(Exception):
    pass


def test_a_look_answers_in_time_or_not_a_failed_one_is_answered_and_an_interrupt_goes_on_up(tmp_path):
    """`Look.answered` waits for the look without swallowing what interrupts the wait: a signal
    turned into an exception (as `signals_raise` does) must reach the run loop."""
    import os
    import signal
    import threading

    from claimlab.looks import Look
    from claimlab.records import RunManifest
    from claimlab.writer import RunStore

    store = RunStore.create(tmp_path, RunManifest.new(experiment="exp", claim="C2", profile="quick", factors=[]))
    release = threading.Event()
    look = Look(lambda results: release.wait(30) and (True, "decided"), store, 4)
    assert not look.answered(0.05)

    def raise_it(*_):
        raise _Signalled

    previous = signal.signal(signal.SIGUSR1, raise_it)
    try:
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        with pytest.raises(_Signalled):
            look.answered(20)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    release.set()
    assert look.answered(20) and look.stop()
    failed = Look(lambda results: 1 / 0, store, 4)
    assert failed.answered(20)
    with pytest.raises(ZeroDivisionError):
        failed.stop()
