"""Live plots (textual-plotext): round medians (drift) here; the per-iteration latency and its
distribution in iteration_plot.py. What all plots share is plot_base.py's."""

from __future__ import annotations

import numpy as np

from sagetui.core.format import pct, printable
from sagetui.tui.series import stride
from sagetui.tui.source import Source
from sagetui.tui.themes import rgb
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.iteration_plot import IterationPlot
from sagetui.tui.widgets.plot_base import (
    INK_DOTS,
    PLOT_ROWS,
    Ink,
    SeriesPlot,
    int_ticks,
    nice_ticks,
    tick_labels,
)

__all__ = ["IterationPlot", "RoundPlot", "SeriesPlot"]


class RoundPlot(SeriesPlot):
    """Per-round medians per variant: drift at a glance, and the SM clock on the right axis
    when telemetry was recorded. Throttled rounds are marked on a row of their own under the
    lines: on an H200 every round is power-capped, and a mark on every point would hide the
    points."""

    def has_content(self, data: Source) -> bool:
        return any(data.round_points(v) for v in self.shown(data))

    def draw(self, data: Source, ctx: ViewContext, width: int) -> None:
        plt = self.plt
        flagged, plotted = [], set()
        telemetry = data.has_gpu_telemetry()  # throttle marks and clocks need some
        series = []
        for v in self.shown(data):
            pts = data.round_points(v)
            if pts:
                idx, _ = stride(np.arange(len(pts)), width)
                pts = [pts[i] for i in idx]
                x = np.array([p.round + 1 for p in pts], dtype=np.float64)
                y = np.array([p.median_s * 1e3 for p in pts])
                series.append((v, pts, x, y))
        rows = max(1, self.size.height - PLOT_ROWS - 2)
        throttled: dict[int, set[str]] = {}
        if series:
            ink = Ink([(v, x, y, y) for v, _, x, y in series], width, rows)
            budget = INK_DOTS / len(series)
        for v, _, x_arr, y_arr in series:
            x, y = x_arr.astype(int).tolist(), y_arr.tolist()
            plotted.update(x)
            colour = rgb(ctx.colour(data, v.name))
            drift = v.drift or {}
            label = printable(v.name)
            if drift.get("slope_percent_per_round") is not None:
                label += f" {pct(drift['slope_percent_per_round'])}%/rnd"
            if drift.get("flagged"):
                label += " DRIFT"
                flagged.append(v.name)
            if ink.affordable(ink.line(x_arr, y_arr), budget):
                plt.plot(x, y, color=colour, marker="braille")
                plt.scatter(x, y, color=colour, marker="o")
                self.add_legend("━o", label, ctx.colour(data, v.name))
            else:  # many noisy rounds: the line would cost more than it shows; points alone
                plt.scatter(x, y, color=colour, marker="o")
                self.add_legend("o", label, ctx.colour(data, v.name))
            self.points += len(x)
            for r, reasons in (data.throttled_rounds(v) if telemetry else {}).items():
                throttled.setdefault(r + 1, set()).update(reasons)
        if series:
            lo = min(float(y.min()) for *_, y in series)
            hi = max(float(y.max()) for *_, y in series)
            y0, y1 = self.set_yticks(lo, hi)
            if throttled:  # one row under the lowest tick holds the marks
                row = (y1 - y0) / max(1, rows)
                plt.ylim(y0 - 1.5 * row, y1)
                xs = sorted(r for r in throttled if r in plotted)
                plt.scatter(xs, [y0 - 1.5 * row] * len(xs), color=rgb(ctx.mark_colour),
                            marker="x")
        self._clocks(data, ctx, width, telemetry)
        if plotted:  # whole-number ticks among the rounds drawn
            # plotext hints ticks as floats; whole-number ticks are ints
            plt.xticks(int_ticks(min(plotted), max(plotted), max(2, width // 8)))  # type: ignore[arg-type]
        if throttled:
            reasons = sorted(set().union(*throttled.values()))
            every = " (every round)" if set(throttled) >= plotted else ""
            self.add_legend("x", f"throttled round{every}: {', '.join(reasons)}",
                            ctx.mark_colour)
        title = "Round medians, ms"
        if not plotted:
            title += ": no rounds in this report" if not data.live else ": no rounds yet"
        elif flagged:
            title += f" · drift flagged: {printable(', '.join(flagged))}"
        else:
            title += " · no drift flagged"
        self.set_title(title)
        plt.xlabel("round")

    def _clocks(self, data: Source, ctx: ViewContext, width: int, telemetry: bool) -> None:
        """The GPU's SM clock beside the medians: drift explained, not just seen."""
        means = [(r + 1, (t.get("sm_clock_mhz") or {}).get("mean"))
                 for r, t in data.gpu_telemetry().items() if t.get("available")] \
            if telemetry else []
        clocks: list[tuple[int, float]] = [(r, float(c)) for r, c in means if c is not None]
        if not clocks:
            return
        lo, hi = min(c for _, c in clocks), max(c for _, c in clocks)
        pad = max(10.0, (hi - lo) * 0.1)
        idx, _ = stride(np.arange(len(clocks)), width)
        clocks = [clocks[i] for i in idx]
        self.plt.plot([r for r, _ in clocks], [c for _, c in clocks], yside="right",
                      color="gray", marker="braille")
        ticks = nice_ticks(lo - pad, hi + pad, max(2, min(8, self.canvas_rows() // 3)))
        # plotext hints yside as a float; it takes "left" or "right"
        self.plt.yticks(ticks, tick_labels(ticks), yside="right")  # type: ignore[arg-type]
        # plotext hints yside as a float; it takes "left" or "right"
        self.plt.ylim(ticks[0], ticks[-1], yside="right")  # type: ignore[arg-type]
        self.add_legend("━", "SM clock, MHz (right axis)", "grey50")
