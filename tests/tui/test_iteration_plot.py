"""The iteration plot reads well: lines (not sparse dots), whole-number iteration ticks,
round-number latency ticks, a distribution view (histogram, CDF) and a keyboard cursor with
a readout and zoom."""

from __future__ import annotations

import re

from sagetui.tui.widgets.plots import IterationPlot

from .conftest import ROOT, aio, settle, viewer
from .plot_cells import frame_rows, ink_by_colour, rendered

CPU_VARIANTS = ROOT / "sample_results" / "cpu_reference_variants.json"  # 3 x 80 samples


async def _iterations(pilot, app) -> IterationPlot:
    await settle(pilot, app)
    await pilot.press("3")
    await settle(pilot, app)
    return app.query_one("#iterations-plot", IterationPlot)


def _axis_labels(plot: IterationPlot) -> tuple[list[str], list[float]]:
    lines = [t.plain for t in rendered(plot)]
    rows = frame_rows(rendered(plot))
    bottom = rows.stop
    x = lines[bottom + 1].split()
    y = [float(m.group(1)) for i in rows for m in [re.match(r"\s*([0-9.]+)┤", lines[i])] if m]
    return x, y


@aio
async def test_samples_are_lines_with_whole_and_round_ticks() -> None:
    app = viewer(CPU_VARIANTS)
    async with app.run_test(size=(120, 40)) as pilot:
        plot = await _iterations(pilot, app)
        lines = rendered(plot)
        ink = ink_by_colour(lines, frame_rows(lines))
        colours = {app.context().colour(app.data, n).upper() for n in app.data.variants}
        # 3 x 80 samples: dots light at most 240 characters, lines more (they are joined up;
        # ref and ref-again overlap, so the count is of all three together)
        assert sum(ink.get(c, 0) for c in colours) > 300, ink
        x, y = _axis_labels(plot)
        assert x and all(t.isdigit() for t in x), x  # iterations: 1 20 40 ..., not 0.0 19.8
        assert x[0] == "1"
        steps = {round(abs(b - a), 9) for a, b in zip(y, y[1:], strict=False)}
        assert len(steps) == 1, y  # evenly spaced ...
        step = steps.pop()
        assert any(abs(step - s * 10 ** k) < 1e-9 for s in (1, 2, 2.5, 5) for k in range(-3, 4))
        assert all(abs(v / step - round(v / step)) < 1e-6 for v in y), y  # ... round numbers


@aio
async def test_distribution_views_and_cursor_readout_by_keyboard() -> None:
    app = viewer(CPU_VARIANTS)
    async with app.run_test(size=(120, 40)) as pilot:
        plot = await _iterations(pilot, app)
        assert app.focused is plot
        await pilot.press("right")
        await settle(pilot, app)
        assert plot.cursor is not None
        i = plot.cursor
        ref = app.data.totals(app.data.variants["ref"]).values.view[i] * 1e3
        assert plot.readout.startswith(f"iteration {i + 1}:")
        assert f"ref {ref:.3f} ms" in plot.readout
        assert plot.readout in "\n".join(t.plain for t in rendered(plot))
        await pilot.press("plus", "plus")
        await settle(pilot, app)
        start, stop = plot.window or (0, 80)
        assert stop - start <= 40 and start <= plot.cursor < stop
        assert f"zoom {start + 1}-{stop}" in plot.title_text
        await pilot.press("0")
        await settle(pilot, app)
        assert plot.window is None
        await pilot.press("d")
        await settle(pilot, app)
        assert plot.title_text.startswith("Histogram of per-iteration latency")
        assert "latency, ms" in "\n".join(t.plain for t in rendered(plot))
        await pilot.press("d")
        await settle(pilot, app)
        assert plot.title_text.startswith("CDF of per-iteration latency")
        _, y = _axis_labels(plot)
        assert min(y) == 0 and max(y) == 100
        await pilot.press("d")
        await settle(pilot, app)
        assert plot.title_text.startswith("Per-iteration latency")
