"""Textual messages: a session's events from its worker thread to the UI, and results
computed off the UI thread."""

from __future__ import annotations

from textual.message import Message

from sagetui.core.events import Event
from sagetui.core.statistics.analysis import Analysis


class SessionEvent(Message):
    """One of the session's typed events (core/events.py), every kind of them."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class DerivedReady(Message):
    """The analysis of a source (drift, verdicts, speedups) computed off the UI thread."""

    def __init__(self, source_id: int, analysis: Analysis, recompute: bool) -> None:
        super().__init__()
        self.source_id = source_id
        self.analysis = analysis
        self.recompute = recompute  # a new baseline: replace, not only fill in
