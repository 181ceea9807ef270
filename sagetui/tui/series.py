"""Numpy-backed sample stores for the live plots.

A run can stream millions of iterations; the plots redraw twice a second. Samples go into
growable float arrays (amortised O(1) appends, no per-sample Python objects), and a min/max
pyramid keeps, for every power-of-two block size, the min and max of each block, so that a
plot of any width reads O(width + log n) numbers per redraw, however many samples there are.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from sagetui.core.samples import GrowableArray


class MinMaxSeries:
    """Samples in arrival order plus a min/max pyramid over them.

    Level k holds the min and max of every complete block of 2**k samples; level 0 is the
    samples themselves. Levels from FIRST_LEVEL up are kept (levels 1 and 2 would cost 1.5
    doubles a sample, 12 MB at 10^6 samples; a block of under 8 samples is read from the
    samples when asked for). `envelope(width)` picks the finest level with at most `width`
    blocks and reads it, plus O(log n) partial blocks for the unfinished tail.
    """

    FIRST_LEVEL = 3

    def __init__(self, values: GrowableArray | None = None) -> None:
        # `values` may be another store's array (a variant's totals are its total
        # PhaseStore's): then whoever appends to it calls sync()
        self.values = values if values is not None else GrowableArray()
        self._lo: list[GrowableArray] = []  # index k - FIRST_LEVEL holds level k
        self._hi: list[GrowableArray] = []

    def __len__(self) -> int:
        return len(self.values)

    def extend(self, values: Iterable[float] | np.ndarray) -> None:
        self.values.extend(values)
        self._update()

    def sync(self) -> None:
        """Take in what was appended to the shared values array."""
        self._update()

    def append(self, value: float) -> None:
        self.values.append(value)
        if len(self.values) % (1 << self.FIRST_LEVEL) == 0:  # only then can a block complete
            self._update()

    def _update(self) -> None:
        n = len(self.values)
        lo_prev = hi_prev = self.values.view
        k, step = self.FIRST_LEVEL, 1 << self.FIRST_LEVEL  # the first level from the samples
        while n >> k:
            i = k - self.FIRST_LEVEL
            if len(self._lo) <= i:
                self._lo.append(GrowableArray())
                self._hi.append(GrowableArray())
            lo_k, hi_k = self._lo[i], self._hi[i]
            have, want = len(lo_k), n >> k
            if have < want:  # only the new blocks: amortised O(1) per sample
                lo_k.extend(lo_prev[step * have: step * want].reshape(-1, step).min(axis=1))
                hi_k.extend(hi_prev[step * have: step * want].reshape(-1, step).max(axis=1))
            lo_prev, hi_prev = lo_k.view, hi_k.view
            k, step = k + 1, 2

    def _blocks(self, k: int, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(min, max) of level k's blocks start..stop-1 (all complete)."""
        if k >= self.FIRST_LEVEL:
            i = k - self.FIRST_LEVEL
            return self._lo[i].view[start:stop], self._hi[i].view[start:stop]
        v = self.values.view[start << k: stop << k].reshape(-1, 1 << k)
        return v.min(axis=1), v.max(axis=1)

    def envelope(self, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x, lo, hi) with about `width` points or fewer: x is the first sample index of each
        block, lo/hi its min and max. Undecimated (lo == hi) when n <= width."""
        n = len(self.values)
        width = max(1, width)
        if n <= width:
            v = self.values.view
            return np.arange(n, dtype=np.float64), v.copy(), v.copy()
        k = 0
        while (n >> k) > width:
            k += 1
        m = n >> k
        xs = [np.arange(m, dtype=np.float64) * (1 << k)]
        lo, hi = self._blocks(k, 0, m)
        lo_parts, hi_parts = [lo], [hi]
        covered = m << k
        for j in range(k - 1, -1, -1):  # the tail, from the largest partial block down
            size = 1 << j
            if covered + size <= n:
                idx = covered >> j
                lo, hi = self._blocks(j, idx, idx + 1)
                xs.append(np.array([float(covered)]))
                lo_parts.append(lo)
                hi_parts.append(hi)
                covered += size
        return np.concatenate(xs), np.concatenate(lo_parts), np.concatenate(hi_parts)


    def envelope_range(self, start: int, stop: int, width: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """envelope() of samples start..stop-1 only (a zoomed plot): read from the samples,
        O(stop - start), so only while zoomed in."""
        n = len(self.values)
        start, stop = max(0, start), min(n, stop)
        if start == 0 and stop == n:
            return self.envelope(width)
        v = self.values.view[start:stop]
        if v.size <= max(1, width):
            return np.arange(start, stop, dtype=np.float64), v.copy(), v.copy()
        size = -(-v.size // max(1, width))
        m = -(-v.size // size)
        padded = np.concatenate((v, np.full(m * size - v.size, np.nan)))
        blocks = padded.reshape(m, size)
        x = np.arange(m, dtype=np.float64) * size + start
        return x, np.nanmin(blocks, axis=1), np.nanmax(blocks, axis=1)


def stride(values: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) of at most `width` evenly spaced points: O(width)."""
    n = values.size
    if n <= width:
        return np.arange(n), values
    idx = np.linspace(0, n - 1, max(2, width)).round().astype(np.int64)
    return idx, values[idx]
