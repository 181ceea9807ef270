"""Drift, verdicts and speedups a report did not record, or that a new baseline changes:
computed by derive.py in a thread worker (scipy stays off the UI thread), folded in on the UI
thread when its message comes back."""

from __future__ import annotations

from functools import partial

from textual.app import App

from .derive import derive
from .messages import DerivedReady
from .run_data import RunData


class DeriveFlow:
    def __init__(self, app: App[int]) -> None:
        self.app = app

    def start(self, data: RunData, recompute: bool) -> None:
        """Fill in drift and verdicts (recompute: all, for a new baseline) off the UI thread."""
        missing = set(data.variants) if recompute else {
            n for n, v in data.variants.items() if v.drift is None}
        need_verdicts = recompute or any(v.verdict is None and n != data.baseline
                                         for n, v in data.variants.items())
        if not data.variants or not (missing or need_verdicts):
            return
        rounds = {n: {p.round: p.median_s for p in v.round_points()}
                  for n, v in data.variants.items()}
        p50 = {n: v.p50_s() for n, v in data.variants.items()}
        job = partial(self._thread, id(data), rounds, p50, data.baseline,
                      data.threshold_percent, missing if not data.live else set(),
                      need_verdicts, recompute)
        self.app.run_worker(job, group="derive", thread=True, exit_on_error=False)

    def _thread(self, source_id: int, rounds: dict[str, dict[int, float]],
                p50: dict[str, float | None], baseline: str | None,
                threshold: float | None, missing: set[str], verdicts: bool,
                recompute: bool) -> None:
        d = derive(rounds, p50, baseline, threshold_percent=threshold, missing_drift=missing,
                   with_verdicts=verdicts)
        self.app.post_message(DerivedReady(source_id, d.drift, d.verdicts, d.speedups,
                                           recompute))


def apply_derived(data: RunData, message: DerivedReady) -> None:
    for name, v in data.variants.items():
        if name in message.drift:
            v.drift = message.drift[name]
        if name == data.baseline:
            v.verdict, v.verdict_computed = None, False
        elif name in message.verdicts and (message.recompute or v.verdict is None):
            v.verdict, v.verdict_computed = message.verdicts[name], not data.live
        if name in message.speedups and (message.recompute or v.speedup_percent is None):
            v.speedup_percent = message.speedups[name]
    data.touch()
