"""The preload's records and the words `claimlab prepare` and `claimlab report` print for them."""

from __future__ import annotations

import pytest

from claimlab.preload import Preloaded, summary


def _made(seconds: float, kept: bool) -> Preloaded:
    return Preloaded("collation_cost", "mariadb", "default", seconds, kept=kept, found=False)


def _quick() -> Preloaded:
    return Preloaded("collation_cost", "mariadb", "default", 0.0, kept=False, found=False, quick=True)


def test_a_record_refuses_what_cannot_happen():
    with pytest.raises(ValueError, match="seconds: -1"):
        _made(-1.0, kept=True)
    with pytest.raises(ValueError, match="found: a directory found in the cache is kept"):
        Preloaded("collation_cost", "mariadb", "default", 0.0, kept=False, found=True)
    with pytest.raises(ValueError, match="quick: a directory left to its run was neither made nor found"):
        Preloaded("collation_cost", "mariadb", "default", 0.7, kept=False, found=False, quick=True)


def test_each_outcome_says_what_became_of_the_directory():
    assert Preloaded("c", "t", "x", 0.0, kept=True, found=True).outcome() == "already cached"
    assert _made(41.04, kept=True).outcome() == "loaded in 41.0 s, kept"
    assert _made(0.6, kept=False).outcome() == "loaded in 0.6 s, not kept (quicker to make than to copy)"
    assert _quick().outcome() == "left to its run (quicker to make than to copy, seen before)"


def test_the_reports_set_up_line_counts_both_kinds():
    assert summary([_made(3.0, True)]) == "1 data directory kept in the cache for the runs to copy"
    assert summary([_made(0.5, False)]) == "1 quicker to make than to copy, made again by its run"
    assert summary([_made(3.0, True), _made(4.0, True), _made(0.5, False), _made(0.4, False)]) == (
        "2 data directories kept in the cache for the runs to copy, "
        "2 quicker to make than to copy, made again by their runs")
    assert summary([_made(3.0, True), _quick(), _quick()]) == (
        "1 data directory kept in the cache for the runs to copy, "
        "2 left to their runs (quicker to make than to copy, seen before)")
