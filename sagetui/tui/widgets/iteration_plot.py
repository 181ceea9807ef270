"""Every iteration's latency (with a keyboard cursor and zoom), or its distribution.

Keys while the plot has the focus: left/right (h/l) move the cursor and read every variant's
latency there; + and - zoom in and out around it; 0 shows everything again; d cycles the
view: lines, histogram, CDF (the distribution of per-iteration latency per variant). The
Iterations tab lists them under the plot (KEYS_HINT).

Beyond the plot's width, each block of samples is drawn as its min and max (a vertical
stroke), so that no spike is decimated away. plotext draws a line dot by dot in Python (about
5 us a braille dot), so each series is drawn the cheapest way that stays within its share of
INK_DOTS: strokes (or, undecimated, one braille line) when they are few; else the envelope's
floor and ceiling as two lines (a band); else one line at character resolution (a quarter of
braille's dots a row); as a last resort the min and max of each block as dots.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from textual.binding import Binding

from sagetui.core.format import ms, printable
from sagetui.core.run.model import VariantModel
from sagetui.tui.source import Source
from sagetui.tui.themes import rgb
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.distribution import draw_distribution
from sagetui.tui.widgets.plot_base import INK_DOTS, PLOT_ROWS, Ink, SeriesPlot, int_ticks

MODES = ("lines", "histogram", "CDF")
# the keys, listed under the Iterations tab's plot rather than in the footer: a footer whose
# keys change with the focus is rebuilt (~20 widgets) on every switch to and from this tab
KEYS_HINT = "←/→ or h/l cursor · + zoom in · - zoom out · 0 all · d lines / histogram / CDF"


class IterationPlot(SeriesPlot):
    follows_samples = True
    can_focus = True
    BINDINGS = [
        Binding("left,h", "cursor(-1)", "Cursor", show=False),
        Binding("right,l", "cursor(1)", "Cursor", show=False),
        Binding("plus,equals_sign", "zoom(0.5)", "Zoom in", show=False),
        Binding("minus", "zoom(2.0)", "Zoom out", show=False),
        Binding("0", "zoom(0)", "All", show=False),
        Binding("d", "next_mode", "Lines/hist/CDF", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mode = MODES[0]
        self.cursor: int | None = None  # a sample index (0-based), None: no cursor
        self.window: tuple[int, int] | None = None  # samples shown [start, stop), None: all
        self.readout = ""  # what the cursor reads (tests read it)

    def has_content(self, data: Source) -> bool:
        return any(len(data.totals(v)) or data.round_points(v) for v in self.shown(data))

    def view_key(self) -> tuple:
        return (self.mode, self.cursor, self.window)

    # -- keys -------------------------------------------------------------------------------
    def _extent(self) -> int:
        if self._pending is None:
            return 0
        data = self._pending[0]
        return max((len(data.totals(v)) for v in self.shown(data)), default=0)

    def _bounds(self) -> tuple[int, int]:
        return self.window or (0, self._extent())

    def action_cursor(self, direction: int) -> None:
        n = self._extent()
        if not n:
            return
        start, stop = self._bounds()
        step = max(1, (stop - start) // max(1, self.size.width - 12))
        at = self.cursor if self.cursor is not None else (start + stop) // 2 - direction * step
        self.cursor = min(n - 1, max(0, at + direction * step))
        if not start <= self.cursor < stop:  # follow the cursor out of the zoomed window
            shift = self.cursor - (start if self.cursor < start else stop - 1)
            self.window = (start + shift, stop + shift)
        self.redraw_if_due()

    def action_zoom(self, factor: float) -> None:
        n = self._extent()
        if not n or factor == 0:
            self.window = None
            self.redraw_if_due()
            return
        start, stop = self._bounds()
        centre = self.cursor if self.cursor is not None else (start + stop) // 2
        half = max(4, int((stop - start) * factor / 2))
        lo, hi = max(0, centre - half), min(n, centre + half)
        self.window = None if lo == 0 and hi == n else (lo, hi)
        self.redraw_if_due()

    def action_next_mode(self) -> None:
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        self.redraw_if_due()

    # -- drawing ----------------------------------------------------------------------------
    def draw(self, data: Source, ctx: ViewContext, width: int) -> None:
        shown = [v for v in self.shown(data) if len(data.totals(v))]
        if shown and self.mode != "lines":
            draw_distribution(self, data, ctx, shown, width, cdf=self.mode == "CDF")
            return
        self.readout = ""
        if not shown:
            self._no_samples(data, ctx)
            return
        self._lines(data, ctx, shown, width)

    def _lines(self, data: Source, ctx: ViewContext, shown: list[VariantModel],
               width: int) -> None:
        plt = self.plt
        total, block = 0, 1
        start, stop = self.window or (0, max(len(data.totals(v)) for v in shown))
        series = []
        for v in shown:
            totals = data.totals(v)
            x, lo, hi = totals.envelope_range(start, stop, width)
            total += len(totals)
            if x.size > 1 and np.any(lo != hi):
                block = max(block, int(x[1] - x[0]))
            series.append((v, x + 1, lo * 1e3, hi * 1e3))  # iterations count from 1
        rows = max(1, self.size.height - PLOT_ROWS - 2)
        ink = Ink(series, width, rows)
        coarse = Ink(series, width, rows, per=(2, 2))
        budget = INK_DOTS / len(series)
        for v, x, lo, hi in series:
            colour = rgb(ctx.colour(data, v.name))
            decimated = bool(x.size) and bool(np.any(lo != hi))
            xs, ys = (np.repeat(x, 2), np.column_stack((lo, hi)).ravel()) if decimated \
                else (x, lo)
            if ink.affordable(ink.line(xs, ys), budget):  # strokes, or the samples' own line
                plt.plot(xs.tolist(), ys.tolist(), color=colour, marker="braille")
                self.points += int(xs.size)
            elif decimated and ink.line(x, lo) + ink.line(x, hi) <= budget:  # a band
                plt.plot(x.tolist(), hi.tolist(), color=colour, marker="braille")
                plt.plot(x.tolist(), lo.tolist(), color=colour, marker="braille")
                self.points += 2 * int(x.size)
            elif coarse.line(xs, ys) <= budget:  # one line, at half of braille's rows
                plt.plot(xs.tolist(), ys.tolist(), color=colour, marker="hd")
                self.points += int(xs.size)
            else:  # dots: at most two a block
                plt.scatter(xs.tolist(), ys.tolist(), color=colour, marker="braille")
                self.points += int(xs.size)
            self.add_legend("━", printable(v.name), ctx.colour(data, v.name))
        lo_all = min(float(lo.min()) for _, x, lo, _ in series if x.size)
        hi_all = max(float(hi.max()) for _, x, _, hi in series if x.size)
        self.set_yticks(lo_all, hi_all)
        plt.xlim(start + 1, max(start + 2, stop))
        # plotext hints ticks as floats; whole-number ticks are ints
        plt.xticks(int_ticks(start + 1, max(start + 2, stop), max(2, width // 10)))  # type: ignore[arg-type]
        round_start = shown[0].total.starts()
        if 1 < len(round_start) <= 30:
            for s in round_start[1:]:
                if start <= s < stop:
                    plt.vline(s + 1, color="gray")
        self._cursor_readout(data, shown)
        title = f"Per-iteration latency, ms · {total} samples"
        if block > 1:
            title += f" · min/max of {block}"
        if self.window:
            title += f" · zoom {start + 1}-{stop}"
        if len(round_start) > 1:
            title += " · | round start"
        self.set_title(title)
        plt.xlabel("iteration (d: histogram/CDF, ←→ cursor, +/- zoom)")

    def _cursor_readout(self, data: Source, shown: list[VariantModel]) -> None:
        self.readout = ""
        if self.cursor is None:
            return
        i = self.cursor
        self.plt.vline(i + 1, color="white")
        parts = [f"{printable(v.name)} {ms(float(data.totals(v).values.view[i]))} ms"
                 for v in shown if i < len(data.totals(v))]
        self.readout = f"iteration {i + 1}: " + " · ".join(parts)
        self.add_legend("│", self.readout, "white")

    def _no_samples(self, data: Source, ctx: ViewContext) -> None:
        plt = self.plt
        if self._round_ranges(data, ctx):
            plt.xlabel("round")
            self.set_title("No raw samples in this report: each round's min-max, o its p50 "
                           "(ms)")
            return
        self.set_title("Per-iteration latency: raw samples are not in this report"
                       if not data.live else "Per-iteration latency, ms: waiting for samples")
        plt.xlabel("iteration")

    def _round_ranges(self, data: Source, ctx: ViewContext) -> bool:
        """The two-build report keeps per-round summaries only: show each round's spread."""
        plt, drawn = self.plt, False
        variants = [(v, pts) for v in self.shown(data) if (pts := data.round_points(v))]
        for k, (v, points) in enumerate(variants):
            colour = rgb(ctx.colour(data, v.name))
            offset = (k - (len(variants) - 1) / 2) * 0.08  # side by side, not on top
            xs, ys = [], []
            for p in points:
                if p.min_s is not None and p.max_s is not None:
                    xs += [p.round + 1 + offset] * 2
                    ys += [p.min_s * 1e3, p.max_s * 1e3]
            plt.plot(xs, ys, color=colour, marker="braille")
            self.points += len(xs)
            plt.scatter([p.round + 1 + offset for p in points],
                        [p.median_s * 1e3 for p in points], color=colour, marker="o")
            self.add_legend("┃o", printable(v.name), ctx.colour(data, v.name))
            drawn = True
        if drawn:
            ys = [y for _, points in variants for p in points
                  for y in (p.min_s, p.max_s, p.median_s) if y is not None]
            self.set_yticks(min(ys) * 1e3, max(ys) * 1e3)
            plt.xticks([p.round + 1 for p in variants[0][1]])
        return drawn
