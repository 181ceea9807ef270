"""The console at 80 x 24 (and wide): every key reachable, no column cut without an ellipsis,
the run editor's way out in sight and nothing typed lost, notifications that never cover the
panels, plots that stay when every variant is off, a smooth_k=false variant's phase under its
parent."""

from __future__ import annotations

from pathlib import Path

from textual.events import Key, Paste
from textual.widgets import Button, Input, Label, RichLog

from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.eventlog import LogLine
from sagetui.tui.app import SageTUI
from sagetui.tui.widgets.phase_view import PhaseView
from sagetui.tui.widgets.plots import RoundPlot
from sagetui.tui.widgets.variant_table import VariantTable

from .conftest import ROOT, THEME, aio, screen_text, settle, tiny_config, viewer, wait_for
from .test_run_editor import console, open_editor

KBIAS = ROOT / "sample_results" / "cpu_reference_kbias.json"
SWEEP = ROOT / "sample_results" / "h200_sweep.json"


def smoothing_run(tmp_path: Path) -> SageTUI:
    config = RunConfig(shape=Shape(heads=2, q_len=256, head_dim=64), rounds=2, iterations=3,
                       warmup=1, variants=[VariantSpec.parse("smooth=reference"),
                                           VariantSpec.parse("nosmooth=reference[smooth_k=false]")])
    return SageTUI(config=config, theme_name=THEME, recovery_path=tmp_path / "r.json",
                   export_dir=tmp_path)


@aio
async def test_a_finished_run_at_80x24(tmp_path: Path) -> None:
    app = smoothing_run(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running and app.data.status == "complete",
                       what="the run")
        await settle(pilot, app)
        lines = screen_text(app).splitlines()
        footer = lines[-1]
        for key in ("r Run/Stop", "E Edit", "? Help", "q Quit", "Export", "o Open", "n Next"):
            assert key in footer, footer  # the rest: `?` lists every key
        # the variants with their accuracy fit 80 columns: short headers, none cut
        header = next(line for line in lines if " variant " in line and " on " in line)
        assert header.rstrip().endswith("L1 %") and "drift" in header, header
        table = app.query_one(VariantTable)
        assert table.virtual_size.width <= table.size.width
        # a notification takes a line of its own over the footer: the panels make room
        app.notify("exported: /tmp/a_rather_long_file_name_of_an_export.json")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert "exported: /tmp/a_rather_long_file_name_of_an_export.json" in lines[-2]
        assert not any("exported" in line for line in lines[:-2])  # no toast over a panel
        # a long one (an error naming a long path) is shown whole, not cut after 3 lines
        words = [f"part{i:02d}" for i in range(60)]
        app.notify(" ".join(words), severity="error")
        await pilot.pause()
        assert " ".join(words) in " ".join(screen_text(app).split())
        # the Phases tab: smooth_k=false's own phase sits under qk_int8_quantization
        await pilot.press("4")
        await settle(pilot, app)
        view = app.query_one(PhaseView)
        labels = [str(view.get_row_at(i)[0]).strip() for i in range(view.row_count)]
        k_int8 = labels.index("k int8")
        assert labels[k_int8 - 2:k_int8] == ["q int8", ""], labels  # q int8's two variants
        assert labels.index("v fp8") > k_int8 and labels.index("mainloop") > k_int8
        assert str(view.get_row_at(k_int8)[0]).startswith("  ")  # a child: indented


@aio
async def test_turning_off_the_only_variant_keeps_the_plots(tmp_path: Path) -> None:
    app = SageTUI(config=tiny_config(), theme_name=THEME, recovery_path=tmp_path / "r.json",
                  export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running and app.data.status == "complete",
                       what="the run")
        await settle(pilot, app)
        plot = app.query_one("#overview-rounds", RoundPlot)
        assert plot.points == 2
        await pilot.press("t")  # the only variant off
        await settle(pilot, app)
        assert not app.data.is_enabled("ref")
        assert plot.points == 2
        assert "no rounds yet" not in screen_text(app)


@aio
async def test_the_run_editor_at_80x24_keeps_what_is_typed(tmp_path: Path) -> None:
    app = console(tmp_path, variants=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        editor = await open_editor(pilot, app)
        await settle(pilot, app)
        text = screen_text(app)
        assert "Apply (enter)" in text and "Cancel (esc)" in text  # in sight at 80 x 24

        def hint() -> str:
            return str(editor.query_one("#ed-hint", Label).render())

        # it opens at the top of the form, on the new variant field, its example whole
        assert "you are on the new variant field" in hint()
        assert app.focused is editor.query_one("#ed-new", Input)
        assert "mine=sage2-sm89@/path/to/build; enter adds it" in " ".join(
            screen_text(app).replace("█", " ").split())
        # typed on the Add button: into the new variant field, nothing lost
        editor.query_one("#ed-add", Button).focus()
        await pilot.pause()
        assert "you are on the Add button" in hint()
        await pilot.press(*"mine=reference")
        await pilot.pause()
        new = editor.query_one("#ed-new", Input)
        assert new.value == "mine=reference" and app.focused is new
        # typed on Apply: into the field last typed in
        editor.query_one("#ed--rounds", Input).focus()
        await pilot.pause()
        editor.query_one("#ed-apply", Button).focus()
        await pilot.pause()
        await pilot.press("7")
        await pilot.pause()
        assert editor.query_one("#ed--rounds", Input).value == "27"
        await pilot.press("enter")  # enter in the new variant field adds it
        await pilot.pause()


@aio
async def test_the_sweep_table_fits_its_width() -> None:
    for width, header in ((80, "accuracy"), (160, "accuracy")):
        app = viewer(SWEEP)
        async with app.run_test(size=(width, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press("8")
            await settle(pilot, app)
            lines = screen_text(app).splitlines()
            at = next(i for i, line in enumerate(lines) if " point " in line and " backend "
                      in line)
            # at 80 the header's columns fold into lines of their own, down to the first
            # row: every header whole, no cell cut
            end = next(i for i in range(at + 1, len(lines)) if " D128 " in lines[i])
            assert any(header in line.split() for line in lines[at:end]), \
                lines[at:end]
            assert not any("…" in line for line in lines[at:])


@aio
async def test_the_log_shows_whole_lines_and_wraps_them_again_on_a_resize() -> None:
    """Every character of a long line is on screen at 80 x 24 (none under the scrollbar), and a
    resize wraps the lines written before it to the new width."""
    app = viewer(KBIAS)
    words = [f"word{i:02d}" for i in range(40)]  # 280 characters: 4 lines at 80 columns
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        await settle(pilot, app)
        for _ in range(30):  # more than the tab's height: the scrollbar shows
            app.write_log(LogLine(" ".join(words)))
        await settle(pilot, app)

        def shown() -> tuple[str, int]:
            text = screen_text(app)
            return " ".join(text.replace("│", " ").split()), max(
                len(line.rstrip(" │╮╯")) for line in text.splitlines()[3:-1])

        text, _ = shown()
        assert " ".join(words[-12:]) in text  # the last line's words whole, in order
        log = app.query_one("#log-view", RichLog)
        narrow = len(log.lines)
        await pilot.resize_terminal(160, 50)
        await settle(pilot, app)
        assert len(log.lines) < narrow * 0.7  # wrapped again at the new width
        text, widest = shown()
        assert " ".join(words) in text and widest > 100


@aio
async def test_the_run_editor_keeps_a_burst_of_keys_and_a_paste_on_a_button(
        tmp_path: Path) -> None:
    """A terminal hands the console a fast typist's keys (or a paste without bracketed paste)
    in one read: they are all posted before the first has moved the focus off the button, so
    only the first reached the field ("f" of "fast=reference"). A bracketed paste on a button
    was lost whole."""
    app = console(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        editor = await open_editor(pilot, app)
        new = editor.query_one("#ed-new", Input)
        editor.query_one("#ed-add", Button).focus()
        await pilot.pause()
        for character in "fast=reference":  # as the driver posts a burst: no pause between
            app.post_message(Key(character, character))
        await wait_for(pilot, lambda: new.value == "fast=reference", timeout=10,
                       what=f"the burst typed in whole (the field holds {new.value!r})")
        editor.query_one("#ed-browse", Button).focus()
        await pilot.pause()
        app.post_message(Paste("[slowdown=2]"))
        await wait_for(pilot, lambda: new.value == "fast=reference[slowdown=2]", timeout=10,
                       what=f"the paste in the field (it holds {new.value!r})")
        assert app.focused is new


@aio
async def test_the_variants_and_verdicts_stack_where_side_by_side_they_would_be_cut() -> None:
    """At 160 columns an H200 report's variants table (host ms, b2b, bound, accuracy) beside the
    verdicts cut its right-hand columns, and the verdicts' title (its rule) was cut: the two
    stack, each whole."""
    app = viewer(ROOT / "sample_results" / "h200_sm89_variants.json")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, app)
        await settle(pilot, app)
        text = screen_text(app)
        assert "Verdicts: SAME if the 95 % CI is within ±1.00 % (default threshold)" in text
        header = next(line for line in text.splitlines() if " variant " in line and " on " in line)
        assert header.rstrip(" │").endswith("rel L1 %"), header
        table = app.query_one(VariantTable)
        assert table.virtual_size.width <= table.scrollable_content_region.width
