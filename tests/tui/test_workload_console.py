"""A capture replayed in the console: its calls take their rounds in turn, so the header says
which call and which round are being measured (the run's own model has no round of its own,
and no call's row appears before its last round), and the quit prompt what a stop keeps."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sagetui.tui.modals import ChoiceScreen
from sagetui.tui.widgets.status_panel import state_line, telemetry_line

from ..test_capture import captured
from .conftest import aio, wait_for


@pytest.fixture(autouse=True)
def _private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_the_header_names_the_call_and_the_round_in_turn(tmp_path: Path) -> None:
    from sagetui.cli.console import console_app
    from sagetui.cli.main import build_parser

    captured(tmp_path / "cap", steps=1, calls="0-2")
    args = build_parser().parse_args([
        "--workload", str(tmp_path / "cap"), "--variant", "a=reference", "--variant",
        "b=reference[slowdown=1.2]", "--rounds", "300", "--iterations", "1", "--warmup", "1",
        "--recovery-dir", str(tmp_path / "rec")])
    app = console_app(args)

    @aio
    async def replay() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.press("r")
            # the second round of some call: every call has taken its first turn
            await wait_for(pilot, lambda: (p := app.data.model.progress.point) is not None
                           and (p[2] or 0) >= 1, what="a second round")
            index, total, turn, _ = app.data.model.progress.point
            header = state_line(app.data, app.context()).plain
            assert f"call {index + 1}/{total} · round {turn + 1}/300 · ETA" in header, header
            # no "after the first round": the rounds are the calls' own
            assert telemetry_line(app.data, app.context()).plain == \
                "telemetry: each point's own, in its report"
            assert total == 3
            live = app.sweeps.live_sweep  # no call's row before its last round
            assert live is None or not live.points
            # q asks first, saying what a stop would keep: the calls reached, not "0 rounds"
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen),
                           what="the quit prompt")
            question = app.screen.question
            assert re.search(r"A run is in progress \([123] of 3 calls with rounds measured so "
                             r"far, in round \d+\)", question), question
            await pilot.press("escape")  # keep running
            await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen),
                           what="the prompt gone")
            await pilot.press("r")
            await wait_for(pilot, lambda: not app.running, what="the stop")

    replay()
