"""The worker-thread side of a live run: Session events -> Textual messages.

`EventBridge` is the Session's `on_event` callback; it runs on the session's worker thread
(and, for a failed autosave's log line, on the session's autosave thread: hence the lock).
`iterations` events are held for up to `flush_s` (and sent before any other event, in order);
every other event goes at once. One message class carries them all (messages.SessionEvents).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from textual.message import Message

from sagetui.core import events as ev

from .messages import SessionEvents


class EventBridge:
    def __init__(self, post: Callable[[Message], object], flush_s: float = 0.1) -> None:
        self.post = post
        self.flush_s = flush_s
        self._pending: list[ev.Event] = []
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, e: ev.Event) -> None:
        with self._lock:
            self._pending.append(e)
            if isinstance(e, ev.Iterations) and \
                    time.monotonic() - self._last_flush < self.flush_s:
                return
            self._flush()

    def flush(self) -> None:
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        if self._pending:
            batch, self._pending = self._pending, []
            self.post(SessionEvents(batch))
