"""The Sweep tab's body: the plot, a few lines under it that say where one backend overtakes
another (the crossovers, kernel and end to end) and which points are too noisy to trust, and
the table. The Sweep tab (sweep_tab.py) hands it the sweep to show."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from sagetui.core.format import printable
from sagetui.core.sweep.plan import NOISY_CI_PERCENT
from sagetui.tui.sweep_view import SweepView
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.steady_static import SteadyStatic
from sagetui.tui.widgets.sweep_plot import SweepPlot
from sagetui.tui.widgets.sweep_table import NO_SWEEP, SweepTable


class SweepPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield SweepPlot(id="sweep-plot")
        yield SteadyStatic(id="sweep-notes")
        yield SweepTable(id="sweep-table")

    def sync(self, view: SweepView | None, ctx: ViewContext,
             empty: tuple[str, ...] = NO_SWEEP) -> None:
        self.set_class(view is not None and view.workload, "workload")
        self.query_one(SweepTable).sync(view, empty)
        notes = self.query_one("#sweep-notes", SteadyStatic)
        notes.display = view is not None and bool(view.points)
        if view is not None:
            self.query_one(SweepPlot).sync(view, ctx)
            notes.show(notes_text(view, ctx))


def notes_text(view: SweepView, ctx: ViewContext) -> Text:
    """The noisy results first (a warning; the table and the plot mark which), then the
    crossovers, a line per metric and series."""
    out = Text()
    results = [v for p in view.points for v in p.variants if v.status == "ok"]
    noisy = sum(len(names) for _, names in view.noisy())
    if noisy:
        out.append(f"! {noisy} of {len(results)} results noisy: p50 95 % interval wider than "
                   f"±{NOISY_CI_PERCENT:g} % (marked !)\n", style=f"bold {ctx.error_colour}")
    if view.totals:  # a workload's calls: no series to cross
        out.append("Workload (Σ weight x p50) · ", style="bold")
        out.append("\n  ".join(printable(line) for line in view.totals))
        return out
    lines = view.crossover_lines()
    out.append(f"Crossovers as {view.x_axis} grows · ", style="bold")
    if all(line.endswith(": none") for line in lines):
        out.append("none, kernel or end to end")
        return out
    out.append(printable(lines[0]))
    for line in lines[1:]:
        out.append("\n  " + printable(line))
    return out
