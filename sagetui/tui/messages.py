"""Textual messages: a session's events from its worker thread to the UI, and results
computed off the UI thread."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from sagetui.core.events import Event


class SessionEvents(Message):
    """The session's typed events (core/events.py), in order: one, or the `iterations` events
    of up to the bridge's flush interval and the event that followed them (a fast kernel's
    blocks must not flood the UI's queue with a message each)."""

    def __init__(self, events: list[Event]) -> None:
        super().__init__()
        self.events = events


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
