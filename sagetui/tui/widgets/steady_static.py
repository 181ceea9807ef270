"""A Static updated only when its text changes.

Static.update lays out the whole screen (25-47 ms for the console at 120x40 on a 2-core
machine), and the console syncs its panels on every tick and tab switch: a panel whose text did
not change must not cost a layout. Headless, over 8 s of a streaming run on the Overview, the
decomposition panel's unchanged text was laid out 16 times (every layout in that time but one).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class SteadyStatic(Static):
    _shown: Text | None = None

    def show(self, text: Text, layout: bool = True) -> None:
        """Show `text` unless it is what is shown; `layout`: its height may have changed."""
        if text == self._shown:
            return
        self._shown = text
        self.update(text, layout=layout)
