"""A plot's redraw on its fast paths (widgets/plotext_canvas.py writes plotext's canvas,
widgets/ansi.py reads its ANSI straight into strips) draws what plotext's own writer and
Textual's own path draw, cell for cell."""

from __future__ import annotations

from textual.visual import Visual, visualize

from sagetui.tui.widgets import plotext_canvas
from sagetui.tui.widgets.ansi import ansi_strips
from sagetui.tui.widgets.plots import SeriesPlot

from .conftest import SYNTHETIC, aio, settle, viewer


@aio
async def test_the_fast_canvas_and_strips_draw_what_plotext_and_textual_draw() -> None:
    app = viewer(SYNTHETIC)
    async with app.run_test(size=(120, 40)) as pilot:
        seen = []
        for tab, pid in (("2", "rounds-plot"), ("3", "iterations-plot")):
            await pilot.press(tab)
            await settle(pilot, app)
            plot = app.query_one(f"#{pid}", SeriesPlot)
            assert plot.points > 0, pid
            plot._plot.build()
            matrix = plot._plot.monitor.matrix
            assert plotext_canvas.set_canvas(matrix) == plotext_canvas.PLOTEXT_SET_CANVAS(matrix)
            width, height = plot.size
            style = plot.visual_style
            frame, _legend = plot._frame()
            assert ansi_strips(frame, style.rich_style) is not None, pid  # the fast path
            ours = plot._frame_strips(width, height, style)
            textual = Visual.to_strips(plot, visualize(plot, plot.render()), width, height, style)
            assert [s.render(app.console) for s in ours] == \
                [s.render(app.console) for s in textual], pid
            seen.append(pid)
        assert seen == ["rounds-plot", "iterations-plot"]
