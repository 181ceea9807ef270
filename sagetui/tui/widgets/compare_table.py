"""Reports side by side (compare_rows.py builds the rows; `sagetui compare` prints the same):
per variant and phase, p50 and p90 in each report, how much faster than A, speedup, verdict.
The title names the files (A = ..., B = ...) and the sign convention."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.dom import DOMNode
from textual.widgets import Static

from sagetui.core.format import ms, pct, short_phase
from sagetui.tui.compare_rows import (
    MATCH_NOTE,
    SIGN_NOTE,
    compare_rows,
    faster_than_a,
    legend,
    letter,
)
from sagetui.tui.source import Source
from sagetui.tui.widgets.mainloop_panel import compare_text
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.vim_keys import VIM_KEYS


def sync_compare(root: DOMNode, sources: list[Source]) -> None:
    """The Compare tab under `root`: its hint, its table of the saved reports, and their main
    loops' profiles (the panel shown only when they have some)."""
    reports = [s for s in sources if not s.live]
    root.query_one("#compare-hint", Static).update(compare_hint(len(reports)))
    root.query_one(CompareTable).show(reports)
    panel = root.query_one("#compare-mainloop", Static)
    panel.update(text := compare_text([(s.model.profiles, s.baseline) for s in reports]))
    panel.display = bool(text.plain)


def compare_hint(reports: int) -> Text:
    """The line above the Compare table."""
    if reports < 2:
        return Text("Open two or more reports to compare them: sagetui view A.json B.json, "
                    "or o to open one here.", style="dim")
    return Text(f"{reports} reports side by side; * marks a verdict computed from a report's "
                "round p50s.", style="dim")


class CompareTable(SteadyTable):
    BINDINGS = VIM_KEYS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, fixed_columns=2,
                         **kwargs)
        self._columns_for: tuple[int, bool] = (-1, False)

    def _columns(self, n: int, cos: bool) -> None:
        if (n, cos) == self._columns_for:
            self.clear()
            return
        self.clear(columns=True)
        self.add_column("variant", key="variant")
        self.add_column("phase", key="phase")
        if n > 1:
            self.add_column("matched", key="matched")
        for i in range(n):
            x = letter(i)
            self.add_column(f"{x} p50 ms", key=f"{i}p50")
            self.add_column(f"{x} p90 ms", key=f"{i}p90")
            if i:
                self.add_column(f"{x} faster %", key=f"{i}delta")
            self.add_column(f"{x} p50 speedup %", key=f"{i}speedup")
            self.add_column(f"{x} verdict: paired % [CI]", key=f"{i}verdict")
            if cos:
                self.add_column(f"{x} cos sim", key=f"{i}cos")
        self._columns_for = (n, cos)

    def show(self, sources: list[Source]) -> None:
        rows = compare_rows(sources)
        cos = any(c is not None and c.cos for r in rows for c in r.cells)
        self._columns(len(sources), cos)
        for row in rows:
            style = "bold" if row.total else ""
            cells: list[object] = [Text(row.label(), style=style),
                                   Text(short_phase(row.phase, 16), style=style or "dim")]
            if len(sources) > 1:
                cells.append(Text(row.matched, style="dim"))
            for i, cell in enumerate(row.cells):
                cells += [ms(cell.p50 if cell else None), ms(cell.p90 if cell else None)]
                if i:
                    cells.append(pct(faster_than_a(row, i)))
                cells.append(pct(cell.speedup, 3) if cell and row.total else "")
                cells.append(Text(cell.verdict if cell else ""))
                if cos:
                    cells.append(cell.cos if cell else "")
            self.add_row(*cells)
        names = [s.label for s in sources]
        self.border_title = Text(f"Compare · {legend(names)}" +
                                 (f" · {SIGN_NOTE}" if len(sources) > 1 else ""))
        self.border_subtitle = Text(MATCH_NOTE if len(sources) > 1 else "")
