"""The Overview's Swap panel: a swap report (`sagetui swap`) as its table and notes, the same
cells `sagetui swap` prints (core/swap/view.py). Shown only for a swap report, in the place of
the run's variant and phase tables, which a swap has none of."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from sagetui.core.swap import view


class SwapPanel(Static):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.display = False  # until a swap report is shown
        self._shown: int | None = None

    def sync(self, report: Any) -> bool:
        """Show `report`'s swap (a Report or None); whether it has one."""
        swap = getattr(report, "swap", None)
        if self.display != (swap is not None):
            self.display = swap is not None
        if swap is None or self._shown == id(report):
            return swap is not None
        self._shown = id(report)
        table = Table(title=view.title(swap), expand=False)
        for name, numeric in view.COLUMNS:
            table.add_column(name, justify="right" if numeric else "left")
        for row in view.rows(swap):
            table.add_row(*(Text(x) for x in row))
        notes = [Text(line) for line in view.notes(report)]
        self.update(Group(table, *notes))
        return True
