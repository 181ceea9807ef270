"""A live run's wall clock, for the status line's ETA and elapsed time. Where the run is (its
round, stage, iterations) is the run model's (core/run/model.RunProgress): the model reads no
clock, so the console keeps this beside it."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sagetui.core.run.model import RunProgress


@dataclass
class RunClock:
    rounds_planned: int | None = None
    iterations_per_round: int = 0
    until_ci_percent: float | None = None  # adaptive stopping: rounds_planned is its limit
    started: float | None = None
    finished: float | None = None
    round_started: float | None = None
    measured_s: float = 0.0  # time spent in rounds, for the iteration rate
    stopping: bool = False

    def start(self, rounds: int, iterations: int, until_ci_percent: float | None) -> None:
        self.rounds_planned, self.iterations_per_round = rounds, iterations
        self.until_ci_percent = until_ci_percent
        self.started, self.finished, self.round_started = time.monotonic(), None, None
        self.measured_s, self.stopping = 0.0, False

    def round_begins(self) -> None:
        self.round_started = time.monotonic()

    def round_ends(self) -> None:
        if self.round_started is not None:
            self.measured_s += time.monotonic() - self.round_started
            self.round_started = None

    def finish(self) -> None:
        self.round_ends()
        self.finished, self.stopping = time.monotonic(), False

    def eta_s(self, p: RunProgress) -> float | None:
        if self.rounds_planned is None or p.iterations_done == 0 or p.round < 0:
            return None
        spent = self.measured_s + (time.monotonic() - self.round_started
                                   if self.round_started is not None else 0.0)
        rate = p.iterations_done / max(spent, 1e-9)
        per_round = self.iterations_per_round * max(1, p.variants_in_round)
        left = per_round * (self.rounds_planned - p.round) - p.iteration_in_round
        return max(0.0, left / rate)
