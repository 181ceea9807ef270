"""Live plots (textual-plotext): round medians (drift), per-iteration latency, phase bars.

A plotext frame costs tens of milliseconds, so a plot never redraws on its own: `sync` only
hands it the data, and the app's timer calls `redraw_if_due` at most `refresh_hz` times a
second. It redraws only when it is on screen and its data, selection or size changed, from
data reduced to about its width (a min/max pyramid for samples, a stride for rounds).
"""

from __future__ import annotations

import functools
import re
import time

import numpy as np
from rich.color import Color
from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from ..formatting import printable, short_phase
from ..run_data import RunData, VariantView
from ..series import stride
from ..themes import rgb
from ..view_context import ViewContext

AXIS_COLUMNS = 12  # what plotext's y-axis labels and frame take of the width
PLOT_ROWS = 5  # what the title, the x ticks and label and the frame take of the height
INK_DOTS = 1200  # braille dots the iteration plot's lines may light, all series together


class _Ink:
    """About how many braille dots plotext lights for a line through some points, on a canvas
    of `columns` x `rows` characters (2 x 4 dots each) scaled to all the series' data."""

    def __init__(self, series: list[tuple], columns: int, rows: int) -> None:
        xs = [x for _, x, _, _ in series if x.size]
        ys = [a for _, x, lo, hi in series if x.size for a in (lo, hi)]
        self.x0, x1 = (min(float(x.min()) for x in xs), max(float(x.max()) for x in xs)) \
            if xs else (0.0, 1.0)
        self.y0, y1 = (min(float(y.min()) for y in ys), max(float(y.max()) for y in ys)) \
            if ys else (0.0, 1.0)
        self.sx = (2 * max(1, columns) - 1) / ((x1 - self.x0) or 1.0)
        self.sy = (4 * max(1, rows) - 1) / ((y1 - self.y0) or 1.0)

    def line(self, x: np.ndarray, y: np.ndarray) -> int:
        if x.size < 2:
            return int(x.size)
        cols = np.rint((x - self.x0) * self.sx)
        rows = np.rint((y - self.y0) * self.sy)
        return int(np.maximum(np.abs(np.diff(cols)), np.abs(np.diff(rows))).sum()) + 1


_SGR = re.compile("\x1b\\[([0-9;]*)m")
_LINES: dict[tuple[Style, str], tuple[Text, Style]] = {}  # ansi_text's lines seen lately


@functools.lru_cache(maxsize=4096)
def _after_sgr(style: Style, codes: str) -> Style | None:
    """The style after one SGR sequence as rich's AnsiDecoder makes it, for those plotext
    writes (reset, 24-bit foreground, 24-bit background); None for any other."""
    if codes in ("", "0"):
        return Style.null()
    parts = codes.split(";")
    if len(parts) != 5 or parts[0] not in ("38", "48") or parts[1] != "2" \
            or not all(p.isdigit() for p in parts[2:]):
        return None
    colour = Color.from_rgb(*(min(255, int(p)) for p in parts[2:]))
    return style + (Style.from_color(colour) if parts[0] == "38" else
                    Style.from_color(None, colour))


def _ansi_line(style: Style, line: str) -> tuple[Text, Style] | None:
    key = (style, line)
    hit = _LINES.get(key)
    if hit is not None:
        return hit
    text, pos, start = Text(), 0, style
    for m in _SGR.finditer(line):
        if m.start() > pos:
            text.append(line[pos: m.start()], style or None)
        after = _after_sgr(style, m.group(1))
        if after is None:
            return None
        style, pos = after, m.end()
    if pos < len(line):
        text.append(line[pos:], style or None)
    if "\x1b" in text.plain or "\r" in text.plain:
        return None
    if len(_LINES) > 1024:  # a few frames of every plot; more would only burden the GC
        _LINES.clear()
    _LINES[(start, line)] = (text, style)
    return text, style


def ansi_text(ansi: str) -> Text:
    """What Text.from_ansi(ansi) gives, for plotext's output, in a third of the time: rich
    decodes every escape of every redraw (2,000 in a 120x40 plot: 10 ms); here the few kinds
    plotext writes are read by a cached table, and a line seen lately (the frame, the axes,
    empty rows) is not read again. Anything else goes to Text.from_ansi."""
    lines, style = [], Style.null()
    for line in ansi.split("\n"):
        got = _ansi_line(style, line)
        if got is None:
            return Text.from_ansi(ansi)
        text, style = got
        lines.append(text)
    return Text("\n").join(lines)


class SeriesPlot(PlotextPlot):
    follows_samples = False  # redraw on every batch of iterations, not only per block

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._pending: tuple[RunData, ViewContext] | None = None
        self._drawn: tuple | None = None
        self.last_redraw = 0.0
        self.redraws = 0
        self.title_text = ""  # what the last redraw said (tests read it)
        self.points = 0  # how many points the last redraw drew

    def sync(self, data: RunData, ctx: ViewContext) -> None:
        self._pending = (data, ctx)

    def redraw_if_due(self, min_interval_s: float = 0.0) -> bool:
        """Rebuild the plot if it is visible and anything it shows changed."""
        if self._pending is None or not self.is_on_screen:
            return False
        width, height = self.size
        if width < 10 or height < 4:
            return False
        data, ctx = self._pending
        key = (id(data), data.version, data.sample_version if self.follows_samples else 0,
               ctx, width, height)
        if key == self._drawn:
            return False
        now = time.monotonic()
        if now - self.last_redraw < min_interval_s:
            return False  # the timer catches up on its next tick
        self.plt.clear_figure()
        self.points = 0
        self.draw(data, ctx, max(8, width - AXIS_COLUMNS))
        self._drawn = key
        self.last_redraw = now
        self.redraws += 1
        self.refresh()
        return True

    def render(self) -> RenderResult:
        """PlotextPlot.render (textual-plotext 1.0), with plotext's ANSI read by ansi_text."""
        self._plot.plotsize(self.size.width, self.size.height)
        self._plot._set_size(self.size.width, self.size.height)
        self._plot.theme(self._get_plotext_theme_name(self.app.theme))
        return ansi_text(self._plot.build())

    def draw(self, data: RunData, ctx: ViewContext, width: int) -> None:
        raise NotImplementedError

    def set_title(self, text: str) -> None:
        self.title_text = text
        self.plt.title(text)

    @staticmethod
    def shown(data: RunData) -> list[VariantView]:
        return [v for v in data.variants.values() if v.enabled]


class RoundPlot(SeriesPlot):
    """Per-round medians per variant: drift at a glance, throttled rounds marked, and the SM
    clock on the right axis when telemetry was recorded."""

    def draw(self, data: RunData, ctx: ViewContext, width: int) -> None:
        plt = self.plt
        flagged, throttled_any, plotted = [], False, set()
        telemetry = data.has_gpu_telemetry()  # throttle marks and clocks need some
        series = []
        for v in self.shown(data):
            pts = v.round_points()  # cached: a long run's rounds are not walked per redraw
            if pts:
                idx, _ = stride(np.arange(len(pts)), width)
                pts = [pts[i] for i in idx]
                x = np.array([p.round + 1 for p in pts], dtype=np.float64)
                y = np.array([p.median_s * 1e3 for p in pts])
                series.append((v, pts, x, y))
        if series:
            ink = _Ink([(v, x, y, y) for v, _, x, y in series], width,
                       self.size.height - PLOT_ROWS)
            budget = INK_DOTS / len(series)
        for v, pts, x_arr, y_arr in series:
            x, y = x_arr.astype(int).tolist(), y_arr.tolist()
            plotted.update(x)
            colour = rgb(ctx.colour(data, v.name))
            drift = v.drift or {}
            label = printable(v.name)
            if drift.get("slope_percent_per_round") is not None:
                label += f" {drift['slope_percent_per_round']:+.2f}%/rnd"
            if drift.get("flagged"):
                label += " DRIFT"
                flagged.append(v.name)
            if ink.line(x_arr, y_arr) <= budget:
                plt.plot(x, y, color=colour, label=label, marker="braille")
                plt.scatter(x, y, color=colour, marker="o")
            else:  # many noisy rounds: the line would cost more than it shows; points alone
                plt.scatter(x, y, color=colour, label=label, marker="o")
            self.points += len(x)
            throttled = v.throttled_rounds() if telemetry else {}
            if throttled:
                throttled_any = True
                by_round = {p.round: p.median_s * 1e3 for p in pts}
                xs = [r + 1 for r in throttled if r in by_round]
                plt.scatter(xs, [by_round[r - 1] for r in xs], color=rgb(ctx.mark_colour),
                            marker="x")
        clocks = [(r + 1, (t.get("sm_clock_mhz") or {}).get("mean"))
                  for r, t in data.gpu_telemetry().items() if t.get("available")] \
            if telemetry else []
        clocks = [(r, c) for r, c in clocks if c is not None]
        if clocks:  # the GPU's SM clock beside the medians: drift explained, not just seen
            lo, hi = min(c for _, c in clocks), max(c for _, c in clocks)
            pad = max(10.0, (hi - lo) * 0.1)
            idx, _ = stride(np.arange(len(clocks)), width)
            clocks = [clocks[i] for i in idx]
            plt.plot([r for r, _ in clocks], [c for _, c in clocks], yside="right",
                     color="gray", marker="dot", label="SM MHz (right axis)")
            plt.ylim(lo - pad, hi + pad, yside="right")
        if plotted:  # ticks among the rounds drawn (all of them up to the plot's width)
            plt.xticks(_ticks(sorted(plotted), max(2, width // 6)))
        title = "Round medians, ms"
        if not plotted:
            title += ": no rounds in this report" if not data.live else ": no rounds yet"
        elif flagged:
            title += f" · drift flagged: {printable(', '.join(flagged))}"
        else:
            title += " · no drift flagged"
        if throttled_any:
            title += " · x: throttled round"
        self.set_title(title)
        plt.xlabel("round")


def _ticks(values: list[int], most: int) -> list[int]:
    """Whole-number ticks (rounds), at most `most` of them."""
    step = max(1, -(-len(values) // most))
    return values[::step]


class IterationPlot(SeriesPlot):
    """Every iteration's latency; beyond the plot's width, the min and max of each block of
    samples (a vertical stroke), so that no spike is decimated away.

    plotext draws a line dot by dot in Python (about 5 us a braille dot), and strokes from
    each block's min to its max and on to the next block's min light thousands of dots: a
    redraw would take 100+ ms. So each series is drawn the cheapest way that stays within its
    share of INK_DOTS: as strokes (or, undecimated, one line) when they are few; else the
    envelope's floor and ceiling as two lines (a band: every block's min and max still drawn);
    else, as a last resort, the min and max of each block as dots."""

    follows_samples = True

    def draw(self, data: RunData, ctx: ViewContext, width: int) -> None:
        plt = self.plt
        total, block = 0, 1
        shown = [v for v in self.shown(data) if v.has_samples()]
        series = []
        for v in shown:
            x, lo, hi = v.totals.envelope(width)
            total += len(v.totals)
            if x.size > 1 and np.any(lo != hi):
                block = max(block, int(x[1] - x[0]))
            series.append((v, x, lo * 1e3, hi * 1e3))
        if series:
            ink = _Ink(series, width, self.size.height - PLOT_ROWS)
            budget = INK_DOTS / len(series)
        for v, x, lo, hi in series:
            colour = rgb(ctx.colour(data, v.name))
            label = printable(v.name)
            decimated = bool(x.size) and bool(np.any(lo != hi))
            if decimated:
                xs, ys = np.repeat(x, 2), np.column_stack((lo, hi)).ravel()
            else:
                xs, ys = x, lo
            if ink.line(xs, ys) <= budget:  # strokes, or the samples' own line
                plt.plot(xs.tolist(), ys.tolist(), color=colour, label=label, marker="braille")
                self.points += int(xs.size)
            elif decimated and ink.line(x, lo) + ink.line(x, hi) <= budget:  # a band
                plt.plot(x.tolist(), hi.tolist(), color=colour, label=label, marker="braille")
                plt.plot(x.tolist(), lo.tolist(), color=colour, marker="braille")
                self.points += 2 * int(x.size)
            else:  # dots: at most two a block
                plt.scatter(xs.tolist(), ys.tolist(), color=colour, label=label,
                            marker="braille")
                self.points += int(xs.size)
        if shown:
            round_start = shown[0].total.round_start
            if 1 < len(round_start) <= 30:
                for s in sorted(round_start.values())[1:]:
                    plt.vline(s, color="gray")
        if not shown and self._round_ranges(data, ctx):
            title = "No raw samples in this report: each round's min-max, o its p50 (ms)"
            plt.xlabel("round")
            self.set_title(title)
            return
        if not shown:
            title = ("Per-iteration latency: raw samples are not in this report"
                     if not data.live else "Per-iteration latency, ms: waiting for samples")
        else:
            title = f"Per-iteration latency, ms · {total} samples"
            if block > 1:
                title += f" · min/max of {block}"
            if len(shown) and len(shown[0].total.round_start) > 1:
                title += " · | round start"
        self.set_title(title)
        plt.xlabel("iteration")


    def _round_ranges(self, data: RunData, ctx: ViewContext) -> bool:
        """Reference 001 keeps per-round summaries only: show each round's spread."""
        plt, drawn = self.plt, False
        variants = [v for v in self.shown(data) if v.round_summaries]
        for k, v in enumerate(variants):
            colour = rgb(ctx.colour(data, v.name))
            offset = (k - (len(variants) - 1) / 2) * 0.08  # side by side, not on top
            xs, ys = [], []
            for p in v.round_summaries:
                if p.min_s is not None and p.max_s is not None:
                    xs += [p.round + 1 + offset] * 2
                    ys += [p.min_s * 1e3, p.max_s * 1e3]
            plt.plot(xs, ys, color=colour, label=printable(v.name), marker="braille")
            self.points += len(xs)
            plt.scatter([p.round + 1 + offset for p in v.round_summaries],
                        [p.median_s * 1e3 for p in v.round_summaries], color=colour, marker="o")
            drawn = True
        if drawn:
            plt.xticks([p.round + 1 for p in variants[0].round_summaries])
        return drawn


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
