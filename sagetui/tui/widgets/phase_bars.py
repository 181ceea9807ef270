"""Phase p50 bars (to be replaced by the phase view)."""

from __future__ import annotations

from ..formatting import printable, short_phase
from ..run_data import RunData
from ..themes import rgb
from ..view_context import ViewContext
from .plot_base import SeriesPlot


class PhaseBars(SeriesPlot):
    """p50 per leaf phase, one bar per shown variant (or the report's phases)."""

    def draw(self, data: RunData, ctx: ViewContext, width: int) -> None:
        plt = self.plt
        series: list[tuple[str, str, dict[str, float]]] = []
        names = [v.name for v in self.shown(data)] or [None]
        for name in names:
            whose, rows = data.phase_rows(name)
            if not rows:
                continue
            parents = {r.name for i, r in enumerate(rows)
                       if i + 1 < len(rows) and rows[i + 1].depth > r.depth}
            values = {r.name: r.p50_s * 1e3 for r in rows
                      if r.name not in parents and r.p50_s is not None}
            colour = ctx.colour(data, name) if name else ctx.series[0]
            if values and (whose, colour) not in [(s[0], s[1]) for s in series]:
                series.append((whose, colour, values))
        if not series:
            self.set_title("Phase p50: no phase timings yet" if data.live else
                      "Phase p50: no phase timings in this report")
            return
        phases = list(dict.fromkeys(p for _, _, vals in series for p in vals))
        # plotext draws horizontal bars bottom-up: reversed, the first phase is on top
        phases.reverse()
        labels = [short_phase(p) for p in phases]
        if len(series) > 1 and self.size.height - 6 < 2 * len(phases) * len(series):
            # too short for one bar per variant and phase: the selected variant only
            pick = [s for s in series if s[0] == ctx.selected] or series[:1]
            series = pick
        if len(series) == 1:
            whose, colour, values = series[0]
            plt.bar(labels, [values.get(p, 0.0) for p in phases], color=rgb(colour),
                    orientation="h", width=0.6)
            self.points = len(phases)
            self.set_title(f"Phase p50, ms · {printable(whose)} (leaf phases)")
        else:
            plt.multiple_bar(labels, [[vals.get(p, 0.0) for p in phases] for _, _, vals in series],
                             labels=[printable(w) for w, _, _ in series],
                             color=[rgb(c) for _, c, _ in series], orientation="h", width=0.8)
            self.points = len(phases) * len(series)
            self.set_title("Phase p50, ms (leaf phases)")
