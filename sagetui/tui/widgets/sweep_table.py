"""The Sweep tab's table: a row per point and variant (p50 ± CI, kernel and end-to-end TOPS,
share of peak, accuracy); failed points and variants say why, a noisy point's p50 ends in `!`
(plan.noisy: its interval wider than ±10 %)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from sagetui.core.format import printable
from sagetui.core.sweep.export import accuracy_text, length_label, p50_text
from sagetui.core.sweep.plan import noisy
from sagetui.tui.sweep_view import SweepView
from sagetui.tui.widgets.steady_table import SteadyTable

COLUMNS = ("point", "backend", "p50 ms ± CI", "kernel TOPS", "e2e TOPS", "share of peak",
           "accuracy")
# the same columns' headers under NARROW columns, with the widths the long cells are cut to at
# least (a cut cell ends in an ellipsis)
SHORT = ("point", "backend", "p50 ± CI", "kTOPS", "e2e", "peak", "accuracy")
NARROW = 120
LEAST = {"point": 11, "p50 ms ± CI": 16, "p50 ± CI": 16, "accuracy": 10}


class SweepTable(SteadyTable):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kwargs)
        self._shown: tuple[int, int, int] | None = None
        self._view: SweepView | None = None

    def on_mount(self) -> None:
        for col in COLUMNS:
            self.add_column(col, key=col)

    def _columns(self, headers: tuple[str, ...]) -> None:
        """The columns again: their widths from what they hold now."""
        self.clear(columns=True)
        for col, key in zip(headers, COLUMNS, strict=True):
            self.add_column(col, key=key)

    def on_resize(self) -> None:
        self.sync(self._view)  # the long columns fitted to the new width

    def sync(self, view: SweepView | None) -> None:
        self._view = view
        key = (id(view), view.version if view else -1, self.size.width)
        if key == self._shown:
            return
        self._shown = key
        headers = SHORT if 0 < self.size.width < NARROW else COLUMNS
        self._columns(headers)
        for row in fit_columns(self._rows(view), self.size.width, headers):
            self.add_row(*row)

    @staticmethod
    def _rows(view: SweepView | None) -> list[list[str | Text]]:
        blank = [""] * (len(COLUMNS) - 1)
        if view is None:
            return [[Text(line, style="dim"), *blank] for line in (
                "no sweep here: run", "`sagetui sweep --console`", "or open a sweep report:",
                "`sagetui view FILE`")]
        rows: list[list[str | Text]] = []
        for p in view.points:
            label = f"{length_label(p.x)} {p.group}"
            if not p.variants:
                rows.append([label, "-", Text(f"failed: {printable(p.error or '')}",
                                              style="red"), *[""] * 4])
            for v in p.variants:
                if v.status != "ok":
                    rows.append([label, printable(v.name),
                                 Text(f"failed: {printable(v.error or '')}", style="red"),
                                 *[""] * 4])
                    continue
                share = "-" if v.kernel_share_of_peak is None else \
                    f"{100 * v.kernel_share_of_peak:.1f} %"
                p50 = Text(f"{p50_text(v)} !", style="bold red") if noisy(v) else p50_text(v)
                rows.append([label, printable(v.name), p50, f"{v.kernel_tops:.3f}",
                             f"{v.e2e_tops:.3f}", share, printable(accuracy_text(v.accuracy))])
        if view.planned > len(view.points):
            rows.append([Text(f"{len(view.points)} of {view.planned} points", style="dim"),
                         *blank])
        return rows


# the columns a narrow table shortens, in this order
SHORTENED = (COLUMNS.index("accuracy"), COLUMNS.index("point"), COLUMNS.index("p50 ms ± CI"))


def cell_len(cell: str | Text) -> int:
    return cell.cell_len if isinstance(cell, Text) else Text(cell).cell_len


def fit_columns(rows: list[list[str | Text]], width: int,
                headers: tuple[str, ...] = COLUMNS) -> list[list[str | Text]]:
    """The rows with the long columns (accuracy, point, p50) cut to fit `width`, each cut cell
    ending in an ellipsis: the table's header does not scroll out of sight."""
    if width <= 0 or not rows:
        return rows
    widths = [max(len(c), *(cell_len(r[i]) for r in rows)) for i, c in enumerate(headers)]
    room = width - 2 * len(headers) - 2  # each cell's padding, the scrollbar
    for i in SHORTENED:
        over = sum(widths) - room
        if over <= 0:
            break
        widths[i] = min(widths[i], max(LEAST.get(headers[i], len(headers[i])),
                                       widths[i] - over))
    out = []
    for r in rows:
        cells: list[str | Text] = []
        for i, c in enumerate(r):
            text = Text(c) if isinstance(c, str) else c.copy()
            if text.cell_len > widths[i]:
                text.truncate(widths[i], overflow="ellipsis")
            cells.append(text)
        out.append(cells)
    return out
