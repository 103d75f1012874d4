"""The verdict: a monotone function of the interval, the published ratio and the declared margin.

Rules (ratio = treatment / baseline; [lo, hi] its interval at the family's level; m the
comparison's `equivalence_margin`, the band "no effect" = [1 / (1 + m), 1 + m]; P the published
ratio):

| comparison | interval [lo, hi] | verdict | label |
|---|---|---|---|
| effect, claimed higher | lo > 1 + m | supported | "supported, smaller than published" (hi < P), |
| | | | "supported, larger than published" (lo > P), "supported, as published" |
| | | | (P inside), "supported (no published size)" (no P) |
| effect, claimed higher | hi <= 1 + m, P outside | contradicted | "contradicted: opposite direction" |
| | | | (hi < 1), else "contradicted: no effect" |
| effect, claimed lower | hi < 1 / (1 + m) | supported | as above; smaller than published: lo > P |
| effect, claimed lower | lo >= 1 / (1 + m), P outside | contradicted | "contradicted: opposite direction" |
| | | | (lo > 1), else "contradicted: no effect" |
| effect, two-sided | lo > 1 + m or hi < 1 / (1 + m) | supported | "supported: higher" / "supported: lower" |
| effect, two-sided | within the band | contradicted | "contradicted: no effect" |
| null (equivalence) | within the band | supported | "supported: no difference within ±5%" (m = 5%) |
| null (equivalence) | lo > 1 + m or hi < 1 / (1 + m) | contradicted | "contradicted: higher than 1.05" / |
| | | | "lower than 0.9524" |
| any | anything else, or no interval | inconclusive | "inconclusive", "inconclusive (smaller than |
| | | | published)" or "(larger than published)" when P lies outside the interval |

"Within the band" means 1 / (1 + m) <= lo and hi <= 1 + m. The band is symmetric on the log
scale, as the interval is (`intervals`): swapping baseline and treatment turns the ratio into
1 / ratio, the published ratio into 1 / published and the claimed direction into the other,
and leaves every verdict and label as it was (a band [1 - m, 1 + m] did not: [0.951, 1.049] was
within it, its swap [0.9533, 1.0515] not; tested on a grid). A directional effect is decided by the band's
edge on the claimed side only: above it is supported (a minimum-effect test), below it is
contradicted (an inferiority test against the smallest effect of interest; Lakens, Scheel &
Isager 2018, below), whatever the interval's other end does. "No effect" then means no effect of
the claimed kind; "opposite direction" says more, that the interval excludes 1 on the other
side, and only that: a narrower interval about the same centre still excludes it, so narrowing
never turns it back into "no effect" (asking the interval also to reach past the band, as an
earlier rule did, made [0.93, 0.99] "opposite" and the narrower [0.952, 0.967] "no effect").
A published ratio must lie outside the band (`claims.Comparison` checks it
at load), so a decided interval never contains it.

Why it has this shape: each decided region is closed under narrowing (a narrower interval
inside a supported one is supported, the same for contradicted), and the supported and
contradicted regions never overlap. So widening an interval can only keep its verdict or make
it inconclusive, never turn inconclusive into a decision or one decision into the other
(tested on an exhaustive grid). That is why "supported" asks the interval to clear the whole
band, not just 1: an interval such as [1.01, 1.04] has a widening that reaches past 1 + m
and another that reaches below 1, so it cannot be decided either way and stay monotone; it
is "contradicted: no effect" only in the sense of a trivial effect (Lakens, Scheel & Isager,
"Equivalence testing for psychological research", AMPPS 2018: statistically different yet
equivalent). A 2.5% published effect needs a margin below 2.5% to be supportable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..claims import equivalence_band

VERDICTS = ("supported", "contradicted", "inconclusive", "not_tested")
# How much wider (or narrower) an interval another run could plausibly give: the t interval's
# width is itself estimated from a handful of blocks (7 df: its half-width's own SD is about a
# quarter of it), and runs hours apart differ by more than one run's interval says (C2 on
# MariaDB read 1.051-1.079 over four runs with half-widths of 0.7-2.3%).
EDGE_FACTOR = 1.5
EDGE_MARK = " (near an edge)"   # after a label, wherever a table prints one near an edge


@dataclass(frozen=True)
class Verdict:
    """The machine word, the plain label with the size relation, and the reason in words."""

    word: str
    label: str
    reason: str

    def __post_init__(self) -> None:
        if self.word not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {self.word!r}")


def verdict(kind: str, direction: str | None, published: float | None, margin: float,
            low: float, high: float) -> Verdict:
    """Decide one comparison from its interval (see the module's table of rules)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return Verdict("inconclusive", "inconclusive", "no interval could be computed")
    band_low, band_high = equivalence_band(margin)
    inside = band_low <= low and high <= band_high
    band = f"[{band_low:.4g}, {band_high:.4g}]"
    if kind == "null":
        if inside:
            return Verdict("supported", f"supported: no difference within ±{margin:.0%}",
                           f"the interval lies within {band}")
        if low > band_high or high < band_low:
            way = f"higher than {band_high:.4g}" if low > band_high else f"lower than {band_low:.4g}"
            return Verdict("contradicted", f"contradicted: {way}",
                           f"the interval lies entirely outside {band}")
        return Verdict("inconclusive", "inconclusive", f"the interval is neither within nor outside {band}")
    if direction == "two_sided":
        if low > band_high or high < band_low:
            way = "higher" if low > band_high else "lower"
            return Verdict("supported", f"supported: {way}", f"the interval lies beyond {band} ({way})")
        if inside:
            return Verdict("contradicted", "contradicted: no effect", f"the interval lies within {band}")
        return Verdict("inconclusive", "inconclusive", f"the interval reaches into {band}")
    higher = direction == "higher"
    size = _size(published, low, high, higher)
    if (low > band_high) if higher else (high < band_low):
        label = f"supported, {size} than published" if size else (
            "supported, as published" if published is not None else "supported (no published size)")
        return Verdict("supported", label, f"the interval lies beyond {band} on the claimed side "
                       f"({direction})" + _published(published, low, high))
    edge = band_high if higher else band_low
    short = high <= edge if higher else low >= edge     # no effect of the claimed size
    if short and (published is None or not low <= published <= high):
        if (high < 1) if higher else (low > 1):
            return Verdict("contradicted", "contradicted: opposite direction",
                           f"the interval excludes 1 on the side opposite the claim ({direction})")
        where = f"lies within {band}" if inside else (
            f"stays {'below' if higher else 'above'} {edge:g}, the band's edge on the claimed side ({direction})")
        return Verdict("contradicted", "contradicted: no effect",
                       f"the interval {where}" + _published(published, low, high))
    label = f"inconclusive ({size} than published)" if size else "inconclusive"
    return Verdict("inconclusive", label, f"the interval reaches into {band}"
                   + _published(published, low, high))


@dataclass(frozen=True)
class Labeller:
    """One comparison's rule as a function of its interval alone: the label `verdict` gives
    (low, high), what `power.label_chances` draws intervals through."""

    kind: str
    direction: str | None
    published: float | None
    margin: float

    def __call__(self, low: float, high: float) -> str:
        return verdict(self.kind, self.direction, self.published, self.margin, low, high).label

    def labels(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """The label of each interval, over arrays of intervals (an object array of str).

        `verdict` compares an interval's ends with a few points only (the band's edges, 1 and
        the published ratio), so two intervals whose ends lie alike against every point get the
        same label: `verdict` is asked once per such pattern, a handful among thousands of
        simulated runs, and the answer is exact by construction."""
        low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        points = np.array([*equivalence_band(self.margin), 1.0]
                          + ([] if self.published is None else [self.published]))
        finite = np.isfinite(low) & np.isfinite(high)
        with np.errstate(invalid="ignore"):
            pattern = np.concatenate([np.sign(low[:, None] - points), np.sign(high[:, None] - points)], axis=1)
        pattern[~finite] = 2.0                          # every unfinished interval reads alike
        _, first, inverse = np.unique(pattern, axis=0, return_index=True, return_inverse=True)
        words = np.array([self(float(low[i]), float(high[i])) for i in first], dtype=object)
        return words[inverse.reshape(-1)]


def labeller(kind: str, direction: str | None, published: float | None, margin: float) -> Labeller:
    return Labeller(kind, direction, published, margin)


def decided(kind: str, direction: str | None, published: float | None, margin: float,
            low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Whether `verdict` decides each interval (its word is not "inconclusive"), over arrays of
    intervals at once: the simulated runs of `simulate_sequential` ask it at every look, hundreds
    of thousands of times a claim, where only the word matters. The same regions as `verdict`'s
    rules (the module's table), tested equal to it on a grid and on random intervals."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    band_low, band_high = equivalence_band(margin)
    inside = (band_low <= low) & (high <= band_high)
    beyond = (low > band_high) | (high < band_low)
    if kind == "null" or direction == "two_sided":
        found = inside | beyond
    else:
        higher = direction == "higher"
        supported = low > band_high if higher else high < band_low
        short = high <= band_high if higher else low >= band_low
        if published is not None:       # a published ratio inside the interval keeps it open
            short = short & ~((low <= published) & (published <= high))
        found = supported | short
    return found & np.isfinite(low) & np.isfinite(high)


def edge_label(kind: str, direction: str | None, published: float | None, margin: float,
               low: float, high: float, factor: float = EDGE_FACTOR) -> str:
    """The label an interval `factor` times as wide, or as narrow, about the same centre (log
    scale) would get, when it differs from this one's; '' when both read the same.

    A non-empty answer means the verdict sits near a decision edge (the band's, 1, or the
    published ratio): another run, with its own width and centre, may well read the other way.
    By the rules' monotonicity a decided verdict can only widen into "inconclusive", and an
    inconclusive one only narrow into a decision."""
    if not (low > 0 and high > 0 and math.isfinite(low) and math.isfinite(high)):
        return ""
    base = verdict(kind, direction, published, margin, low, high).label
    centre, half = (math.log(low) + math.log(high)) / 2, (math.log(high) - math.log(low)) / 2
    for k in (factor, 1 / factor):
        other = verdict(kind, direction, published, margin,
                        math.exp(centre - k * half), math.exp(centre + k * half)).label
        if other != base:
            return other
    return ""


def _size(published: float | None, low: float, high: float, higher: bool) -> str:
    """'smaller' or 'larger' when the interval excludes the published ratio, else ''."""
    if published is None or low <= published <= high:
        return ""
    below = high < published
    return "smaller" if below == higher else "larger"


def _published(published: float | None, low: float, high: float) -> str:
    if published is None:
        return ""
    where = "inside" if low <= published <= high else "outside"
    return f"; published {published:g} lies {where} the interval"


def target_note(source_target: str, server_versions: Iterable[str]) -> str:
    """Say when the server measured is not the one the source measured.

    A server matches when it is not MariaDB where the source says MySQL and its version starts
    with one of the versions named in `source_target` ("MySQL 5.7 and 8.0" matches 8.0.40).
    """
    versions = re.findall(r"\d+\.\d+(?:\.\d+)?", source_target)
    mysql = "mysql" in source_target.lower()

    def matches(server: str) -> bool:
        if mysql and "mariadb" in server.lower():
            return False
        return any(re.match(re.escape(version) + r"(?!\d)", server) for version in versions)

    servers = sorted(set(server_versions))
    if not servers or all(matches(server) for server in servers):   # none: nothing ran both sides
        return ""
    return f"target differs: source measured {source_target}, this ran on {', '.join(servers)}"
