"""A stopped run resumed in the console with its rounds kept, and the runner kept warm between
runs: real runner processes on the CPU."""

from __future__ import annotations

from pathlib import Path

from sagetui.core.report.io import load_report
from sagetui.tui.app import SageTUI
from sagetui.tui.modals import ChoiceScreen

from .conftest import THEME, aio, screen_text, settle, tiny_config, wait_for
from .test_calibration_console import logged


def console(tmp_path: Path, **config: object) -> SageTUI:
    return SageTUI(config=tiny_config(**config), theme_name=THEME,  # type: ignore[arg-type]
                   recovery_path=tmp_path / "recovery.json", export_dir=tmp_path)


@aio
async def test_r_over_a_stopped_run_resumes_it_with_its_rounds_kept(tmp_path: Path) -> None:
    # rounds enough that the stop lands before the last: a round takes a fraction of a second,
    # and in a CI run on a loaded 2-core machine an 8-round run completed before the stop
    rounds = 40
    app = console(tmp_path, rounds=rounds, iterations=3, variants=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        lines = logged(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 2, what="two rounds")
        await pilot.press("r")  # stop
        await wait_for(pilot, lambda: not app.running, what="the stop")
        stopped = app.final_report
        assert stopped is not None and stopped.status == "cancelled"
        kept = stopped.rounds or 0
        assert 2 <= kept < rounds
        first = stopped.samples["ref"]["total"].values[:kept * 3].tolist()
        pid = app.run_control.warm.pid if app.run_control.warm else None
        assert pid is not None  # the stopped run's runner is kept warm
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen)
        assert f"stopped after {kept} of {rounds} rounds" in screen_text(app)
        await pilot.press("r")  # resume
        await wait_for(pilot, lambda: app.final_report is not None
                       and app.final_report.status == "complete", timeout=120,
                       what="the resumed run")
        done = app.final_report
        assert done.rounds == rounds and app.data.rounds_done == rounds
        assert done.samples["ref"]["total"].values[:kept * 3].tolist() == first
        assert len(done.samples["slow"]["total"].values) == rounds * 3
        assert any(f"resuming the stopped run: its {kept} rounds are kept" in line
                   for line in lines)
        assert any(f"the runner is warm (pid {pid})" in line for line in lines)
        assert load_report(tmp_path / "recovery.json").rounds == rounds  # the same recovery file
        await pilot.press("r")  # a complete run is not resumed: the unexported ask comes
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen)
        assert "Resume" not in screen_text(app) and "not exported" in screen_text(app)


@aio
async def test_new_run_over_a_stopped_one_is_a_run_of_its_own(tmp_path: Path) -> None:
    app = console(tmp_path, rounds=5000, iterations=3)  # the new run still going when seen
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 1, what="a round")
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, what="the stop")
        first_rounds = app.final_report.rounds if app.final_report else None
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("n")  # a new run
        await pilot.pause()
        await pilot.press("y")  # over the stopped run's unexported result
        await wait_for(pilot, lambda: app.running, timeout=10, what="the new run")
        assert app.run_control.stopped is None
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, what="the stop")
        # a run of its own, in a recovery file of its own: the stopped one's is untouched
        assert app.run_control.run_recovery == tmp_path / "recovery-2.json"
        assert load_report(tmp_path / "recovery.json").rounds == first_rounds


@aio
async def test_a_resumed_run_is_never_killed_by_its_stops_timer(tmp_path: Path) -> None:
    """Once, stop an A/B, resume it, and the stop's kill timer (STOP_GRACE_S after the
    stop) killed the resumed run's runner: variant a was dropped, the rest measured only b,
    and the run still read complete. The timer belongs to its stop: a resumed run is left
    alone, and ends complete with every round of both variants."""
    app = console(tmp_path, rounds=30, iterations=3, variants=2)
    grace = 1.5
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        lines = logged(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 2, what="two rounds")
        app.run_control.stop(grace_s=grace)  # `r`, with a short grace
        await wait_for(pilot, lambda: not app.running, what="the stop")
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen)
        await pilot.press("r")  # resume, well inside the grace
        await wait_for(pilot, lambda: app.running, timeout=5, what="the resumed run")
        await pilot.pause(2 * grace)  # the stop's timer has fired by now
        await wait_for(pilot, lambda: app.final_report is not None
                       and app.final_report.status in ("complete", "partial"), timeout=120,
                       what="the resumed run's end")
        done = app.final_report
        assert done.status == "complete", done.status_detail
        assert not done.faults and [v.status for v in done.variants] == ["ok", "ok"]
        assert len(done.variant("ref").rounds) == len(done.variant("slow").rounds) == 30
        assert not any("did not stop in time" in line for line in lines)
