"""Textual messages that carry a session's events from its worker thread to the UI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from .run_data import IterationRun


class RunEvent(Message):
    """One SessionEvent (hello, variant, ready, warmup, round, block, tail, fault, log...)."""

    def __init__(self, kind: str, data: dict[str, Any]) -> None:
        super().__init__()
        self.kind = kind
        self.data = data


class IterationBatch(Message):
    """Iteration events, batched: a fast kernel streams thousands a second, and one message
    each would flood the UI's queue. They come as runs of columns (run_data.IterationRun)."""

    def __init__(self, runs: list[IterationRun]) -> None:
        super().__init__()
        self.runs = runs


class DerivedReady(Message):
    """Drift and verdicts computed off the UI thread for a report that lacked them."""

    def __init__(self, source_id: int, drift: dict[str, dict[str, Any]],
                 verdicts: dict[str, dict[str, Any]], speedups: dict[str, float | None],
                 recompute: bool) -> None:
        super().__init__()
        self.source_id = source_id
        self.drift = drift
        self.verdicts = verdicts
        self.speedups = speedups
        self.recompute = recompute  # a new baseline: replace, not only fill in
