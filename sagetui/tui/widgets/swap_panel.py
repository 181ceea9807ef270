"""The Overview's Swap panel: a swap report (`sagetui swap`) as its table and notes, the same
cells `sagetui swap` prints (core/swap/view.py). Shown only for a swap report, in the place of
the run's variant and phase tables, which a swap has none of."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from sagetui.core.swap import view
from sagetui.tui.fitted_tables import swap_table


class SwapPanel(Static):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.display = False  # until a swap report is shown
        self._shown: tuple[int, int] | None = None  # the report and the width it was laid out at

    def sync(self, report: Any) -> bool:
        """Show `report`'s swap (a Report or None); whether it has one."""
        swap = getattr(report, "swap", None)
        if self.display != (swap is not None):
            self.display = swap is not None
        # its columns fit the panel's width: every cell whole, the rest in a table under it
        width = self.size.width or self.app.size.width
        if swap is None or self._shown == (id(report), width):
            return swap is not None
        self._shown = (id(report), width)
        notes = [Text(line) for line in view.notes(report)]
        self.update(Group(swap_table(report, width), *notes))
        return True


class SwapBox(VerticalScroll):
    """The Swap panel's frame, shown with it: it scrolls (at 80 x 24 a swap's tables and notes
    are taller than the screen) and takes the focus with its tab only while shown."""

    def allow_focus(self) -> bool:
        return self.display and super().allow_focus()
