"""The distribution of per-iteration latency per variant: a histogram (share of each
variant's samples per bin, so that variants of different sample counts compare) or a CDF.

numpy bins and sorts; plotext only draws about a plot's width of points per variant (its own
hist() walks every sample in Python). The x range is the 0.1-99.9 percentile range of all the
samples shown, so one outlier does not squash the rest; how many fall outside is said.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sagetui.core.format import printable
from sagetui.core.run.model import VariantModel
from sagetui.core.statistics.summary import percentiles
from sagetui.tui.source import Source
from sagetui.tui.themes import rgb
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.plot_base import nice_ticks, tick_labels

if TYPE_CHECKING:
    from sagetui.tui.widgets.plot_base import SeriesPlot


def draw_distribution(plot: SeriesPlot, data: Source, ctx: ViewContext,
                      shown: list[VariantModel], width: int, cdf: bool) -> None:
    plt = plot.plt
    values = [data.totals(v).values.view * 1e3 for v in shown]
    ends = [percentiles(x, (0.1, 99.9)) for x in values]
    lo, hi = min(e[0] for e in ends), max(e[1] for e in ends)
    ticks = nice_ticks(lo, hi, max(2, min(10, width // 10)))
    lo, hi = ticks[0], ticks[-1]
    outside = sum(int(((x < lo) | (x > hi)).sum()) for x in values)
    bins = max(8, min(width // 2, 120))
    edges = np.linspace(lo, hi, bins + 1)
    for v, x in zip(shown, values, strict=True):
        colour = rgb(ctx.colour(data, v.name))
        if cdf:
            xs = np.linspace(lo, hi, max(8, width))
            ys = np.searchsorted(np.sort(x), xs, side="right") / x.size * 100
        else:
            counts, _ = np.histogram(x, bins=edges)
            ys = np.repeat(counts / x.size * 100, 2)  # steps: each bin flat across its width
            xs = np.column_stack((edges[:-1], edges[1:])).ravel()
        plt.plot(xs.tolist(), ys.tolist(), color=colour, marker="braille")
        plot.points += int(xs.size)
        plot.add_legend("━", f"{printable(v.name)} (n {x.size})", ctx.colour(data, v.name))
    plt.xticks(ticks, tick_labels(ticks))
    plt.xlim(lo, hi)
    plt.xlabel("latency, ms (d: next view)")
    what = "CDF of per-iteration latency, % of samples at or below" if cdf else \
        f"Histogram of per-iteration latency, % of samples per bin ({bins} bins)"
    if outside:
        what += f" · {outside} beyond p0.1-p99.9 not shown"
    plot.set_title(what)
    if cdf:
        plt.ylim(0, 100)
        plt.yticks([0, 25, 50, 75, 100])
    else:
        top = max(float(np.histogram(x, bins=edges)[0].max()) / x.size * 100 for x in values)
        plot.set_yticks(0.0, top)
