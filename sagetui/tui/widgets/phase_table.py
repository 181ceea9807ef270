"""Per-phase latency: p50, p90, share of the call, the 95 % half-width from rounds, and the
phase's speed of light: its bytes, GB/s and share of the copy bandwidth."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from sagetui.core import format as fmt
from sagetui.core.blocks.workload import Workload
from sagetui.core.format import fraction_pct, gbps, half_width, ms, size
from sagetui.tui import keymap
from sagetui.tui.source import PhaseRow, Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.folded_columns import fold
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.vim_keys import VIM_KEYS


def empty_text(data: Source) -> str:
    """Why there are no phase timings: none yet, or a block of points (a workload's calls, a
    sweep's points) whose timings are in the Sweep tab."""
    block = data.points_block()
    if block is None:
        return "no phase timings yet"
    kind = "call" if isinstance(block, Workload) else "point"
    tab = next(i for i, (key, _) in enumerate(keymap.TABS, 1) if key == "sweep")
    return f"each {kind}'s timings: the Sweep tab ({tab})"


def _cells(row: PhaseRow, bold: bool = False, sol: bool = False) -> list[Text | str]:
    name = Text("  " * row.depth + row.name, style="bold" if bold else
                ("dim" if row.depth else ""))
    share = "" if row.share is None else fmt.share(row.share)
    half = "" if row.ci_half_percent is None else half_width(row.ci_half_percent)
    cells: list[Text | str] = [name, ms(row.p50_s), ms(row.p90_s), share, half,
                               "" if row.count is None else str(row.count)]
    if sol:
        cells += ["" if row.bytes_moved is None else size(row.bytes_moved),
                  "" if row.gbps is None else gbps(row.gbps),
                  "" if row.share_of_copy is None else f"{fraction_pct(row.share_of_copy, 1)} %"]
    return cells


COLUMNS = ("phase", "p50 ms", "p90 ms", "share", "95% CI", "n")
# where a phase has a bytes model: its compulsory traffic against the GPU's measured copy
# bandwidth (core/sol.py; blank where none was measured)
SOL_COLUMNS = ("bytes", "GB/s", "% copy")


class PhaseTable(SteadyTable):
    BINDINGS = VIM_KEYS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self._last: tuple[Source, ViewContext] | None = None
        self._width = 0

    def on_mount(self) -> None:
        self._columns([Text(c) for c in COLUMNS], 1)

    def _columns(self, labels: list[Text], height: int) -> None:
        self.clear(columns=True)
        self.header_height = height
        for i, label in enumerate(labels):
            self.add_column(label, key=str(i))

    def on_resize(self) -> None:
        if self._last is not None and self.size.width != self._width:
            self.sync(*self._last)  # folded again for the new width

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self._last, self._width = (data, ctx), self.size.width
        whose, rows = data.phase_rows(ctx.selected)
        row_before = self.cursor_row
        sol = any(r.bytes_moved is not None for r in rows)
        labels = COLUMNS + SOL_COLUMNS if sol else COLUMNS
        cells = [_cells(row, sol=sol) for row in rows]
        total = data.total_row(ctx.selected)
        if total is not None:
            cells.append(_cells(total, bold=True, sol=sol))
        if not rows and total is None:
            cells.append([Text(empty_text(data), style="dim"), *[""] * (len(labels) - 1)])
        # the columns folded into bands where they do not fit (an H200's speed of light)
        folded = fold(labels, cells, self.size.width)
        headers = [h.plain for h in folded.headers]
        if headers != [str(c.label) for c in self.columns.values()] \
                or self.header_height != folded.header_height:
            self._columns(folded.headers, folded.header_height)
        self.clear()
        for row, height in zip(folded.rows, folded.heights, strict=True):
            self.add_row(*row, height=height)
        self.border_title = Text(f"Phases · {whose}")  # Text: a name is never markup
        if row_before < self.row_count:
            self.move_cursor(row=row_before)
