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

    Level k (k >= 1) holds the min and max of every complete block of 2**k samples; level 0 is
    the samples themselves. `envelope(width)` picks the finest level with at most `width`
    blocks and reads it, plus O(log n) partial blocks for the unfinished tail.
    """

    def __init__(self, values: GrowableArray | None = None) -> None:
        # `values` may be another store's array (a variant's totals are its total
        # PhaseStore's): then whoever appends to it calls sync()
        self.values = values if values is not None else GrowableArray()
        self._lo: list[GrowableArray] = []  # index k-1 holds level k
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
        if len(self.values) % 2 == 0:  # only a completed pair can complete any block
            self._update()

    def _update(self) -> None:
        n = len(self.values)
        lo_prev = hi_prev = self.values.view
        k = 1
        while n >> k:
            if len(self._lo) < k:
                self._lo.append(GrowableArray())
                self._hi.append(GrowableArray())
            lo_k, hi_k = self._lo[k - 1], self._hi[k - 1]
            have, want = len(lo_k), n >> k
            if have < want:  # only the new blocks: amortised O(1) per sample
                a = lo_prev[2 * have: 2 * want].reshape(-1, 2)
                b = hi_prev[2 * have: 2 * want].reshape(-1, 2)
                lo_k.extend(a.min(axis=1))
                hi_k.extend(b.max(axis=1))
            lo_prev, hi_prev = lo_k.view, hi_k.view
            k += 1

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
        lo_parts = [self._lo[k - 1].view[:m]]
        hi_parts = [self._hi[k - 1].view[:m]]
        covered = m << k
        for j in range(k - 1, -1, -1):  # the tail, from the largest partial block down
            size = 1 << j
            if covered + size <= n:
                idx = covered >> j
                lo_arr = self.values.view if j == 0 else self._lo[j - 1].view
                hi_arr = self.values.view if j == 0 else self._hi[j - 1].view
                xs.append(np.array([float(covered)]))
                lo_parts.append(lo_arr[idx: idx + 1])
                hi_parts.append(hi_arr[idx: idx + 1])
                covered += size
        return np.concatenate(xs), np.concatenate(lo_parts), np.concatenate(hi_parts)


def stride(values: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) of at most `width` evenly spaced points: O(width)."""
    n = values.size
    if n <= width:
        return np.arange(n), values
    idx = np.linspace(0, n - 1, max(2, width)).round().astype(np.int64)
    return idx, values[idx]
