"""The Sweep tab's table: a row per point and variant (p50 ± CI, kernel and end-to-end TOPS,
share of peak, accuracy); failed points and variants say why, a noisy point's p50 ends in `!`
(plan.noisy: its interval wider than ±10 %). A workload's: a row per call and variant, by
call, with the call's causal, GQA and lengths."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from sagetui.core import format as fmt
from sagetui.core.config import Shape
from sagetui.core.format import printable
from sagetui.core.sweep.export import accuracy_text, length_label, p50_cell, p50_text
from sagetui.core.sweep.plan import noisy
from sagetui.tui.sweep_view import SweepView
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.vim_keys import VIM_KEYS

COLUMNS = ("point", "backend", "p50 ms ± CI", "kernel TOPS", "e2e TOPS", "share of peak",
           "accuracy")
# a workload's: a row per call and variant, the call's own shape facts before its p50 (each
# call has its own: no point label says them), in 80 columns
WORKLOAD_COLUMNS = ("call", "variant", "causal", "GQA", "q_len", "kv_len", "p50 ms ± CI",
                    "kernel TOPS", "e2e TOPS", "accuracy")
# the same columns' headers under NARROW columns, with the widths the long cells are cut to at
# least (a cut cell ends in an ellipsis)
SHORT = ("point", "backend", "p50 ± CI", "kTOPS", "e2e", "peak", "accuracy")
NARROW = 120
LEAST = {"point": 11, "accuracy": 10}
# what the table says with no sweep: in a console whose runs are not sweeps (the Sweep tab
# says what its runs are where they are: sweep_tab.SweepTab.empty)
NO_SWEEP = ("no sweep here: run", "`sagetui sweep --console`", "or open a sweep report:",
            "`sagetui view FILE`")


def shape_cells(shape: Shape) -> tuple[str, str, str, str]:
    """A call's causal, GQA (q heads/kv heads, or no), q_len and kv_len cells."""
    gqa = f"{shape.heads}/{shape.n_kv_heads}" if shape.n_kv_heads != shape.heads else "no"
    return ("yes" if shape.causal else "no", gqa, str(shape.q_len), str(shape.n_kv_len))


class SweepTable(SteadyTable):
    BINDINGS = VIM_KEYS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kwargs)
        self._shown: tuple[int, int, int, tuple[str, ...]] | None = None
        self._view: SweepView | None = None
        self._empty: tuple[str, ...] = NO_SWEEP
        self._columns: tuple[str, ...] = ()  # the columns' keys (their long headers)

    def on_mount(self) -> None:
        self._set_columns(COLUMNS, COLUMNS)

    def _set_columns(self, headers: tuple[str, ...], keys: tuple[str, ...]) -> None:
        """The columns again: their widths from what they hold now."""
        self.clear(columns=True)
        for col, key in zip(headers, keys, strict=True):
            self.add_column(col, key=key)
        self._columns = keys

    def on_resize(self) -> None:
        self.sync(self._view, self._empty)  # the long columns fitted to the new width

    def sync(self, view: SweepView | None, empty: tuple[str, ...] = NO_SWEEP) -> None:
        """`empty`: what it says with no sweep to show."""
        self._view, self._empty = view, empty
        key = (id(view), view.version if view else -1, self.size.width, empty)
        if key == self._shown:
            return
        self._shown = key
        workload = view is not None and view.workload
        keys = WORKLOAD_COLUMNS if workload else COLUMNS
        # a workload's headers are short already (they fit 80 columns); its cells are fitted
        headers = keys if workload else SHORT if 0 < self.size.width < NARROW else COLUMNS
        self._set_columns(headers, keys)
        for row in fit_columns(self._rows(view, empty), self.size.width, headers, keys):
            self.add_row(*row)

    @staticmethod
    def _rows(view: SweepView | None, empty: tuple[str, ...]) -> list[list[str | Text]]:
        if view is None:
            blank = [""] * (len(COLUMNS) - 1)
            return [[Text(line, style="dim"), *blank] for line in empty]
        workload = view.workload
        width = len(WORKLOAD_COLUMNS if workload else COLUMNS)
        rows: list[list[str | Text]] = []

        def row(*cells: str | Text) -> None:
            rows.append([*cells, *[""] * (width - len(cells))])

        for p in sorted(view.points, key=view.call_of) if workload else view.points:
            # (label, variant): a workload's call and its shape facts, a sweep's point; Text,
            # never markup: a workload's group holds a module path (`[...]` in a key)
            head = Text(printable(p.group)) if workload else \
                Text(printable(f"{length_label(p.x)} {p.group}"))
            facts = shape_cells(p.shape) if workload else ()
            if not p.variants:
                row(head, "-", *facts, Text(f"failed: {printable(p.error or '')}", style="red"))
            for v in p.variants:
                if v.status != "ok":
                    row(head, Text(printable(v.name)), *facts,
                        Text(f"failed: {printable(v.error or '')}", style="red"))
                    continue
                share = fmt.share(v.kernel_share_of_peak)
                p50 = Text(p50_cell(v), style="bold red") if noisy(v) else p50_text(v)
                tops = (f"{v.kernel_tops:.3f}", f"{v.e2e_tops:.3f}")
                accuracy = Text(printable(accuracy_text(v.accuracy_brief)))
                row(head, Text(printable(v.name)), *facts, p50, *tops,
                    *((accuracy,) if workload else (share, accuracy)))
        if view.planned > len(view.points):
            what = "calls" if workload else "points"
            row(Text(f"{len(view.points)} of {view.planned} {what}", style="dim"))
        return rows


# the columns a narrow table shortens, in this order (never a workload's call: its module path
# names the row; never the p50: a number and its interval are never cut)
SHORTENED = ("accuracy", "point")
WORKLOAD_SHORTENED = ("accuracy",)


def cell_len(cell: str | Text) -> int:
    return cell.cell_len if isinstance(cell, Text) else Text(cell).cell_len


def fit_columns(rows: list[list[str | Text]], width: int,
                headers: tuple[str, ...] = COLUMNS,
                keys: tuple[str, ...] = COLUMNS) -> list[list[str | Text]]:
    """The rows with the long text columns (accuracy, point; a workload's accuracy) cut to
    fit `width`, each cut cell ending in an ellipsis: the table's header does not
    scroll out of sight. Every cell comes back as Text (never read as markup)."""
    if width <= 0 or not rows:
        return [[Text(c) if isinstance(c, str) else c for c in r] for r in rows]
    widths = [max(len(c), *(cell_len(r[i]) for r in rows)) for i, c in enumerate(headers)]
    room = width - 2 * len(headers) - 2  # each cell's padding, the scrollbar
    order = WORKLOAD_SHORTENED if keys == WORKLOAD_COLUMNS else SHORTENED
    for i in (keys.index(k) for k in order):
        over = sum(widths) - room
        if over <= 0:
            break
        widths[i] = min(widths[i], max(LEAST.get(keys[i], len(headers[i])),
                                       LEAST.get(headers[i], len(headers[i])),
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
