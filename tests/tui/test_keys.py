"""Keyboard: j/k in tables, every key in the footer (tabs and exports grouped), Ctrl-C's note
in plain words, the open dialog's own hint, Tab completion of paths, the `u` dialog keeping a
bad value open with the reason, and a help screen that lists more than eight keys at 80x24."""

from __future__ import annotations

from pathlib import Path

from sagetui.tui.app import SageTUI
from sagetui.tui.help_screen import HelpScreen
from sagetui.tui.modals import PathPromptScreen
from sagetui.tui.widgets.variant_table import VariantTable

from .conftest import THEME, TWO_BUILDS, aio, screen_text, settle, tiny_config, viewer

RUN_KEYS = ("Run/Stop", "E Edit", "Until CI", "Calibrate", "Profile")


@aio
async def test_footer_lists_every_key_and_ctrl_c_says_how_to_quit(tmp_path: Path) -> None:
    live = SageTUI(config=tiny_config(), theme_name=THEME, recovery_path=tmp_path / "r.json")
    async with live.run_test(size=(200, 40)) as pilot:
        await settle(pilot, live)
        footer = screen_text(live).splitlines()[-1]
        for label in (*RUN_KEYS, "Open", "n Next", "Theme", "1234567", "Tabs", "Export"):
            assert label in footer, footer
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, app)
        footer = screen_text(app).splitlines()[-1]
        for label in ("Open", "n Next", "Theme", "1234567", "Tabs", "Export"):
            assert label in footer, footer
        for label in RUN_KEYS:  # saved reports: nothing to run
            assert label not in footer, footer
        await pilot.press("ctrl+c")
        await pilot.pause()
        note = [n.message for n in app._notifications][-1]
        assert "[b]" not in note and "ctrl+q" in note


@aio
async def test_j_and_k_move_in_tables() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        table = app.query_one(VariantTable)
        table.focus()
        await pilot.press("j")
        assert table.cursor_row == 1 and app.selected == "interleave-softmax"
        await pilot.press("k")
        assert table.cursor_row == 0


@aio
async def test_open_dialog_completes_paths_with_tab(tmp_path: Path) -> None:
    (tmp_path / "alpha_report.json").write_text("{}")
    (tmp_path / "alpha_other.json").write_text("{}")
    (tmp_path / "beta").mkdir()
    app = viewer(TWO_BUILDS, export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("o")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PathPromptScreen)
        assert "enter: open" in screen.hint and "write" not in screen.hint
        box = screen.query_one("Input")
        box.value = str(tmp_path / "al")
        await pilot.press("tab")
        assert box.value == str(tmp_path / "alpha_")  # as far as it is unambiguous
        assert "alpha_other.json" in str(screen.query_one("#problem").render())
        box.value += "r"
        await pilot.press("tab")
        assert box.value == str(tmp_path / "alpha_report.json")
        box.value = str(tmp_path / "b")
        await pilot.press("tab")
        assert box.value == str(tmp_path / "beta") + "/"


@aio
async def test_until_ci_dialog_keeps_a_bad_value_open(tmp_path: Path) -> None:
    app = SageTUI(config=tiny_config(), theme_name=THEME, export_dir=tmp_path,
                  recovery_path=tmp_path / "r.json")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("u")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PathPromptScreen)
        screen.query_one("Input").value = "abc"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen  # still open, and says why
        assert "not a width in percent" in str(screen.query_one("#problem").render())
        screen.query_one("Input").value = "2"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is not screen and app.config.until_ci_percent == 2.0


@aio
async def test_help_at_80x24_shows_more_than_eight_keys() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        titles = ("Run / stop", "Toggle variant", "Set baseline", "Export JSON report",
                  "Export CSV samples", "Export Markdown summary", "Open a report file",
                  "Show next report", "Calibrate the noise floor", "Select next variant",
                  "Export SVG screenshot", "Run until the intervals", "Edit the run")
        assert sum(t in text for t in titles) >= 12, text

