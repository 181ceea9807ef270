"""The worker-thread side of a live run: Session events -> Textual messages.

`EventBridge` is the Session's `on_event` callback; it runs on the session's worker thread
(and, for a failed autosave's log line, on the session's autosave thread). Each event becomes
one message (messages.SessionEvent), in order. Nothing is held back: the runner already sends a
block's iterations as columns, an `iterations` event every STREAM_CHUNK_S at most (about 20 a
second per block, however fast the kernel), so the UI's queue never floods.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.message import Message

from sagetui.core import events as ev
from sagetui.tui.messages import SessionEvent


class EventBridge:
    def __init__(self, post: Callable[[Message], object]) -> None:
        self.post = post

    def __call__(self, e: ev.Event) -> None:
        self.post(SessionEvent(e))
