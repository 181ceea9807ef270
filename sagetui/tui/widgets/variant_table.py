"""Variant toggles: which variants run (or show), which one is the baseline."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ..formatting import ms, pct
from ..run_data import RunData
from ..view_context import ViewContext
from .verdict_table import drift_cell
from .vim_keys import VIM_KEYS

NONE_KEY = "__none__"
STATUS_STYLE = {"ok": "", "failed": "bold red", "excluded": "yellow", "partial": "yellow",
                "pending": "dim"}


class VariantTable(DataTable):
    """One row per variant; the cursor row is the selected variant."""
    BINDINGS = VIM_KEYS


    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)  # type: ignore[arg-type]
        self._signature: tuple = ()

    def on_mount(self) -> None:
        self.add_column("", key="swatch", width=1)
        self.add_column("on", key="on", width=3)
        self.add_column("variant", key="name")
        self.add_column("role", key="role")
        self.add_column("status", key="status")
        self.add_column("p50 ms", key="p50")
        self.add_column("vs base %", key="speedup")
        self.add_column("drift %/rnd", key="drift")

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

    def sync(self, data: RunData, ctx: ViewContext) -> None:
        rows = []
        for name, v in data.variants.items():
            colour = ctx.colour(data, name)
            role = "baseline" if name == data.baseline else ""
            on = Text("[x]" if v.enabled else "[ ]", style="bold" if v.enabled else "dim")
            rows.append((name, [
                Text("■", style=colour), on, Text(name, style=f"bold {colour}"), role,
                Text(v.status, style=STATUS_STYLE.get(v.status, "")), ms(v.p50_s()),
                "" if name == data.baseline else pct(v.speedup_percent, 3),
                drift_cell(v.drift)]))
        if not rows:
            rows.append((NONE_KEY, ["", "", Text("(none)", style="dim"),
                                    "", "", "", "", ""]))
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
            for col, value in zip(("swatch", "on", "name", "role", "status", "p50", "speedup",
                                   "drift"), cells, strict=True):
                self.update_cell(key, col, value)
