"""A phase's p50 and p90 over its completed rounds, fast enough for a console that asks twice a
second while a run streams: exactly core/statistics/summary's percentiles (the figures the
report holds), bit for bit, without selecting over every sample at each ask. The views live on
the run model (`RunModel.views`, core/run/figures.Figures.quantiles) and keep no second copy of
its arrays; a completed round never changes, so what a view has read of them it never reads
again.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from sagetui.core.run.model import PhaseSamples
from sagetui.core.samples import GrowableArray
from sagetui.core.statistics.summary import percentiles

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
