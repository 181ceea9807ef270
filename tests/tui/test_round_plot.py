"""The Rounds tab on a throttled H200 report (every round power-capped): every variant's line
is drawn, the throttle marks do not cover it, and the legend sits outside the plot's frame."""

from __future__ import annotations

from sagetui.tui.widgets.plots import RoundPlot

from .conftest import ROOT, aio, settle, viewer
from .plot_cells import frame_rows, ink_by_colour, rendered

H200_BACKENDS = ROOT / "sample_results" / "h200_backends.json"


@aio
async def test_throttled_h200_rounds_keep_every_variant_line() -> None:
    app = viewer(H200_BACKENDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        plot = app.query_one("#rounds-plot", RoundPlot)
        lines = rendered(plot)
        rows = frame_rows(lines)
        ink = ink_by_colour(lines, rows)
        ctx = app.context()
        for name in app.data.variants:
            colour = ctx.colour(app.data, name).upper()
            assert ink.get(colour, 0) >= 20, f"{name}'s line is missing: {ink}"
        inside = "\n".join(lines[i].plain for i in rows)
        for name in app.data.variants:
            assert name not in inside, f"the legend covers the plot ({name})"
        below = "\n".join(t.plain for t in lines[rows.stop:])
        assert all(name in below for name in app.data.variants)
        assert "throttled" in plot.title_text + below
