"""What a tab switch costs the console beyond a bare Textual app's (benchmarks/
key_latency_ratios.py measures it): the footer is not rebuilt, the status panel not laid out
again, a plot shown again not rebuilt, unless what they show changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets._footer import FooterKey

from sagetui.tui.app import SageTUI
from sagetui.tui.widgets.phase_view import PhaseView
from sagetui.tui.widgets.plots import IterationPlot, RoundPlot
from sagetui.tui.widgets.scheduler_panel import DecompositionInfo
from sagetui.tui.widgets.status_panel import StatusPanel

from .conftest import (
    ROOT,
    THEME,
    TWO_BUILDS,
    aio,
    screen_text,
    settle,
    tiny_config,
    viewer,
    wait_for,
)

H200_BACKENDS = ROOT / "sample_results" / "h200_backends.json"  # five variants' phases


def record_updates(widget: Any) -> list[tuple[str, bool]]:
    """Every update the widget gets from now on: (its text, whether it asked for a layout)."""
    updates: list[tuple[str, bool]] = []
    real = widget.update

    def update(content: Any = "", *, layout: bool = True) -> None:
        updates.append((str(content), layout))
        real(content, layout=layout)

    widget.update = update
    return updates


@aio
async def test_tab_switch_keeps_the_footer_unless_its_keys_change() -> None:
    # a tab switch moves the focus; Textual recomposes its Footer on every focus change (~20
    # new widgets, most of a switch's cost); the console's does so only when its keys change
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, app)
        keys = list(app.query(FooterKey))
        for tab in ("2", "4", "3", "1"):  # the iteration plot's keys are listed under it
            await pilot.press(tab)
            await settle(pilot, app)
            assert list(app.query(FooterKey)) == keys, tab
            assert ("d lines / histogram / CDF" in screen_text(app)) == (tab == "3"), tab


@aio
async def test_status_and_decomposition_panels_are_updated_only_when_their_text_changes(
        ) -> None:
    """Each update lays the screen out: the status panel was updated on every tick and tab
    switch, the decomposition panel on every tick of a run that streams."""
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        status = record_updates(app.query_one(StatusPanel))
        decomposition = record_updates(app.query_one(DecompositionInfo))
        for tab in ("2", "1", "4", "1"):  # each switch and each tick syncs the panels
            await pilot.press(tab)
            await settle(pilot, app)
            app.data.touch()  # what a new event does; the texts stay the same
            app.flush_redraws(force=True)
        assert status == [] and decomposition == []
        app.data.model.decomposition = None
        app.data.model.decomposition_skipped = "no public API"
        app.data.touch()
        app.flush_redraws(force=True)
        assert len(decomposition) == 1 and "skipped: no public API" in decomposition[0][0]


@aio
async def test_a_plot_shown_again_is_not_built_again() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await settle(pilot, app)
        plot = app.query_one("#iterations-plot", IterationPlot)
        builds: list[int] = []
        real = plot._plot.build

        def build() -> str:
            builds.append(plot.redraws)
            return real()

        plot._plot.build = build  # type: ignore[method-assign]
        await pilot.press("4")
        await settle(pilot, app)
        await pilot.press("3")
        await settle(pilot, app)
        assert builds == []
        await pilot.press("d")  # the histogram: a new figure, built once
        await settle(pilot, app)
        assert builds == [plot.redraws]


@aio
async def test_a_plot_shown_again_is_not_read_into_strips_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A hidden tab's widgets have size 0, so Textual renders a shown tab's widgets again;
    reading a full plot's frame into strips (20-35 ms) was most of a switch to the Iterations
    tab while a run streams. The plot keeps its frame's strips until it redraws."""
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        await settle(pilot, app)
        plot = app.query_one("#iterations-plot", IterationPlot)
        reads: list[int] = []
        real = plot._frame_strips

        def frame_strips(*args: Any) -> Any:
            reads.append(plot.redraws)
            return real(*args)

        monkeypatch.setattr(plot, "_frame_strips", frame_strips)
        for tab in ("4", "3", "1", "3"):
            await pilot.press(tab)
            await settle(pilot, app)
        assert reads == []
        assert "No raw samples in this report" in screen_text(app)
        await pilot.press("d")  # a new figure (no samples: the same picture), read once
        await settle(pilot, app)
        assert reads == [plot.redraws]


@aio
async def test_a_hidden_tabs_panels_catch_up_when_it_is_shown(tmp_path: Path) -> None:
    """Panels on hidden tabs are not synced while a run changes the data (each would be drawn
    again in the switch's frame); the switch itself brings them up to date."""
    app = SageTUI(config=tiny_config(rounds=2, iterations=3), theme_name=THEME,
                  recovery_path=tmp_path / "r.json", export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        view = app.query_one(PhaseView)
        before = view._last
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, what="the run")
        await pilot.pause(0.5)  # ticks on the Overview: the Phases tab is hidden
        assert view._last is before
        await pilot.press("4")
        await wait_for(pilot, lambda: view._last is not before and view._last[0] is app.data,
                       timeout=5, what="the phase view's sync")
        assert "fused_mainloop" in screen_text(app)


@aio
async def test_a_table_shown_again_is_not_drawn_again() -> None:
    """Textual's DataTable drops all it has drawn on each Resize and style update, and a tab
    switch brings both (its widgets come back from size 0; the focus moves into the table):
    each switch drew the tab's tables from nothing, twice."""
    app = viewer(H200_BACKENDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("4")
        await settle(pilot, app)
        view = app.query_one(PhaseView)
        assert app.focused is view and view.row_count > 3
        cells: list[tuple[int, int]] = []
        real = view._render_cell

        def render_cell(row: int, column: int, *args: Any, **kwargs: Any) -> Any:
            cells.append((row, column))
            return real(row, column, *args, **kwargs)

        view._render_cell = render_cell  # type: ignore[method-assign]
        for tab in ("1", "4", "2", "4"):  # no settle: its forced sync redraws hidden panels
            await pilot.press(tab)
            await pilot.pause()
            await pilot.pause()
        assert app.focused is view and "fused_mainloop" in screen_text(app)
        assert cells == []


@aio
async def test_a_table_kept_drawn_still_shows_where_the_focus_is() -> None:
    """What SteadyTable keeps is keyed by the focus: the cursor row's colours follow it."""
    app = viewer(H200_BACKENDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("4")
        await settle(pilot, app)
        view = app.query_one(PhaseView)
        y = view.cursor_row + 1  # under the header

        def cursor_styles() -> list[Any]:
            return [s.style for s in view.render_lines(view.size.region)[y + 1]]  # the border

        focused = cursor_styles()
        app.query_one("Tabs").focus()
        await settle(pilot, app)
        blurred = cursor_styles()
        view.focus()
        await settle(pilot, app)
        assert blurred != focused and cursor_styles() == focused


def test_the_console_does_not_animate_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # the tab underline's 0.3 s slide: ~18 frames at 60 Hz after each switch, over SSH, in
    # the way of the next key's frame (benchmarks/key_latency_ratios.py)
    monkeypatch.delenv("TEXTUAL_ANIMATIONS", raising=False)
    assert SageTUI(theme_name=THEME).animation_level == "none"
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "full")
    assert SageTUI(theme_name=THEME).animation_level == "full"


@aio
async def test_a_tick_between_a_tab_switch_and_its_frame_waits_for_the_frame() -> None:
    """Until the switch's frame the tab just hidden still counts as on screen: a tick then
    redrew its plots (tens of ms) before the new tab was drawn, the slowest presses while a run
    streams."""
    app = viewer(H200_BACKENDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        plot = app.query_one("#rounds-plot", RoundPlot)
        drawn = plot.redraws
        app.data.touch()  # what a new event does: the plot is due
        plot.last_redraw = 0.0
        app.action_show_tab("phases")
        app.tick()
        await pilot.pause()
        await pilot.pause()
        assert plot.redraws == drawn and not plot.is_on_screen
        await pilot.press("2")  # shown again, it catches up
        await pilot.pause()
        await pilot.pause()
        assert plot.redraws == drawn + 1
