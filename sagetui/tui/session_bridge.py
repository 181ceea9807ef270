"""The worker-thread side of a live run: Session events -> Textual messages.

`EventBridge` is the Session's `on_event` callback; it runs on the session's worker thread
(and, for a failed autosave's log line, on the session's autosave thread: hence the lock).
Iteration events are batched (flushed every `flush_s` and before any other event) as runs of
columns (run_data.IterationRun), so that no event's dicts live on until the flush; every other
event becomes one message. After each round it also takes the variants' drift and p50
speedups from the session's collector's analysis (core.analysis): the collector is only
written by this same thread, so reading it here needs no lock, and the statistics (scipy)
stay off the UI thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from textual.message import Message

from sagetui.session.session import Session, SessionEvent

from .messages import IterationBatch, RunEvent
from .run_data import IterationRun


class EventBridge:
    def __init__(self, post: Callable[[Message], object], flush_s: float = 0.1,
                 drift_every_s: float = 0.5) -> None:
        self.post = post
        self.flush_s = flush_s
        self.drift_every_s = drift_every_s  # rounds of milliseconds must not wait on scipy
        self.session: Session | None = None
        self._pending: list[IterationRun] = []
        self._last_flush = time.monotonic()
        self._last_drift = 0.0
        self._lock = threading.Lock()

    def __call__(self, e: SessionEvent) -> None:
        with self._lock:
            if e.kind == "iteration":
                pending = self._pending
                if not pending or not pending[-1].takes(e.data):
                    pending.append(IterationRun(e.data))
                pending[-1].add(e.data)
                if time.monotonic() - self._last_flush >= self.flush_s:
                    self._flush()
                return
            self._flush()  # in order: the iterations before the event that follows them
            data = dict(e.data)
            if e.kind == "round" and data.get("phase") == "done" \
                    and time.monotonic() - self._last_drift >= self.drift_every_s:
                data.update(self._analysis())
                self._last_drift = time.monotonic()
            self.post(RunEvent(e.kind, data))

    def flush(self) -> None:
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        if self._pending:
            batch, self._pending = self._pending, []
            self.post(IterationBatch(batch))

    def _analysis(self) -> dict[str, Any]:
        """Drift and p50 speedups of the collector's analysis (core.analysis)."""
        s = self.session
        if s is None:
            return {}
        an = s.collector.analysis(drift=True)
        return {"drift": an.drift_dicts(), "speedups": an.speedups()}
