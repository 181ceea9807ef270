"""Overview edges: the two-build report's variant table fits 160 columns (its drift column whole),
and a report with nothing to plot (000: phases only) gives the width to the phase table instead of
two empty plots."""

from __future__ import annotations

from sagetui.tui.widgets.plots import IterationPlot, RoundPlot
from sagetui.tui.widgets.variant_table import VariantTable

from .conftest import TWO_BUILDS, VIDEO_CALL_PHASES, aio, settle, viewer


@aio
async def test_variant_table_of_001_is_not_clipped_at_160_columns() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        table = app.query_one(VariantTable)
        assert table.virtual_size.width <= table.scrollable_content_region.width


@aio
async def test_nothing_to_plot_gives_the_width_to_the_phases() -> None:
    app = viewer(VIDEO_CALL_PHASES)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert not app.query_one("#overview-rounds", RoundPlot).display
        assert not app.query_one("#overview-iterations", IterationPlot).display
        assert app.query_one("#phase-table").size.width > 120
        await pilot.press("2")  # the tab of its own still says why it is empty
        await settle(pilot, app)
        assert "no rounds in this report" in app.query_one("#rounds-plot", RoundPlot).title_text
