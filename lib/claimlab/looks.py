"""Sequential looks while a run measures: whether the run is decided, asked after every complete
block in a thread while the next block's servers start and warm up, and once more at the cap. The
runner owns when a look is taken; the answer comes from the caller's `should_stop(results)`, given
the run's results as read from results.csv here (the statistics do no I/O)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait

from .store import read_results
from .writer import RunStore


def at_cap(should_stop, store: RunStore, blocks: int) -> None:
    """A sequential run that measured its cap of blocks: the state the cap left, looked at once
    more (no look follows the last block otherwise), so the record says whether the comparisons
    were decided, still open, or short of the rule's minimum of counted blocks (a fast-state
    statistic counts only the blocks with fast-state values on both sides)."""
    answer = _look_at(should_stop, store)
    decided, reason = answer if isinstance(answer, tuple) else (bool(answer), None)
    store.event("sequential_cap", blocks=blocks, decided=bool(decided), reason=reason)


def _look_at(should_stop, store: RunStore):
    """`should_stop` asked about the run's results so far, read from results.csv here."""
    return should_stop(read_results(store.path))


class Look:
    """A sequential look (`should_stop(results)`), taken in a thread while the next block's
    servers start and warm up, and settled before anything of that block is measured: the
    look reads results.csv, to which nothing is appended meanwhile. A look reads and
    analyses the whole run (0.1 s and more), which the block no longer waits for in full; the
    block's start waits a while first (`look_wait`), so a quick "stop" starts nothing unused."""

    def __init__(self, should_stop, store: RunStore, blocks_done: int):
        self.store, self.blocks_done = store, blocks_done
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="claimlab-look")
        self._future = self._pool.submit(_look_at, should_stop, store)
        self._stop: bool | None = None

    def answered(self, within: float = 0.0) -> bool:
        """Whether the answer is in, waiting for it at most `within` seconds. A failed look is
        answered too (`stop` raises its error); an interrupt while waiting goes on up."""
        return bool(futures_wait([self._future], timeout=within).done)

    def stop(self) -> bool:
        """The answer (waited for once, then recorded): whether the run is decided."""
        if self._stop is None:
            try:
                answer = self._future.result()
            finally:
                self._pool.shutdown()
            stop, reason = answer if isinstance(answer, tuple) else (bool(answer), None)
            self.store.event("sequential", blocks=self.blocks_done, stop=bool(stop), reason=reason)
            self._stop = bool(stop)
        return self._stop

    def abandon(self) -> None:
        """The run ends another way (a failure, an interrupt): its answer is no longer needed."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def look_wait(start_cost: float | None, looks_left: int) -> float:
    """How long the next block's start waits for the sequential look taken before it.

    A look that stops the run leaves the block started beside it unmeasured: its copies, start,
    warm-up and shutdown wasted (about 3 s for C2's two MySQL starts, 0.5 s for a MariaDB start),
    where a look takes 0.1-0.5 s. Waiting is worth the start's cost at the chance that this look
    stops the run, taken as even over the looks still to come and the cap (`looks_left`: this one
    and those after it that precede a block). So a run with few looks left waits for its answer
    and a long sequential run starts beside it, as it did before. Nothing known yet: no wait."""
    if not start_cost or looks_left < 1:
        return 0.0
    return start_cost / (looks_left + 1)


class Decided(Exception):
    """The block's look decided the run while the block's servers were starting: measure nothing."""
