"""The Log tab's view: a RichLog that wraps its lines again when its width changes.

RichLog wraps a line once, when it is written, at the app console's width of that moment (not
its own, less its border and scrollbar): after a resize the old lines kept their old width (cut
at a narrower one, half the screen empty at a wider one). This one keeps what was written,
wraps it at its own content's width, and writes it all again when that width changes."""

from __future__ import annotations

from collections import deque
from typing import Any

from textual.events import Resize
from textual.widgets import RichLog


class LogView(RichLog):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._written: deque[Any] = deque(maxlen=self.max_lines)
        self._width = 0  # the width the lines shown were wrapped at

    def write(self, content: Any, width: int | None = None, expand: bool = False,
              shrink: bool = True, scroll_end: bool | None = None,
              animate: bool = False) -> LogView:
        self._written.append(content)
        if self._width:  # else written once the width is known (on_resize)
            super().write(content, width or self._width, expand, shrink, scroll_end, animate)
        return self

    def clear(self) -> LogView:
        self._written.clear()
        super().clear()
        return self

    def on_resize(self, event: Resize) -> None:
        width = self.scrollable_content_region.width
        if not width or width == self._width:
            return
        self._width = width
        self._size_known = True  # nothing left for RichLog's own first-size writes
        super().clear()
        for content in self._written:
            super().write(content, width)
