"""The Sweep tab's table: a row per point and variant (p50 ± CI, kernel and end-to-end TOPS,
share of peak, accuracy); failed points and variants say why, a noisy point's p50 ends in `!`
(plan.noisy: its interval wider than ±10 %). A workload's: a row per call and variant, by
call, with the call's causal, GQA and lengths."""

from __future__ import annotations

from typing import Any

from rich.text import Text

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


def shape_cells(shape: Shape) -> tuple[str, str, str, str]:
    """A call's causal, GQA (q heads/kv heads, or no), q_len and kv_len cells."""
    gqa = f"{shape.heads}/{shape.n_kv_heads}" if shape.n_kv_heads != shape.heads else "no"
    return ("yes" if shape.causal else "no", gqa, str(shape.q_len), str(shape.n_kv_len))


class SweepTable(SteadyTable):
    BINDINGS = VIM_KEYS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kwargs)
        self._shown: tuple[int, int] | None = None
        self._columns: tuple[str, ...] = ()

    def on_mount(self) -> None:
        self._set_columns(COLUMNS)

    def _set_columns(self, columns: tuple[str, ...]) -> None:
        if columns == self._columns:
            return
        self.clear(columns=True)
        for col in columns:
            self.add_column(col, key=col)
        self._columns = columns

    def sync(self, view: SweepView | None) -> None:
        key = (id(view), view.version if view else -1)
        if key == self._shown:
            return
        self._shown = key
        workload = view is not None and view.workload
        self._set_columns(WORKLOAD_COLUMNS if workload else COLUMNS)
        self.clear()
        if view is None:
            self.add_row(Text("no sweep here: run `sagetui sweep --console`, or open a sweep "
                              "report with `sagetui view`", style="dim"), *[""] * 6)
            return

        def row(*cells: Any) -> None:
            self.add_row(*cells, *[""] * (len(self._columns) - len(cells)))

        for p in sorted(view.points, key=view.call_of) if workload else view.points:
            # (label, variant): a workload's call and its shape facts, a sweep's point; Text,
            # never markup: a workload's group holds a module path (`[...]` in a key)
            head: tuple[Any, ...] = (Text(printable(p.group)),) if workload else \
                (Text(printable(f"{length_label(p.x)} {p.group}")),)
            facts = shape_cells(p.shape) if workload else ()
            if not p.variants:
                row(*head, "-", *facts, Text(f"failed: {printable(p.error or '')}", style="red"))
            for v in p.variants:
                if v.status != "ok":
                    row(*head, Text(printable(v.name)), *facts,
                        Text(f"failed: {printable(v.error or '')}", style="red"))
                    continue
                share = "-" if v.kernel_share_of_peak is None else \
                    f"{100 * v.kernel_share_of_peak:.1f} %"
                p50 = Text(p50_cell(v), style="bold red") if noisy(v) else p50_text(v)
                tops = (f"{v.kernel_tops:.3f}", f"{v.e2e_tops:.3f}")
                accuracy = printable(accuracy_text(v.accuracy))
                row(*head, Text(printable(v.name)), *facts, p50, *tops,
                    *((accuracy,) if workload else (share, accuracy)))
        if view.planned > len(view.points):
            what = "calls" if workload else "points"
            row(Text(f"{len(view.points)} of {view.planned} {what}", style="dim"))
