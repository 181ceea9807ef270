"""The Sweep tab's plot: kernel TOPS against the swept length per variant and series, on a
log2 x axis (x plotted as log2 of the length, ticks labelled 1k, 2k ...), each crossover
marked by a vertical line. It redraws like every SeriesPlot: at most refresh_hz times a second,
only when on screen and when a point arrived."""

from __future__ import annotations

import math
from typing import Any

from sagetui.core.format import printable
from sagetui.core.sweep.export import length_label
from sagetui.tui.sweep_view import SweepView
from sagetui.tui.themes import rgb
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.plots import SeriesPlot


class SweepPlot(SeriesPlot):
    def sync(self, data: Any, ctx: ViewContext) -> None:
        """Fed a SweepView by the Sweep tab; the app's Source syncs are not for it."""
        if isinstance(data, SweepView):
            # the base class keeps a Source here; this plot draws a SweepView instead
            self._pending = (data, ctx)  # type: ignore[assignment]

    def draw(self, data: Any, ctx: ViewContext, width: int) -> None:
        view: SweepView = data
        plt = self.plt
        series = view.series()
        colour = {n: ctx.series[i % len(ctx.series)] for i, n in enumerate(view.variants)}
        xs = sorted({p.x for p in view.points})
        for group, lines in series.items():
            for name, line in lines.items():
                lx = [math.log2(x) for x, _ in line]
                ys = [y for _, y in line]
                c = rgb(colour.get(name, ctx.series[0]))
                label = printable(f"{name} {group}" if len(series) > 1 else name)
                plt.plot(lx, ys, color=c, label=label, marker="braille")
                plt.scatter(lx, ys, color=c, marker="o")
                self.points += len(line)
        for x in view.crossovers():
            plt.vline(math.log2(x["x"]), color=rgb(ctx.mark_colour))
        if xs:
            plt.xticks([math.log2(x) for x in xs], [length_label(x) for x in xs])
        crosses = "; ".join(f"{c['after']} > {c['before']} from ~{length_label(c['x'])}"
                            for c in view.crossovers())
        e2e = "; ".join(f"{c['after']} > {c['before']} from ~{length_label(c['x'])}"
                        for c in view.crossovers("e2e_tops"))
        crosses += (" · " if crosses and e2e else "") + (f"end to end: {e2e}" if e2e else "")
        self.set_title(printable(f"kernel TOPS vs {view.x_axis} (log2)"
                                 + (f" · crossover: {crosses}" if crosses else "")))
        plt.xlabel(view.x_axis)
