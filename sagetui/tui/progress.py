"""Where a live run is: for the status line and the ETA."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Progress:
    """Where a live run is: for the status line and the ETA."""

    round: int = -1
    rounds_planned: int | None = None
    iterations_per_round: int = 0
    variants_in_round: int = 0
    iteration_in_round: int = 0
    current_variant: str | None = None
    iterations_done: int = 0
    measured_s: float = 0.0  # time spent in rounds, for the iteration rate
    round_started: float | None = None
    started: float | None = None
    finished: float | None = None
    stage: str = "idle"  # idle, starting, warm-up, measuring, post-run, stopping, done
    until_ci_percent: float | None = None  # adaptive stopping: rounds_planned is its limit

    def eta_s(self) -> float | None:
        if self.rounds_planned is None or self.iterations_done == 0 or self.round < 0:
            return None
        spent = self.measured_s + (time.monotonic() - self.round_started
                                   if self.round_started is not None else 0.0)
        rate = self.iterations_done / max(spent, 1e-9)
        per_round = self.iterations_per_round * max(1, self.variants_in_round)
        left = per_round * (self.rounds_planned - self.round) - self.iteration_in_round
        return max(0.0, left / rate)
