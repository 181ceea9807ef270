"""A live run in the console: a real runner process on the CPU at a tiny shape."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sagetui.core.report.io import load_report
from sagetui.tui.app import SageTUI
from sagetui.tui.modals import ChoiceScreen, PathPromptScreen
from sagetui.tui.widgets.phase_table import PhaseTable
from sagetui.tui.widgets.phase_view import PhaseView
from sagetui.tui.widgets.plots import IterationPlot, RoundPlot, SeriesPlot

from .conftest import THEME, aio, screen_text, settle, tiny_config, wait_for


def console(tmp_path: Path, **config: object) -> SageTUI:
    return SageTUI(config=tiny_config(**config), theme_name=THEME,  # type: ignore[arg-type]
                   recovery_path=tmp_path / "recovery.json", export_dir=tmp_path)


@aio
async def test_a_run_fills_the_phase_table_and_the_plots(tmp_path: Path) -> None:
    app = console(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert "press r to run" in screen_text(app)
        await pilot.press("r")
        # started: running, or (a tiny run on a quick machine) over already
        assert app.running or app.final_report is not None
        await wait_for(pilot, lambda: not app.running, what="the run to finish")
        await settle(pilot, app)
        data = app.data
        assert data.status == "complete" and data.rounds_done == 2
        assert len(data.totals(data.variants["ref"])) == 6  # 2 rounds x 3 iterations
        table = app.query_one(PhaseTable)
        assert table.row_count == 9  # 8 phases of the reference backend and the total
        cells = [str(c) for c in table.get_row_at(7)]
        assert "fused_mainloop" in cells[0] and float(cells[1]) > 0
        text = screen_text(app)
        assert "COMPLETE" in text and "2/2 rounds" in text
        assert "telemetry unavailable" in text  # no GPU here, and it says so
        assert app.query_one("#overview-rounds", RoundPlot).points == 2
        assert app.query_one("#overview-iterations", IterationPlot).points == 6
        await pilot.press("4")
        await settle(pilot, app)
        assert app.query_one(PhaseView).row_count == 9  # 8 phases and the total, one variant
        report = load_report(tmp_path / "recovery.json")  # the session's autosave
        assert report.rounds == 2 and report.samples


@aio
async def test_plots_redraw_at_most_refresh_hz_and_only_when_visible(tmp_path: Path) -> None:
    app = SageTUI(config=tiny_config(rounds=300, iterations=20), theme_name=THEME,
                  refresh_hz=4, recovery_path=tmp_path / "r.json", export_dir=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:  # narrow: no plots on the overview
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 1, what="a round")
        plots = {p.id: p for p in app.query(SeriesPlot)}
        before = {k: p.redraws for k, p in plots.items()}
        await pilot.pause(1.0)
        assert {k: p.redraws for k, p in plots.items()} == before  # none is visible
        t0 = time.monotonic()
        await pilot.press("3")
        await pilot.pause(2.0)
        elapsed = time.monotonic() - t0
        it = plots["iterations-plot"]
        drawn = it.redraws - before["iterations-plot"]
        assert 2 <= drawn <= 4 * elapsed + 2  # it follows the run, at 4 Hz at most
        others = {k: p.redraws - before[k] for k, p in plots.items() if k != "iterations-plot"}
        assert not any(others.values())
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, timeout=10, what="the stop")


@aio
async def test_stop_keeps_what_was_measured(tmp_path: Path) -> None:
    app = console(tmp_path, rounds=200, iterations=3)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 1, what="a round")
        assert app.running
        t0 = time.monotonic()
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, timeout=10, what="the run to stop")
        assert time.monotonic() - t0 < 3.0
        data = app.data
        assert data.status == "cancelled" and 1 <= data.rounds_done < 200
        assert app.final_report is not None and app.final_report.rounds == data.rounds_done
        await settle(pilot, app)
        assert "CANCELLED" in screen_text(app)


@aio
async def test_toggle_and_baseline_take_effect_at_the_next_round(tmp_path: Path) -> None:
    app = console(tmp_path, rounds=200, iterations=20, variants=2)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 1, what="a round")
        session = app.session
        assert session is not None
        await pilot.press("v")
        assert app.selected == "slow"
        await pilot.press("b")
        assert session.baseline == "slow"  # the verdicts' baseline from the next round
        await pilot.press("v", "t")  # "ref" off
        assert app.selected == "ref" and session.enabled()["ref"] is False
        done = app.data.rounds_done
        await wait_for(pilot, lambda: app.data.rounds_done >= done + 2, what="two rounds")
        assert app.data.model.progress.variants_in_round == 1  # only "slow" runs now
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, timeout=10, what="the stop")
        assert app.final_report is not None and app.final_report.baseline == "slow"


@aio
async def test_quit_mid_run_asks_then_stops_the_runner_and_saves(tmp_path: Path) -> None:
    app = console(tmp_path, rounds=500, iterations=40)  # still running when the answer comes
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 1, what="a round")
        session = app.session
        assert session is not None and session.client is not None
        runner = Path(f"/proc/{session.client.proc.pid}")

        def runner_gone() -> bool:
            try:
                return (runner / "stat").read_text().split()[2] == "Z"  # exited, not reaped
            except OSError:
                return True
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen) and not session.cancelled  # asked first
        t0 = time.monotonic()
        await pilot.press("s")
        await pilot.pause()
        assert session.cancelled
        await wait_for(pilot, runner_gone, timeout=5, what="the runner to exit")
        assert time.monotonic() - t0 < 1.0  # the runner stops within a second
        await wait_for(pilot, lambda: app.session is None, timeout=10, what="the session")
        assert session.client is None
        await wait_for(pilot, lambda: isinstance(app.screen, PathPromptScreen), timeout=5,
                       what="the save dialog")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.is_running, timeout=10, what="the exit")
    saved = [p for p in tmp_path.glob("reference_*.json")]
    assert len(saved) == 1
    report = load_report(saved[0])
    assert report.status == "cancelled" and report.rounds and report.rounds >= 1


@aio
async def test_quit_mid_run_can_discard(tmp_path: Path) -> None:
    app = console(tmp_path, rounds=200, iterations=3)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 1, what="a round")
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("d")
        await wait_for(pilot, lambda: not app.is_running, timeout=10, what="the exit")
    assert not list(tmp_path.glob("reference_*.json"))
    assert load_report(tmp_path / "recovery.json").rounds  # the recovery file stays


@aio
async def test_a_runner_that_dies_is_shown_and_the_console_stays_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAGETUI_INJECT_FAULT", "exit@slow:1")  # the runner exits in round 2
    app = console(tmp_path, rounds=3, iterations=2, variants=2)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, timeout=90, what="the run")
        data = app.data
        assert data.model.faults and data.model.faults[0].variant == "slow"
        assert data.variants["slow"].status == "failed"
        assert data.variants["ref"].status == "ok" and data.rounds_done == 3
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors and "slow" in errors[0]
        await pilot.press("6")
        await settle(pilot, app)
        text = screen_text(app)
        assert "FAULT" in text and "variant slow" in text


@aio
async def test_the_verdicts_show_at_once_and_the_accuracy_says_computing_until_it_comes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Late figures (docs/architecture.md): after the last round the header says the verdicts are
    final and what is still computing, and the accuracy columns say "computing…"; stopped there, the
    run keeps its rounds and the header names what was never computed."""
    monkeypatch.setenv("SAGETUI_INJECT_FAULT", "stall@ref:late")  # held in ref's accuracy
    app = console(tmp_path, rounds=2, iterations=2, variants=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("r")
        header = "2/2 rounds measured · verdicts final · computing the accuracy of ref, slow"
        # (not `settle`: it waits for the session's worker, which is held in the late figures)
        await wait_for(pilot, lambda: header in screen_text(app), timeout=90,
                       what="the verdicts")
        await wait_for(pilot, lambda: "computing…" in screen_text(app), what="the accuracy")
        assert app.running
        await pilot.press("r")  # stop
        await wait_for(pilot, lambda: not app.running, timeout=60, what="the stop")
        await settle(pilot, app)
        data = app.data
        assert data.status == "partial" and data.rounds_done == 2
        text = screen_text(app)
        assert "not computed: the accuracy of ref, slow" in text and "not computed" in text
