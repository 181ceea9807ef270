"""Textual messages: a session's events from its worker thread to the UI, and results
computed off the UI thread."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from sagetui.core.events import Event


class SessionEvent(Message):
    """One of the session's typed events (core/events.py), every kind of them."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


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
