"""Per-phase samples of one variant and the phase table's rows (p50, p90, share, 95 % CI).

A variant's samples of one round are contiguous (its two blocks of a round come before any
block of the next), so a round is a slice of the phase's array, not a mask. Quantiles and
round medians are cached by sample count: a redraw never re-reads a finished round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .formatting import t975
from .series import GrowableArray


@dataclass
class PhaseRow:
    name: str
    depth: int
    p50_s: float | None
    p90_s: float | None
    share: float | None  # of the sum of the leaves' p50
    ci_half_s: float | None  # 95 % half-width of the median, from round medians
    count: int | None


class PhaseStore:
    """One phase's (or the total's) samples of one variant, with where each round starts."""

    def __init__(self) -> None:
        self.values = GrowableArray()
        self.round_start: dict[int, int] = {}
        self.round_end: dict[int, int] = {}
        self._cached: tuple[int, float, float] | None = None
        self._round_cache: dict[int, tuple[tuple[int, int], tuple[float, float, float] | None]] \
            = {}

    def add(self, round_: int, value: float) -> None:
        self.round_start.setdefault(round_, len(self.values))
        self.values.append(value)
        self.round_end[round_] = len(self.values)

    def add_round(self, round_: int, values: list[float]) -> None:
        self.round_start[round_] = len(self.values)
        self.values.extend(values)
        self.round_end[round_] = len(self.values)

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

    def quantiles(self) -> tuple[float, float]:
        """(p50, p90), computed once per sample count."""
        n = len(self.values)
        if self._cached is None or self._cached[0] != n:
            p50, p90 = np.percentile(self.values.view, [50, 90])
            self._cached = (n, float(p50), float(p90))
        return self._cached[1], self._cached[2]


def phase_rows(tree: list[tuple[str, str | None]],
          stats: dict[str, tuple[float | None, float | None, float | None, int | None]]
          ) -> list[PhaseRow]:
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
    """95 % half-width of the mean of round medians: the round is the unit of inference."""
    rounds = store.rounds()
    if len(rounds) < 2:
        return None
    med = np.array([st[0] for r in rounds if (st := store.round_stats(r)) is not None])
    if med.size < 2:
        return None
    sd = float(med.std(ddof=1))
    half = t975(med.size - 1) * sd / math.sqrt(med.size)
    return half if math.isfinite(half) else None
