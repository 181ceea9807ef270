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
from sagetui.tui.widgets.folded_columns import fold
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.vim_keys import VIM_KEYS

COLUMNS = ("point", "backend", "p50 ms ± CI", "kernel TOPS", "e2e TOPS", "share of peak",
           "accuracy")
# a workload's: a row per call and variant, the call's own shape facts before its p50 (each
# call has its own: no point label says them), in 80 columns
WORKLOAD_COLUMNS = ("call", "variant", "causal", "GQA", "q_len", "kv_len", "p50 ms ± CI",
                    "kernel TOPS", "e2e TOPS", "accuracy")
# the same columns' headers under NARROW columns
SHORT = ("point", "backend", "p50 ± CI", "kTOPS", "e2e", "peak", "accuracy")
NARROW = 120
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

    def on_mount(self) -> None:
        self._set_columns([Text(c) for c in COLUMNS], 1)

    def _set_columns(self, headers: list[Text], header_height: int) -> None:
        """The columns again: their widths from what they hold now (a band's headers a line
        each)."""
        self.clear(columns=True)
        self.header_height = header_height
        for i, col in enumerate(headers):
            self.add_column(col, key=str(i))

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
        # a workload's headers are short already; the columns fold where they do not fit (a
        # workload's call and variant, a sweep's point and backend, name the row), no cell cut
        headers = keys if workload else SHORT if 0 < self.size.width < NARROW else COLUMNS
        folded = fold(headers, self._rows(view, empty), self.size.width, keys=2)
        self._set_columns(folded.headers, folded.header_height)
        for row, height in zip(folded.rows, folded.heights, strict=True):
            self.add_row(*row, height=height)

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
