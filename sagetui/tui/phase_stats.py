"""Per-phase samples of one variant and the phase table's rows (p50, p90, share, 95 % CI).

A variant's samples of one round are contiguous (its two blocks of a round come before any
block of the next), so a round is a slice of the phase's array, not a mask. Quantiles and
round medians are cached by sample count: a redraw never re-reads a finished round. A live
run changes the count before every sync, so quantiles of many samples come from a histogram
kept as samples arrive (it says which bin holds each order statistic) and a selection within
that bin, not from a selection over every sample.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sagetui.core.samples import GrowableArray, RoundSeries
from sagetui.core.statistics.intervals import half_percent


@dataclass
class PhaseRow:
    name: str
    depth: int
    p50_s: float | None
    p90_s: float | None
    share: float | None  # of the sum of the leaves' p50
    ci_half_percent: float | None  # 95 % half-width, from the round medians (on logs)
    count: int | None


class PhaseStore:
    """One phase's (or the total's) samples of one variant, with where each round starts."""

    def __init__(self) -> None:
        self.values = GrowableArray()
        self.round_start: dict[int, int] = {}
        self.round_end: dict[int, int] = {}
        self._cached: tuple[int, float, float] | None = None
        # quantiles' histogram: counts per bin of _EDGES over values[:_binned]
        self._counts: np.ndarray | None = None
        self._binned = 0
        self._nan = False
        self._bins: dict[int, tuple[GrowableArray, int]] = {}  # bin -> its samples, up to
        self._round_cache: dict[int, tuple[tuple[int, int], tuple[float, float, float] | None]] \
            = {}
        # the medians of the rounds known final (all but the last to start), and how many
        # rounds (in arrival order) they cover: ci_half reads them at every sync
        self._final_medians = GrowableArray()
        self._final_rounds = 0
        self._order: list[int] = []  # the rounds, as they started

    def add_many(self, round_: int, values: np.ndarray) -> None:
        """Samples of one round, as a live run streams them."""
        if round_ not in self.round_start:
            self.round_start[round_] = len(self.values)
            self._order.append(round_)
        self.values.extend(values)
        self.round_end[round_] = len(self.values)

    def add_rounds(self, numbers: list[int], series: RoundSeries) -> None:
        """A report's rounds, numbered: all in one copy (a report of 50,000 short rounds
        would otherwise be 50,000 small appends per phase)."""
        self._final_medians, self._final_rounds = GrowableArray(), 0  # (a report: not hot)
        offset = len(self.values)
        if offset:
            self.values.extend(series.values)
        else:
            self.values.adopt(series.values)  # shared with the report, not copied
        starts = (series.bounds + offset).tolist()
        for i, r in enumerate(numbers):
            if r not in self.round_start:
                self._order.append(r)
            self.round_start[r], self.round_end[r] = starts[i], starts[i + 1]

    def round_values(self, round_: int) -> np.ndarray:
        return self.values.view[self.round_start[round_]: self.round_end[round_]]

    def round_stats(self, round_: int) -> tuple[float, float, float] | None:
        """(median, min, max) of one round, computed once per round and size: a redraw does
        not re-read every sample of every finished round."""
        key = (self.round_start[round_], self.round_end[round_])
        hit = self._round_cache.get(round_)
        if hit is None or hit[0] != key:
            x = self.round_values(round_)
            stats = (float(np.median(x)), float(x.min()), float(x.max())) if x.size else None
            hit = (key, stats)
            self._round_cache[round_] = hit
        return hit[1]

    def rounds(self) -> list[int]:
        return sorted(self.round_start)

    def round_medians(self) -> np.ndarray:
        """The median of every round with samples, rounds in arrival order. A round is final
        once the next one has started (a variant's samples of a round are contiguous), so its
        median is computed once; only the last round's is read again."""
        keys = self._order
        for r in keys[self._final_rounds: len(keys) - 1]:
            stats = self.round_stats(r)
            if stats is not None:
                self._final_medians.append(stats[0])
        self._final_rounds = max(self._final_rounds, len(keys) - 1)
        last = self.round_stats(keys[-1]) if keys else None
        done = self._final_medians.view
        return np.append(done, last[0]) if last is not None else done.copy()

    def quantiles(self) -> tuple[float, float]:
        """(p50, p90), exactly as np.percentile gives them, computed once per sample count.

        np.percentile selects over every sample (6-20 ms for 500,000), and a live run changes
        the count before every sync. Past SELECT_FROM samples, a histogram over fixed
        log-spaced bins (kept up to date as samples arrive) tells which bin holds each order
        statistic needed, and only that bin's samples are partitioned: they are found by one
        pass over all samples when the bin is new, then topped up with the samples that
        arrived since (about 0.1 ms for 500,000)."""
        n = len(self.values)
        if self._cached is None or self._cached[0] != n:
            v = self.values.view
            if n < SELECT_FROM or self._histogram_nan(v):
                p50, p90 = (float(x) for x in np.percentile(v, [50, 90]))
            else:
                p50, p90 = _linear_percentiles(n, (0.5, 0.9), lambda ks: self._select(v, ks))
            self._cached = (n, p50, p90)
        return self._cached[1], self._cached[2]

    def _histogram_nan(self, v: np.ndarray) -> bool:
        """Bring the histogram up to v; True if any sample is NaN (np.percentile's NaN)."""
        new = v[self._binned:]
        if new.size:
            if self._counts is None:
                self._counts = np.zeros(_EDGES.size + 1, dtype=np.int64)
            self._nan = self._nan or bool(np.isnan(new).any())
            self._counts += np.bincount(np.searchsorted(_EDGES, new, side="right"),
                                        minlength=self._counts.size)
            self._binned = v.size
        return self._nan

    def _select(self, v: np.ndarray, ranks: list[int]) -> dict[int, float]:
        """The samples of these ranks (0-based, in sorted order)."""
        assert self._counts is not None
        cum = np.cumsum(self._counts)
        bins = np.searchsorted(cum, ranks, side="right")  # bin b: _EDGES[b-1] <= x < _EDGES[b]
        out: dict[int, float] = {}
        kept: dict[int, tuple[GrowableArray, int]] = {}
        for b in sorted(set(bins.tolist())):
            inside = self._in_bin(v, b)
            kept[b] = self._bins[b]
            before = int(cum[b - 1]) if b > 0 else 0
            want = [r for r, rb in zip(ranks, bins.tolist(), strict=True) if rb == b]
            part = np.partition(inside, [r - before for r in want])
            out.update({r: float(part[r - before]) for r in want})
        self._bins = kept  # the bins that hold the quantiles now; they rarely move
        return out

    def _in_bin(self, v: np.ndarray, b: int) -> np.ndarray:
        """The samples in bin b: found once by a pass over all of them, then topped up with
        the samples that arrived since."""
        got, upto = self._bins.get(b) or (GrowableArray(), 0)
        new = v[upto:]
        inside = np.ones(new.size, dtype=bool)
        if b > 0:
            inside &= new >= _EDGES[b - 1]
        if b < _EDGES.size:
            inside &= new < _EDGES[b]
        got.extend(new[inside])
        self._bins[b] = (got, v.size)
        return got.view


SELECT_FROM = 4096  # samples: below, np.percentile itself is as quick
_EDGES = np.geomspace(1e-9, 1e4, 13 * 1024 + 1)  # 1024 bins a decade (0.2 % wide), 1 ns..3 h


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


Stats = tuple[float | None, float | None, float | None, int | None]  # p50, p90, CI half, n


def summary_stats(s: dict[str, float]) -> Stats:
    """A recorded summary's row figures (a report keeps no CI half-width)."""
    count = s.get("count")
    return s.get("p50_s"), s.get("p90_s"), None, int(count) if count is not None else None


def phase_rows(tree: list[tuple[str, str | None]], stats: dict[str, Stats]) -> list[PhaseRow]:
    parents = {p for _, p in tree if p}
    leaves_total = sum((stats.get(n, (None,))[0] or 0.0) for n, _ in tree if n not in parents)
    depth: dict[str, int] = {}
    rows = []
    for name, parent in tree:
        depth[name] = depth.get(parent, -1) + 1 if parent else 0
        p50, p90, half, count = stats.get(name, (None, None, None, None))
        share = p50 / leaves_total if p50 is not None and leaves_total > 0 else None
        rows.append(PhaseRow(name, depth[name], p50, p90, share, half, count))
    return rows


def ci_half(store: PhaseStore) -> float | None:
    """The 95 % half-width (percent) of the phase's typical round median: the one interval
    (core/statistics/intervals.py), the round the unit of inference."""
    if len(store.round_start) < 2:
        return None
    return half_percent(store.round_medians())
