"""A fast view of a run model's samples for the iteration plot, which asks twice a second while
a run streams: a variant's per-iteration totals, the round being measured included, with a
min/max pyramid (series.MinMaxSeries). (A phase's p50 and p90: core/run/quantiles.py.)

It reads the model's arrays (core/run/model.PhaseSamples) and keeps a copy of the totals only
(one phase of eight). A completed round never changes, so what it has read of them it never
reads again.
"""

from __future__ import annotations

import numpy as np

from sagetui.core.run.model import PhaseSamples
from sagetui.core.samples import GrowableArray
from sagetui.tui.series import MinMaxSeries


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
