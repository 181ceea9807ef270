"""Fast views of a run model's samples for the panels, which ask twice a second while a run
streams: a phase's p50 and p90 over its completed rounds (exactly core/statistics/summary's
percentiles, the figures the report holds: a round being measured is in no figure) and a
variant's per-iteration totals with a min/max pyramid (series.MinMaxSeries) for the iteration
plot, which does draw the round being measured.

They read the model's arrays (core/run/model.PhaseSamples) and keep no second copy of them,
but for the totals the plot draws (one phase of eight). A completed round never changes, so
what a view has read of them it never reads again.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from sagetui.core.run.model import PhaseSamples
from sagetui.core.samples import GrowableArray
from sagetui.core.statistics.summary import percentiles
from sagetui.tui.series import MinMaxSeries

SELECT_FROM = 4096  # samples: below, np.percentile itself is as quick
_EDGES = np.geomspace(1e-9, 1e4, 13 * 1024 + 1)  # 1024 bins a decade (0.2 % wide), 1 ns..3 h


class QuantileView:
    """(p50, p90) of one phase's completed rounds, computed once per sample count.

    np.percentile selects over every sample (6-20 ms for 500,000), and a live run completes
    rounds between syncs. Past SELECT_FROM samples, a histogram over fixed log-spaced bins,
    brought up to date with the completed rounds as they complete, tells which bin holds each
    order statistic needed, and only that bin's samples are partitioned: found by one pass when
    the bin is new and topped up after."""

    def __init__(self) -> None:
        self._counts = np.zeros(_EDGES.size + 1, dtype=np.int64)  # over completed[:_done]
        self._done = 0
        self._nan = False
        self._bins: dict[int, tuple[GrowableArray, int]] = {}  # bin -> its completed samples
        self._cached: tuple[int, float, float] | None = None

    def quantiles(self, ps: PhaseSamples) -> tuple[float, float] | None:
        done = ps.values
        n = done.size
        if n == 0:
            return None
        if self._cached is None or self._cached[0] != n:
            self._catch_up(done)
            if n < SELECT_FROM or self._nan:
                p50, p90 = percentiles(done, (50, 90))
            else:
                p50, p90 = _linear_percentiles(n, (0.5, 0.9),
                                               lambda ks: self._select(done, ks))
            self._cached = (n, p50, p90)
        return self._cached[1], self._cached[2]

    def _catch_up(self, done: np.ndarray) -> None:
        new = done[self._done:]
        if new.size:
            self._nan = self._nan or bool(np.isnan(new).any())
            self._counts += np.bincount(np.searchsorted(_EDGES, new, side="right"),
                                        minlength=self._counts.size)
            self._done = done.size

    def _select(self, done: np.ndarray, ranks: list[int]) -> dict[int, float]:
        """The samples of these ranks (0-based, in sorted order)."""
        cum = np.cumsum(self._counts)
        bins = np.searchsorted(cum, ranks, side="right")  # bin b: _EDGES[b-1] <= x < _EDGES[b]
        out: dict[int, float] = {}
        kept: dict[int, tuple[GrowableArray, int]] = {}
        for b in sorted(set(bins.tolist())):
            inside = self._in_bin(done, b)
            kept[b] = self._bins[b]
            before = int(cum[b - 1]) if b > 0 else 0
            want = [r for r, rb in zip(ranks, bins.tolist(), strict=True) if rb == b]
            part = np.partition(inside, [r - before for r in want])
            out.update({r: float(part[r - before]) for r in want})
        self._bins = kept  # the bins that hold the quantiles now; they rarely move
        return out

    def _in_bin(self, done: np.ndarray, b: int) -> np.ndarray:
        """The completed samples in bin b: found once by a pass over all of them, then topped
        up with the ones completed since."""
        got, upto = self._bins.get(b) or (GrowableArray(), 0)
        new = done[upto:]
        inside = np.ones(new.size, dtype=bool)
        if b > 0:
            inside &= new >= _EDGES[b - 1]
        if b < _EDGES.size:
            inside &= new < _EDGES[b]
        got.extend(new[inside])
        self._bins[b] = (got, done.size)
        return got.view


def _linear_percentiles(n: int, qs: tuple[float, ...],
                        select: Callable[[list[int]], dict[int, float]]) -> list[float]:
    """np.percentile's default ("linear") interpolation, bit for bit, from the order
    statistics `select(ranks)` returns: numpy's virtual index, gamma and _lerp."""
    spots = []
    for q in qs:
        virtual = (n - 1) * q
        lo = n - 1 if virtual >= n - 1 else math.floor(virtual)
        hi = n - 1 if virtual >= n - 1 else lo + 1
        spots.append((lo, hi, virtual - lo))
    stats = select(sorted({r for lo, hi, _ in spots for r in (lo, hi)}))
    out = []
    for lo, hi, t in spots:
        a, b = stats[lo], stats[hi]
        diff = b - a
        out.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return out


class TotalsView:
    """A variant's per-iteration totals in arrival order (its completed rounds, then the one
    being measured) with a min/max pyramid: what the iteration plot reads. Kept in step with
    the model; rebuilt when a round it showed was dropped (a variant failed inside it, a stopped
    run resumed)."""

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity  # the samples the run plans (see PhaseSamples): reserved
        self.series = MinMaxSeries(GrowableArray(capacity=capacity))
        self._done = 0  # completed samples in the series
        self._round: int | None = None  # the unfinished round in it
        self._pend = 0  # ... and how many of its samples

    def sync(self, ps: PhaseSamples | None) -> MinMaxSeries:
        """The series holds done[:_done] then the unfinished round `_round`'s first `_pend`
        samples; bring it up to the model's."""
        if ps is None:
            return self.series
        done = ps.values
        if self._round is not None and self._round in ps.rounds:  # that round completed:
            self._done, self._round, self._pend = self._done + self._pend, None, 0  # in done
        pend_round = max(ps.pending, default=None)
        pend = ps.pending[pend_round].view if pend_round is not None else np.empty(0)
        if self._round is not None and (self._round != pend_round or pend.size < self._pend):
            return self._rebuild(done, pend_round, pend)  # a round it showed was dropped
        if done.size < self._done or (self._pend and done.size != self._done):
            return self._rebuild(done, pend_round, pend)
        self.series.extend(done[self._done:])
        self._done = done.size
        if pend_round is not None:
            self._round = pend_round
            self.series.extend(pend[self._pend:])
            self._pend = pend.size
        return self.series

    def _rebuild(self, done: np.ndarray, pend_round: int | None,
                 pend: np.ndarray) -> MinMaxSeries:
        self.series = MinMaxSeries(GrowableArray(capacity=max(self._capacity,
                                                              done.size + pend.size)))
        self.series.extend(done)
        self.series.extend(pend)
        self._done, self._round, self._pend = done.size, pend_round, pend.size
        return self.series
