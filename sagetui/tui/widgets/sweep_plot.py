"""The Sweep tab's plot: kernel TOPS against the swept length per variant and series, on a
log2 x axis (x plotted as log2 of the length, ticks labelled 1k, 2k ...), each kernel crossover
marked by a vertical line, a noisy point (plan.noisy) by a `!` over its mark; the legend under
the frame. A workload's: p50 per call, the calls on x by index (draw_calls). The crossovers
in words are under the plot (sweep_panel.py). It redraws like every SeriesPlot: at most
refresh_hz times a second, only when on screen and when a point arrived."""

from __future__ import annotations

import math
from typing import Any

from sagetui.core.format import printable
from sagetui.core.sweep.export import length_label
from sagetui.core.sweep.plan import NOISY_CI_PERCENT, noisy
from sagetui.tui.sweep_view import SweepView
from sagetui.tui.themes import rgb
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.plot_base import int_ticks
from sagetui.tui.widgets.plots import SeriesPlot


class SweepPlot(SeriesPlot):
    def sync(self, data: Any, ctx: ViewContext) -> None:
        """Fed a SweepView by the Sweep tab; the app's Source syncs are not for it."""
        if isinstance(data, SweepView):
            # the base class keeps a Source here; this plot draws a SweepView instead
            self._pending = (data, ctx)  # type: ignore[assignment]

    def draw(self, data: Any, ctx: ViewContext, width: int) -> None:
        view: SweepView = data
        if view.workload:
            self.draw_calls(view, ctx)
            return
        plt = self.plt
        series = view.series()
        colour = {n: ctx.series[i % len(ctx.series)] for i, n in enumerate(view.variants)}
        xs = sorted({p.x for p in view.points})
        drawn: dict[str, None] = {}
        for lines in series.values():
            for name, line in lines.items():
                lx = [math.log2(x) for x, _ in line]
                ys = [y for _, y in line]
                c = colour.get(name, ctx.series[0])
                plt.plot(lx, ys, color=rgb(c), marker="braille")
                plt.scatter(lx, ys, color=rgb(c), marker="o")
                drawn[name] = None
                self.points += len(line)
        for name in drawn:  # one entry a variant: its series (head dim, causal) share its colour
            self.add_legend("━o", printable(name), colour.get(name, ctx.series[0]))
        shaky = [(math.log2(p.x), v.kernel_tops) for p in view.points for v in p.variants
                 if v.status == "ok" and v.kernel_tops and noisy(v)]
        if shaky:  # over the point's own mark: drawn last
            plt.scatter([x for x, _ in shaky], [y for _, y in shaky],
                        color=rgb(ctx.error_colour), marker="!")
            self.add_legend("!", f"noisy: p50 95 % interval wider than ±{NOISY_CI_PERCENT:g} %",
                            ctx.error_colour)
        kernel = view.crossovers()
        for x in kernel:
            plt.vline(math.log2(x["x"]), color=rgb(ctx.mark_colour))
        if kernel:
            self.add_legend("│", "kernel crossover (listed below)", ctx.mark_colour)
        if xs:
            plt.xticks([math.log2(x) for x in xs], [length_label(x) for x in xs])
        self.set_title(f"kernel TOPS vs {view.x_axis} (log2)")
        plt.xlabel(f"{view.x_axis} (tokens)")

    def draw_calls(self, view: SweepView, ctx: ViewContext) -> None:
        """A workload's: each variant's p50 per call, the calls on x by their index among the
        program's calls (each call its own shape: no length to order them by), a noisy p50
        marked `!` over its mark."""
        plt = self.plt
        colour = {n: ctx.series[i % len(ctx.series)] for i, n in enumerate(view.variants)}
        for name, line in view.call_series().items():
            c = rgb(colour.get(name, ctx.series[0]))
            xs, ys = [x for x, _ in line], [y for _, y in line]
            plt.plot(xs, ys, color=c, marker="braille")
            plt.scatter(xs, ys, color=c, marker="o")
            self.add_legend("━o", printable(name), colour.get(name, ctx.series[0]))
            self.points += len(line)
        shaky = [(view.call_of(p), v.timing.p50_s * 1e3) for p in view.points
                 for v in p.variants if v.status == "ok" and v.timing and noisy(v)]
        if shaky:  # over the point's own mark: drawn last
            plt.scatter([x for x, _ in shaky], [y for _, y in shaky],
                        color=rgb(ctx.error_colour), marker="!")
            self.add_legend("!", f"noisy: p50 95 % interval wider than ±{NOISY_CI_PERCENT:g} %",
                            ctx.error_colour)
        calls = sorted({view.call_of(p) for p in view.points})
        if calls:
            ticks = int_ticks(calls[0], calls[-1], max(2, self.size.width // 6))
            plt.xticks([float(t) for t in ticks], [str(t) for t in ticks])
        self.set_title("p50 ms per call")
        plt.xlabel("call (its index among the program's calls)")
