"""Profiling from the console (p / P): between runs only, its steps in the log, its profiles in
the live source and the finished run's report, and the run's timed rounds left alone.

Mocks: no GPU or Nsight Compute here. The pass runs the real driver (session/profile_pass.py)
with the fake `ncu`, `cuobjdump` and `nvdisasm` of tests/test_profile_failures.py, which serve
the toy kernel's profile recorded on the H200; the profiled "call" is a stand-in process, since
the CPU reference backend has no fused kernel. The runs themselves are real CPU runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sagetui.tui.app import SageTUI
from sagetui.tui.profile_flow import ProfileFlow

from .conftest import THEME, aio, settle, tiny_config, wait_for


def console(tmp_path: Path, fake_pass=None, rounds: int = 2) -> SageTUI:
    app = SageTUI(config=tiny_config(rounds=rounds), theme_name=THEME,
                  recovery_path=tmp_path / "recovery.json", export_dir=tmp_path)
    if fake_pass is not None:
        tools, profile = fake_pass
        app.profiling = ProfileFlow(app, app.run_control, profile=profile, tools=lambda: tools)
    return app


def _samples(report) -> dict[str, list[np.ndarray]]:
    return {p: [np.array(r) for r in rounds]
            for p, rounds in (report.samples or {})["ref"].items()}


@aio
async def test_a_profile_after_and_before_a_run_leaves_its_timed_rounds_alone(
        tmp_path: Path, fake_pass) -> None:
    app = console(tmp_path, fake_pass)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, what="the first run")
        await settle(pilot, app)
        before = app.final_report
        kept = _samples(before)
        await pilot.press("p")  # after the run: the selected variant, ref
        await wait_for(pilot, lambda: app.profiling.cancel is None and
                       bool(app.data.model.profiles), what="the profile pass")
        await settle(pilot, app)
        (prof,) = app.data.model.profiles
        assert prof.variant == "ref" and prof.placed_share >= 0.95
        after = app.final_report
        assert after.mainloop_profiles == [prof]  # the export carries it
        assert after.rounds == before.rounds == 2
        assert all(np.array_equal(a, b) for p in kept
                   for a, b in zip(kept[p], _samples(after)[p], strict=True))
        assert after.variants[0].timing == before.variants[0].timing
        # before the next run: its rounds are the runner's alone, and it keeps the profile
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, what="the second run")
        await settle(pilot, app)
        second = app.final_report
        assert second is not before and second.rounds == 2
        assert [len(r) for r in second.samples["ref"]["total"]] == [3, 3]
        assert second.mainloop_profiles == [prof]


@aio
async def test_profiling_refuses_during_a_run_and_says_why_it_cannot_run_here(
        tmp_path: Path) -> None:
    # the real tools: there is no ncu on this machine; rounds enough to be running at p (a
    # tiny run could start and end between two key presses)
    app = console(tmp_path, rounds=500)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.running, what="the run")
        await pilot.press("p")
        assert app.running and app.profiling.cancel is None  # refused: never beside rounds
        await pilot.press("r")  # stopped: what was measured is kept
        await wait_for(pilot, lambda: not app.running, what="the stop")
        await pilot.press("p")
        await wait_for(pilot, lambda: app.profiling.cancel is None, what="the failed pass")
        await pilot.press("6")  # the Log tab
        await settle(pilot, app)
        log = "\n".join(strip.text for strip in app.query_one("#log-view").lines)
        assert "profile: " in log and "ncu" in log  # one line: no Nsight Compute here
        assert not app.data.model.profiles and app.final_report is not None
