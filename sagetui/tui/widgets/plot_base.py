"""What every plot shares: redraw only when due, a legend under the frame, round-number ticks.

A plotext frame costs tens of milliseconds, so a plot never redraws on its own: `sync` only
hands it the data, and the app's timer calls `redraw_if_due` at most `refresh_hz` times a
second. It redraws only when it is on screen and its data, selection or size changed, from
data reduced to about its width.

The legend is drawn by the widget under plotext's frame, not by plotext inside it: plotext's
legend covers the top rows of the data (one row per series: six rows on a report of five
variants and the SM clock).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.segment import Segment
from rich.text import Text
from textual.app import RenderResult
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual, visualize
from textual_plotext import PlotextPlot

from sagetui.core.format import nice_step
from sagetui.core.run.model import VariantModel
from sagetui.tui.source import Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets import plotext_canvas
from sagetui.tui.widgets.ansi import ansi_lines, ansi_strips

plotext_canvas.install()  # plotext writes each frame's canvas in a third of its own time

AXIS_COLUMNS = 12  # what plotext's y-axis labels and frame take of the width
PLOT_ROWS = 5  # what the title, the x ticks and label and the frame take of the height
INK_DOTS = 1200  # braille dots the lines of one plot may light, all series together


class Ink:
    """About how many dots plotext lights for a line through some points, on a canvas of
    `columns` x `rows` characters (`per` dots a character: braille 2 x 4, `sd` 1 x 1), scaled
    to all the series' data."""

    def __init__(self, series: list[tuple], columns: int, rows: int,
                 per: tuple[int, int] = (2, 4)) -> None:
        xs = [x for _, x, _, _ in series if x.size]
        ys = [a for _, x, lo, hi in series if x.size for a in (lo, hi)]
        self.x0, x1 = (min(float(x.min()) for x in xs), max(float(x.max()) for x in xs)) \
            if xs else (0.0, 1.0)
        self.y0, y1 = (min(float(y.min()) for y in ys), max(float(y.max()) for y in ys)) \
            if ys else (0.0, 1.0)
        self.sx = (per[0] * max(1, columns) - 1) / ((x1 - self.x0) or 1.0)
        self.sy = (per[1] * max(1, rows) - 1) / ((y1 - self.y0) or 1.0)
        # a line that crosses the canvas once costs this much, however it is drawn: always
        # affordable (a few rounds' medians across a wide plot must stay a line)
        self.crossing = per[0] * max(1, columns) + per[1] * max(1, rows)

    def line(self, x: np.ndarray, y: np.ndarray) -> int:
        if x.size < 2:
            return int(x.size)
        cols = np.rint((x - self.x0) * self.sx)
        rows = np.rint((y - self.y0) * self.sy)
        return int(np.maximum(np.abs(np.diff(cols)), np.abs(np.diff(rows))).sum()) + 1

    def affordable(self, dots: int, budget: float) -> bool:
        return dots <= max(budget, self.crossing)


def nice_ticks(lo: float, hi: float, most: int) -> list[float]:
    """Round-number ticks from at or below lo to at or above hi (1, 2, 2.5 or 5 x 10^k apart)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        pad = abs(lo) * 0.01 or 1.0
        lo, hi = lo - pad, hi + pad
    step = nice_step(hi - lo, max(1, most - 1))
    first = math.floor(lo / step + 1e-9) * step
    n = int(math.ceil((hi - first) / step - 1e-9))
    return [first + i * step for i in range(n + 1)]


def int_ticks(lo: int, hi: int, most: int) -> list[int]:
    """Whole-number ticks (rounds, iterations) between lo and hi, 1, 2 or 5 x 10^k apart."""
    if hi <= lo:
        return [lo]
    step = max(1, int(nice_step(hi - lo, max(1, most - 1), steps=(1, 2, 5))))
    first = -(-lo // step) * step
    ticks = list(range(first, hi + 1, step))
    return ticks if ticks and ticks[0] == lo else [lo, *ticks]


def tick_labels(ticks: list[float]) -> list[str]:
    """As many decimals as the step needs, the same for every label."""
    if len(ticks) < 2:
        return [f"{t:g}" for t in ticks]
    step = abs(ticks[1] - ticks[0])
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) if step else 0
    if step and abs(step * 10 ** digits - round(step * 10 ** digits)) > 1e-6:
        digits += 1  # 2.5 x 10^k
    return [f"{t:.{digits}f}" for t in ticks]


@dataclass(frozen=True)
class LegendEntry:
    glyph: str
    label: str
    colour: str  # a hex colour or a rich colour name


class SeriesPlot(PlotextPlot):
    follows_samples = False  # redraw on every batch of iterations, not only per block

    def __init__(self, hide_when_empty: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # beside other panels (the overview): a saved report with nothing to plot hides the
        # plot (and its container, when all of its plots are hidden) instead of a blank frame
        self.hide_when_empty = hide_when_empty
        self._pending: tuple[Source, ViewContext] | None = None
        self._drawn: tuple | None = None
        self.last_redraw = 0.0
        self.redraws = 0
        self.title_text = ""  # what the last redraw said (tests read it)
        self.points = 0  # how many points the last redraw drew
        self.legend: list[LegendEntry] = []
        self._built: tuple[tuple, tuple[str, list[Text]]] | None = None  # (for, frame, legend)
        self._strips: tuple[tuple, list[Strip]] | None = None  # the frame's lines, likewise

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self._pending = (data, ctx)
        if self.hide_when_empty:
            show = data.live or self.has_content(data)
            if self.display != show:
                self.display = show
                parent = self.parent
                if parent is not None and not any(w.display for w in parent.children):
                    parent.styles.display = "none"
                elif parent is not None:
                    parent.styles.clear_rule("display")  # back to the stylesheet's

    def has_content(self, data: Source) -> bool:
        """Whether a saved report gives this plot anything to draw."""
        return True

    def view_key(self) -> tuple:
        """What besides the data changes the picture (a zoom, a cursor)."""
        return ()

    def redraw_if_due(self, min_interval_s: float = 0.0) -> bool:
        """Rebuild the plot if it is visible and anything it shows changed."""
        if self._pending is None or not self.is_on_screen:
            return False
        width, height = self.size
        if width < 10 or height < 4:
            return False
        data, ctx = self._pending
        key = (id(data), data.version, data.sample_version if self.follows_samples else 0,
               ctx, width, height, self.view_key())
        if key == self._drawn:
            return False
        now = time.monotonic()
        if now - self.last_redraw < min_interval_s:
            return False  # the timer catches up on its next tick
        self.plt.clear_figure()
        self.points = 0
        self.legend = []
        self.draw(data, ctx, max(8, width - AXIS_COLUMNS))
        self._drawn = key
        self.last_redraw = now
        self.redraws += 1
        self.refresh()
        return True

    def canvas_rows(self) -> int:
        return max(1, self.size.height - PLOT_ROWS - self.legend_height(self.size.width))

    def legend_lines(self, width: int) -> list[Text]:
        """The legend, wrapped to the width: a coloured glyph and a label per entry."""
        lines, line = [], Text()
        for e in self.legend:
            piece = Text()
            piece.append(e.glyph, style=f"bold {e.colour}")
            piece.append(" " + e.label)
            if line.cell_len and line.cell_len + 3 + piece.cell_len > width:
                lines.append(line)
                line = Text()
            if line.cell_len:
                line.append("   ")
            line.append_text(piece)
        if line.cell_len:
            lines.append(line)
        return lines

    def legend_height(self, width: int) -> int:
        return len(self.legend_lines(width)) if self.legend else 0

    def render(self) -> RenderResult:
        """PlotextPlot.render (textual-plotext 1.0), with plotext's ANSI read by ansi_text,
        and the legend under the frame."""
        frame, legend = self._frame()
        return Text("\n").join(ansi_lines(frame) + legend)

    def _frame(self) -> tuple[str, list[Text]]:
        """plotext's frame (ANSI) and the legend's lines. A tab shown again renders its plots
        again: the frame is built (tens of ms) only after a redraw, a resize or a new theme."""
        width, height = self.size
        key = (width, height, self.redraws, self.app.theme)
        if self._built is not None and self._built[0] == key:
            return self._built[1]
        legend = self.legend_lines(width)[: max(0, height - 6)]
        self._plot.plotsize(width, height - len(legend))
        self._plot._set_size(width, height - len(legend))
        self._plot.theme(self._get_plotext_theme_name(self.app.theme))
        built = self._plot.build()
        self._built = (key, (built[:-1] if legend and built.endswith("\n") else built, legend))
        return self._built[1]

    def render_line(self, y: int) -> Strip:
        """The frame's line y, from the strips of the last frame when the frame, size, theme
        and style are the same. A hidden tab's widgets have size 0, so Textual renders a
        shown tab's plots again (its frame read into strips: 20-35 ms for a full plot, the most
        of a tab switch while a run streams); the frame itself is not rebuilt."""
        width, height = self.size
        style = self.visual_style
        key = (width, height, self.redraws, self.app.theme, style, self.text_selection)
        if self._strips is None or self._strips[0] != key:
            self._strips = (key, self._frame_strips(width, height, style))
        strips = self._strips[1]
        return strips[y] if 0 <= y < len(strips) else Strip.blank(width, style.rich_style)

    def _frame_strips(self, width: int, height: int, style: VisualStyle) -> list[Strip]:
        """The frame's ANSI straight into strips over the widget's style (Textual's own path,
        Visual.to_strips through a Text, cost 40-60 % of a plot's paint), the legend's lines
        after; a selection or a code ansi_text does not read take Textual's own path."""
        frame, legend = self._frame()
        base = style.rich_style
        strips = ansi_strips(frame, base) if self.text_selection is None else None
        if strips is None:
            return Visual.to_strips(self, visualize(self, self.render()), width, height, style)
        strips += [Strip(Segment.apply_style(line.render(self.app.console), base))
                   for line in legend]
        return [s.crop(0, width) if s.cell_length > width else s for s in strips[:height]]

    def draw(self, data: Source, ctx: ViewContext, width: int) -> None:
        raise NotImplementedError

    def set_title(self, text: str) -> None:
        self.title_text = text
        self.plt.title(text)

    def add_legend(self, glyph: str, label: str, colour: str) -> None:
        self.legend.append(LegendEntry(glyph, label, colour))

    def set_yticks(self, lo: float, hi: float, yside: str = "left") -> tuple[float, float]:
        """Round-number y ticks over [lo, hi]; returns the axis limits they span."""
        ticks = nice_ticks(lo, hi, max(2, min(8, self.canvas_rows() // 3)))
        if len(ticks) < 2:
            return lo, hi
        # plotext hints yside as a float; it takes "left" or "right"
        self.plt.yticks(ticks, tick_labels(ticks), yside=yside)  # type: ignore[arg-type]
        # plotext hints yside as a float; it takes "left" or "right"
        self.plt.ylim(ticks[0], ticks[-1], yside=yside)  # type: ignore[arg-type]
        return ticks[0], ticks[-1]

    @staticmethod
    def shown(data: Source) -> list[VariantModel]:
        return data.plotted()

