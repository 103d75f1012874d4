"""The verdict as a function of the interval: the same whichever side is the baseline, and a
narrower interval never says less than a wider one about the same comparison."""

from __future__ import annotations

import numpy as np
import pytest

from claimlab import stats

# Symmetric about 1 on the log scale, so that every interval's swap [1/high, 1/low] is on it too;
# steps of about 0.6%, fine enough to fall between the band's edges and 1 for each margin below.
LOGS = np.linspace(-0.36, 0.36, 121)
GRID = np.exp(LOGS)
CASES = [("effect", "higher", 1.29), ("effect", "higher", 1.025), ("effect", "higher", None),
         ("effect", "lower", 0.7509), ("effect", "lower", None), ("effect", "two_sided", None),
         ("null", None, None)]
MARGINS = [0.0125, 0.05, 0.2]
FLIP = {"higher": "lower", "lower": "higher", "two_sided": "two_sided", None: None}


def swapped_label(label: str, margin: float) -> str:
    """What a label reads as when baseline and treatment trade places."""
    outside = {f"higher than {1 + margin:.4g}": f"lower than {1 / (1 + margin):.4g}"}
    outside.update({value: key for key, value in outside.items()})
    for words, other in {**outside, "supported: higher": "supported: lower",
                         "supported: lower": "supported: higher"}.items():
        if label.endswith(words):
            return label[: -len(words)] + other
    return label


def test_two_near_edge_examples_read_alike_both_ways_round():
    assert stats.verdict("null", None, None, 0.05, 0.951, 1.049).word == (
        stats.verdict("null", None, None, 0.05, 1 / 1.049, 1 / 0.951).word)
    one = stats.verdict("effect", "higher", 1.29, 0.05, 1.051, 1.20)
    other = stats.verdict("effect", "lower", 1 / 1.29, 0.05, 1 / 1.20, 1 / 1.051)
    assert (one.word, one.label) == (other.word, other.label)


@pytest.mark.parametrize(("kind", "direction", "published"), CASES)
@pytest.mark.parametrize("margin", MARGINS)
def test_the_verdict_does_not_depend_on_which_side_is_the_baseline(kind, direction, published, margin):
    """Every interval of the grid against its swap: ratio 1/ratio, published 1/published, the
    direction flipped. Word and label agree (a label naming a side names the other one)."""
    flipped = None if published is None else 1 / published
    n, differ = len(GRID), []
    for i in range(n):
        for j in range(i, n):
            one = stats.verdict(kind, direction, published, margin, GRID[i], GRID[j])
            other = stats.verdict(kind, FLIP[direction], flipped, margin, GRID[n - 1 - j], GRID[n - 1 - i])
            if (one.word, swapped_label(one.label, margin)) != (other.word, other.label):
                differ.append((GRID[i], GRID[j], one.label, other.label))
    assert not differ, f"{len(differ)} intervals differ, e.g. {differ[:3]}"


def statements(label: str, direction: str | None, published: float | None) -> set[str]:
    """What a label asserts about the true ratio, with what its decision implies: a directional
    claim contradicted says the ratio falls short of the published one, as "smaller than
    published" does."""
    said = {word for word in ("supported", "contradicted") if label.startswith(word)}
    said |= {part for part in ("opposite direction", "smaller", "larger", "higher", "lower") if part in label}
    if "contradicted" in said and direction in ("higher", "lower") and published is not None:
        said.add("smaller")
    return said


# A published ratio inside the band is refused at load (`claims.Comparison`), so not asked.
LOADABLE = [(kind, direction, published, margin) for kind, direction, published in CASES for margin in MARGINS
            if published is None or abs(np.log(published)) > np.log1p(margin)]


@pytest.mark.parametrize(("kind", "direction", "published", "margin"), LOADABLE)
def test_narrowing_an_interval_never_weakens_what_its_label_says(kind, direction, published, margin):
    """Every one-step narrowing on the grid keeps all that the wider interval's label asserts
    (by chaining, every narrowing does): "opposite direction" never falls back to "no effect"."""
    n = len(GRID)
    labels = {(i, j): stats.verdict(kind, direction, published, margin, GRID[i], GRID[j]).label
              for i in range(n) for j in range(i, n)}
    weakened = []
    for (i, j), label in labels.items():
        for narrower in ((i + 1, j), (i, j - 1)):
            if narrower in labels and not (statements(label, direction, published)
                                           <= statements(labels[narrower], direction, published)):
                weakened.append((GRID[i], GRID[j], label, labels[narrower]))
    assert not weakened, f"{len(weakened)} narrowings weaken, e.g. {weakened[:3]}"
    assert len(set(labels.values())) >= 3


def test_an_opposite_direction_stays_opposite_when_narrowed():
    wide = stats.verdict("effect", "higher", 2.85, 0.05, 0.93, 0.99)
    narrow = stats.verdict("effect", "higher", 2.85, 0.05, 0.952, 0.967)
    assert wide.label == narrow.label == "contradicted: opposite direction"


def test_the_band_is_symmetric_on_the_log_scale():
    low, high = stats.equivalence_band(0.05)
    assert high == pytest.approx(1.05) and low == pytest.approx(1 / 1.05)
    for margin in MARGINS:
        low, high = stats.equivalence_band(margin)
        assert np.log(low) == pytest.approx(-np.log(high))
