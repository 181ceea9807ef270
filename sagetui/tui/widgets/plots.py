"""Live plots (textual-plotext): round medians (drift), per-iteration latency, phase bars.

A plotext frame costs tens of milliseconds, so a plot never redraws on its own: `sync` only
hands it the data, and the app's timer calls `redraw_if_due` at most `refresh_hz` times a
second. It redraws only when it is on screen and its data, selection or size changed, from
data reduced to about its width (a min/max pyramid for samples, a stride for rounds).
"""

from __future__ import annotations

import time

import numpy as np
from textual_plotext import PlotextPlot

from ..formatting import printable, short_phase
from ..run_data import RunData, VariantView
from ..series import stride
from ..themes import rgb
from ..view_context import ViewContext

AXIS_COLUMNS = 12  # what plotext's y-axis labels and frame take of the width


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
        flagged, throttled_any = [], False
        for v in self.shown(data):
            pts = v.round_points()
            if not pts:
                continue
            idx, _ = stride(np.arange(len(pts)), width)
            pts = [pts[i] for i in idx]
            x = [p.round + 1 for p in pts]
            y = [p.median_s * 1e3 for p in pts]
            colour = rgb(ctx.colour(data, v.name))
            drift = v.drift or {}
            label = printable(v.name)
            if drift.get("slope_percent_per_round") is not None:
                label += f" {drift['slope_percent_per_round']:+.2f}%/rnd"
            if drift.get("flagged"):
                label += " DRIFT"
                flagged.append(v.name)
            plt.plot(x, y, color=colour, label=label, marker="braille")
            self.points += len(x)
            plt.scatter(x, y, color=colour, marker="o")
            throttled = v.throttled_rounds()
            if throttled:
                throttled_any = True
                by_round = {p.round: p.median_s * 1e3 for p in pts}
                xs = [r + 1 for r in throttled if r in by_round]
                plt.scatter(xs, [by_round[r - 1] for r in xs], color=rgb(ctx.mark_colour),
                            marker="x")
        clocks = [(r + 1, (t.get("sm_clock_mhz") or {}).get("mean"))
                  for r, t in data.gpu_telemetry().items() if t.get("available")]
        clocks = [(r, c) for r, c in clocks if c is not None]
        if clocks:  # the GPU's SM clock beside the medians: drift explained, not just seen
            lo, hi = min(c for _, c in clocks), max(c for _, c in clocks)
            pad = max(10.0, (hi - lo) * 0.1)
            plt.plot([r for r, _ in clocks], [c for _, c in clocks], yside="right",
                     color="gray", marker="dot", label="SM MHz (right axis)")
            plt.ylim(lo - pad, hi + pad, yside="right")
        rounds = sorted({p.round + 1 for v in self.shown(data) for p in v.round_points()})
        if rounds:
            plt.xticks(_ticks(rounds, max(2, width // 6)))
        title = "Round medians, ms"
        if not any(v.round_points() for v in self.shown(data)):
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
    samples (a vertical stroke), so that no spike is decimated away."""

    follows_samples = True

    def draw(self, data: RunData, ctx: ViewContext, width: int) -> None:
        plt = self.plt
        total, block = 0, 1
        shown = [v for v in self.shown(data) if v.has_samples()]
        for v in shown:
            x, lo, hi = v.totals.envelope(width)
            total += len(v.totals)
            colour = rgb(ctx.colour(data, v.name))
            if x.size and np.any(lo != hi):
                block = max(block, int(x[1] - x[0]) if x.size > 1 else 1)
                xs = np.repeat(x, 2)
                ys = np.column_stack((lo, hi)).ravel() * 1e3
            else:
                xs, ys = x, lo * 1e3
            plt.plot(xs.tolist(), ys.tolist(), color=colour, label=printable(v.name),
                     marker="braille")
            self.points += int(xs.size)
        if shown:
            starts = sorted(shown[0].total.round_start.values())
            if 1 < len(starts) <= 30:
                for s in starts[1:]:
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
