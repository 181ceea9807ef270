"""Variant toggles: which variants run (or show), which one is the baseline."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from sagetui.core import format as fmt
from sagetui.core.format import ms, pct
from sagetui.core.report.model import Accuracy
from sagetui.core.run import late
from sagetui.tui.source import Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.verdict_table import drift_cell
from sagetui.tui.widgets.vim_keys import VIM_KEYS

NONE_KEY = "__none__"
HEADERS = ("", "on", "variant", "role", "status", "p50 ms", "p50 Δ %", "drift %/rnd", "cos sim",
           "rel L1 %")


def _width(rows: list[tuple[str, list[Any]]], accuracy: bool) -> int:
    """The columns' width with their long headers: narrower than this, the table takes the
    short ones ("Δ %", "drift", "cos", "L1 %", the baseline's role "base"), so that no column
    is cut (every one fits 80 columns)."""
    n = len(HEADERS) if accuracy else len(HEADERS) - 2
    widths = [max([len(h), *(c.cell_len if isinstance(c, Text) else len(str(c))
                              for _, cells in rows for c in cells[i:i + 1])])
              for i, h in enumerate(HEADERS[:n])]
    return sum(widths) + 2 * n + 2  # each cell's padding, and the scrollbar's room
STATUS_STYLE = {"ok": "", "failed": "bold red", "excluded": "yellow", "partial": "yellow",
                "pending": "dim"}


def _accuracy(acc: Accuracy | None, late_state: str | None) -> tuple[Any, Any]:
    """Its cells; `late_state` for an accuracy still to come ("computing…") or that never
    came ("not computed"), after the last round (core/run/late.py)."""
    if acc is None and late_state is not None:
        return Text(late_state, style="dim italic"), ""
    cells = fmt.accuracy(acc.model_dump() if acc else None)
    return cells["cos"], cells["l1"]


class VariantTable(SteadyTable):
    """One row per variant; the cursor row is the selected variant."""
    BINDINGS = VIM_KEYS


    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._signature: tuple = ()
        self._accuracy = False  # the accuracy columns are shown (only when a variant has them)
        self._narrow = False  # the short headers: the columns fit 80 columns with accuracy
        self._last: tuple[Source, ViewContext] | None = None

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        short = self._narrow
        self.add_column("", key="swatch", width=1)
        self.add_column("on", key="on", width=3)
        self.add_column("variant", key="name")
        self.add_column("role", key="role")
        self.add_column("status", key="status")
        self.add_column("p50 ms", key="p50")
        # report 001's p50 speedup, not "paired %"
        self.add_column("Δ %" if short else "p50 Δ %", key="speedup")
        self.add_column("drift" if short else "drift %/rnd", key="drift")
        if self._accuracy:
            self.add_column("cos" if short else "cos sim", key="cos")
            self.add_column("L1 %" if short else "rel L1 %", key="l1")

    def on_resize(self) -> None:
        if self._last is not None:
            self.sync(*self._last)  # the columns short or long for the new width

    def selected(self) -> str | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return None if key == NONE_KEY else key

    def select(self, name: str | None) -> None:
        if name is None:
            return
        try:
            self.move_cursor(row=self.get_row_index(name))
        except Exception:  # the name is not in this table (another source)
            pass

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self._last = (data, ctx)
        late_keys = set(data.model.computing)
        late_state = "computing…" if ctx.running else "not computed"
        accuracy = bool(any(v.facts.accuracy for v in data.variants.values())
                        or any(k.startswith(late.ACCURACY) for k in late_keys))
        rows = self._rows(data, ctx, accuracy, late_keys, late_state)
        # the panel takes the table's own width, up to the terminal's (less its border): short
        # headers when the long ones would not fit the terminal
        narrow = 0 < self.app.size.width - 2 < _width(rows, accuracy)
        if accuracy != self._accuracy or narrow != self._narrow:
            # a report without accuracy keeps 80 columns for timing
            self._accuracy, self._narrow = accuracy, narrow
            self.clear(columns=True)
            self._add_columns()
            self._signature = ()
        if narrow:
            for _, cells in rows:
                cells[3] = "base" if cells[3] else ""
        signature = tuple(r[0] for r in rows)
        keep = self.selected() or ctx.selected
        if signature != self._signature:
            self.clear()
            for key, cells in rows:
                self.add_row(*cells, key=key)
            self._signature = signature
            self.select(keep)
            return
        for key, cells in rows:
            cols = ("swatch", "on", "name", "role", "status", "p50", "speedup", "drift",
                    *(("cos", "l1") if accuracy else ()))
            for col, value in zip(cols, cells, strict=True):
                self.update_cell(key, col, value, update_width=True)

    def _rows(self, data: Source, ctx: ViewContext, accuracy: bool, late_keys: set[str],
              late_state: str) -> list[tuple[str, list[Any]]]:
        rows: list[tuple[str, list[Any]]] = []
        for name, v in data.variants.items():
            colour = ctx.colour(data, name)
            role = "baseline" if name == data.baseline else ""
            enabled = data.is_enabled(name)
            on = Text("[x]" if enabled else "[ ]", style="bold" if enabled else "dim")
            sdpa = v.facts.sdpa_backend
            label = name + (f" [{sdpa}]" if sdpa else "")
            rows.append((name, [
                Text("■", style=colour), on, Text(label, style=f"bold {colour}"), role,
                Text(v.status, style=STATUS_STYLE.get(v.status, "")), ms(data.p50_s(v)),
                "" if name == data.baseline else pct(v.speedup_percent, 3),
                drift_cell(v.drift),
                *(_accuracy(v.facts.accuracy, late_state if late.accuracy_key(name) in late_keys
                            else None) if accuracy else ())]))
        if not rows:
            rows.append((NONE_KEY, ["", "", Text("(none)", style="dim"),
                                    *[""] * (7 if accuracy else 5)]))
        return rows
