"""The warm-up's scheduling: each server's calls in their recorded order, the servers side by side
once the speed probe is calibrated, one after the other in that order while its length calibrates it."""

import threading
from types import SimpleNamespace

from claimlab.rounds import warm_up


def _calls(log: list, meet: threading.Barrier | None = None) -> list:
    """Three calls on each of two starts of one cell, interleaved as a round's order would be;
    `meet`: each start's first call waits there for the other's (they run at once, or it breaks)."""
    cell = SimpleNamespace(cell="default")
    out = []
    for i, r in enumerate([0, 1, 1, 0, 0, 1]):
        def call(warmup=False, r=r, i=i):
            assert warmup
            if meet is not None and i in (0, 1):
                meet.wait()
            log.append((r, i, threading.get_ident()))
            return {}
        out.append(([(r, cell)], call))
    return out


def test_side_by_side_each_server_warms_up_in_a_thread_of_its_own_in_its_order():
    log = []
    seconds = warm_up(_calls(log, threading.Barrier(2, timeout=10)))   # both first calls at once
    assert len(seconds) == 6 and all(s >= 0 for s in seconds)
    threads = {r: {t for rr, _, t in log if rr == r} for r in (0, 1)}
    assert all(len(t) == 1 for t in threads.values()) and threads[0] != threads[1]
    assert threading.get_ident() not in threads[0] | threads[1]
    assert [i for r, i, _ in log if r == 0] == [0, 3, 4] and [i for r, i, _ in log if r == 1] == [1, 2, 5]


def test_while_calibrating_every_call_runs_in_the_callers_thread_in_the_recorded_order():
    log = []
    assert len(warm_up(_calls(log), side_by_side=False)) == 6
    assert {t for *_, t in log} == {threading.get_ident()}
    assert [(r, i) for r, i, _ in log] == [(0, 0), (1, 1), (1, 2), (0, 3), (0, 4), (1, 5)]
