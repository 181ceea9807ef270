"""Keys that would lose a run ask first (docs/console.md, "Keys"): q mid-run asks before the runner
stops (staying keeps it running); q, r and a over a finished run not yet exported as JSON say
where its recovery file is and offer to export it first. A real runner on the CPU."""

from __future__ import annotations

from pathlib import Path

from sagetui.core.report.io import load_report
from sagetui.tui.app import SageTUI
from sagetui.tui.modals import ChoiceScreen, PathPromptScreen

from .conftest import THEME, aio, screen_text, settle, tiny_config, wait_for


def console(tmp_path: Path, **config: object) -> SageTUI:
    return SageTUI(config=tiny_config(**config), theme_name=THEME,  # type: ignore[arg-type]
                   recovery_path=tmp_path / "recovery.json", export_dir=tmp_path)


async def finished_run(pilot, app: SageTUI) -> None:
    await settle(pilot, app)
    before = app.final_report
    await pilot.press("r")
    # its end, not its running (a tiny run can start and end between two looks)
    await wait_for(pilot, lambda: not app.running and app.final_report is not before,
                   timeout=60, what="the run to end")
    await settle(pilot, app)
    assert app.final_report is not None


def asked(app: SageTUI) -> str:
    """The question on screen (its text as asked: a long path wraps on screen)."""
    assert isinstance(app.screen, ChoiceScreen), type(app.screen).__name__
    shown = " ".join(screen_text(app).split())
    assert " ".join(app.screen.question.split()[:6]) in shown
    return app.screen.question


@aio
async def test_quit_mid_run_asks_before_stopping_and_stay_keeps_it_running(
        tmp_path: Path) -> None:
    app = console(tmp_path, rounds=500, iterations=40)  # long enough to outlast the test
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 1, what="a round")
        session = app.session
        assert session is not None
        await pilot.press("q")
        await pilot.pause()
        assert "in progress" in asked(app)
        assert app.screen.detail and str(tmp_path / "recovery.json") in app.screen.detail
        assert not session.cancelled  # nothing stops before the answer
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ChoiceScreen)
        done = app.data.rounds_done
        await wait_for(pilot, lambda: app.data.rounds_done >= done + 2, what="two more rounds")
        assert app.session is session and not session.cancelled and app.running
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, timeout=10, what="the stop")


@aio
async def test_r_over_an_unexported_run_asks_and_export_first_then_runs(tmp_path: Path) -> None:
    app = console(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await finished_run(pilot, app)
        first = app.final_report
        await pilot.press("r")
        await pilot.pause()
        text = asked(app)
        assert "The last run is not exported: run again and keep it only in its recovery " \
               f"file {tmp_path / 'recovery.json'}?" == text
        await pilot.press("escape")  # cancel: nothing starts, the result stays
        await pilot.pause()
        assert not app.running and app.final_report is first
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("e")  # export first: the path, then the new run
        await pilot.pause()
        assert isinstance(app.screen, PathPromptScreen)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.final_report is not first, timeout=60,
                       what="the second run")
        (saved,) = tmp_path.glob("reference_*.json")
        assert load_report(saved).rounds == 2
        await wait_for(pilot, lambda: not app.running, timeout=60, what="the second run")
        second = app.final_report
        await pilot.press("r")  # the second run is not exported either: asked again
        await pilot.pause()
        asked(app)
        await pilot.press("y")  # run again: no export
        await wait_for(pilot, lambda: not app.running and app.final_report is not second,
                       timeout=60, what="the third run")
        assert len(list(tmp_path.glob("reference_*.json"))) == 1


@aio
async def test_a_run_exported_as_json_is_replaced_without_a_question(tmp_path: Path) -> None:
    app = console(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await finished_run(pilot, app)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(list(tmp_path.glob("reference_*.json"))),
                       timeout=10, what="the export")
        first = app.final_report
        await pilot.press("r")
        await pilot.pause()
        assert not isinstance(app.screen, ChoiceScreen)  # not asked: it ran (or runs)
        await wait_for(pilot, lambda: not app.running and app.final_report is not first,
                       timeout=60, what="the second run")


@aio
async def test_a_and_q_over_an_unexported_run_ask_first(tmp_path: Path) -> None:
    """One finished run for both keys (each answer leaves it as it was, unexported): `a`
    asks before calibrating over it; `q` says where it is kept and asks, stay or quit."""
    app = console(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await finished_run(pilot, app)
        result = app.final_report
        await pilot.press("a")
        await pilot.pause()
        assert "calibrate and keep it only in its recovery file" in asked(app)
        await pilot.press("n")
        await pilot.pause()
        assert not app.running and app.run_control.calibrating is None
        assert not isinstance(app.screen, ChoiceScreen) and app.final_report is result
        await pilot.press("q")
        await pilot.pause()
        text = asked(app)
        assert f"quit and keep it only in its recovery file {tmp_path / 'recovery.json'}" in text
        await pilot.press("escape")  # stay
        await pilot.pause()
        assert app.is_running and not isinstance(app.screen, ChoiceScreen)
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, timeout=10, what="the exit")
    assert app.return_code == 0
