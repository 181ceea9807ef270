"""A DataTable that keeps what it has drawn across a tab switch.

Textual's DataTable drops every cell, row and line it has drawn on each Resize and on each
style update, and a tab switch brings both to the tables of the tab it shows: the tab's widgets
come back from size 0 (a Resize, at the size they had), and the focus moves into one of them
(style updates). So each switch drew its tables from nothing, twice, once without the focus
and once with it: 3-4 ms each for the Phases tab's table at 120 columns, most of what a switch
to that tab cost an idle console beyond a bare Textual app's.

The table's caches are keyed already by the focus and hover state, the base style, the cursor
and the width; what they do not key is the styles of its parts (the cursor's, the header's:
they change with the focus and the theme), which are looked up again on every style update
here. So a SteadyTable keeps its caches unless its size or the theme really changed.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import DataTable


class SteadyTable(DataTable):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._resized_to: tuple[Size, Size] | None = None
        self._styled_for: str | None = None  # the theme its caches were drawn in

    def _on_resize(self, event: events.Resize) -> None:
        size = (event.size, event.virtual_size)
        if size == self._resized_to:
            event.prevent_default()  # DataTable's handler would only drop the caches
        self._resized_to = size

    def notify_style_update(self) -> None:
        theme = self.app.theme
        if theme != self._styled_for:
            self._styled_for = theme
            super().notify_style_update()
            return
        Widget.notify_style_update(self)  # not DataTable's, which drops every cache
        self._get_styles_to_render_cell.cache_clear()  # the parts' styles, by focus
        self._styles_cache.clear()  # the border and its colour
        self.refresh()
