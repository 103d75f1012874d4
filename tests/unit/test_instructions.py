"""Which thread ran the statement, from callgrind's per-thread counts of each window."""

import random

from claimlab.instructions import statement_thread


def test_a_background_burst_larger_than_the_statement_is_not_taken_for_it():
    """Counts seen in a failing run: thread 29 counted 20.6M in the second window only, more than
    the statement's two windows together (the largest total picked it)."""
    dumps = [{"34": 7_802_375, "29": 0, "27": 35_364, "30": 17_811},
             {"34": 7_720_421, "29": 20_558_146, "27": 21_238}]
    assert statement_thread(dumps) == "34"


def test_the_statements_thread_is_found_among_random_background_threads():
    """Simulated windows (fixed seed): the statement counts about 7.7M in each; up to twenty
    background threads count little, and one in each window may burst to 1-4 times the
    statement (a different one each time: a thread that bursts in every window is not told apart
    by counts); threads come and go between windows."""
    rng = random.Random(20261206)
    for _ in range(500):
        statement, *bursting = (f"{n:02d}" for n in rng.sample(range(1, 60), 6))
        dumps = []
        for burst in bursting[:rng.randrange(2, 6)]:
            window = {f"{rng.randrange(1, 60):02d}": rng.randrange(0, 50_000) for _ in range(rng.randrange(0, 20))}
            if rng.random() < 0.5:
                window[burst] = int(7_700_000 * rng.uniform(1, 4))
            window[statement] = int(7_700_000 * rng.uniform(0.99, 1.01))
            dumps.append(window)
        assert statement_thread(dumps) == statement
