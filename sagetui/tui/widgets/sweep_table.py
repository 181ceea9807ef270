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


class SweepTable(SteadyTable):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kwargs)
        self._shown: tuple[int, int] | None = None

    def on_mount(self) -> None:
        for col in COLUMNS:
            self.add_column(col, key=col)

    def sync(self, view: SweepView | None) -> None:
        key = (id(view), view.version if view else -1)
        if key == self._shown:
            return
        self._shown = key
        self.clear()
        if view is None:
            self.add_row(Text("no sweep here: run `sagetui sweep --console`, or open a sweep "
                              "report with `sagetui view`", style="dim"), *[""] * 6)
            return
        for p in view.points:
            # Text, never markup: a workload's group holds a module path (`[...]` in a key)
            label = Text(printable(f"{length_label(p.x)} {p.group}"))
            if not p.variants:
                self.add_row(label, "-", Text(f"failed: {printable(p.error or '')}",
                                              style="red"), *[""] * 4)
            for v in p.variants:
                if v.status != "ok":
                    self.add_row(label, Text(printable(v.name)),
                                 Text(f"failed: {printable(v.error or '')}", style="red"),
                                 *[""] * 4)
                    continue
                share = "-" if v.kernel_share_of_peak is None else \
                    f"{100 * v.kernel_share_of_peak:.1f} %"
                p50 = Text(f"{p50_text(v)} !", style="bold red") if noisy(v) else p50_text(v)
                self.add_row(label, Text(printable(v.name)), p50, f"{v.kernel_tops:.3f}",
                             f"{v.e2e_tops:.3f}", share, printable(accuracy_text(v.accuracy)))
        if view.planned > len(view.points):
            self.add_row(Text(f"{len(view.points)} of {view.planned} points", style="dim"),
                         *[""] * 6)
