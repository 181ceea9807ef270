"""The console's controls for adaptive stopping (u) and calibration (a), on a real CPU run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sagetui.tui.app import SageTUI

from ..conftest import fake_noise_floor
from .conftest import THEME, aio, settle, tiny_config, wait_for


@pytest.fixture(autouse=True)
def _private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@aio
async def test_until_ci_applies_to_the_running_session(tmp_path: Path) -> None:
    """A long run (200 rounds of 40 iterations) of two variants; `u` 60 after the first round:
    the session stops as soon as every interval is narrower than 60 %, long before round 200."""
    cfg = tiny_config(rounds=200, iterations=40, variants=2)
    app = SageTUI(config=cfg, theme_name=THEME, export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.rounds_done >= 1, timeout=60, what="a round")
        await pilot.press("u", "6", "0", "enter")
        await wait_for(pilot, lambda: not app.running, timeout=120, what="the run to stop")
        assert app.config.until_ci_percent == 60.0
        assert 2 <= app.data.rounds_done < 200
        assert app.data.status == "complete"


@aio
async def test_until_ci_refuses_what_is_not_a_width(tmp_path: Path) -> None:
    app = SageTUI(config=tiny_config(), theme_name=THEME, export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("u", "x", "enter")
        await pilot.pause()
        assert app.config.until_ci_percent is None


@aio
async def test_calibrate_measures_and_keeps_the_noise_floor(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # a quiet machine: the rule refuses this machine's real floor (test_calibration_console.py)
    fake_noise_floor(monkeypatch, 0.8)
    app = SageTUI(config=tiny_config(rounds=2, iterations=3), theme_name=THEME,
                  export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")  # a first run resolves backend and shape
        await wait_for(pilot, lambda: not app.running, timeout=60, what="the run")
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")  # the first run is not exported: calibrate anyway
        # the first run's warm runner makes the A/A run short: it may be over at once
        await wait_for(pilot, lambda: app.final_report is not None
                       and len(app.final_report.variants) == 2, timeout=120,
                       what="the calibration")
        assert [v.name for v in app.final_report.variants] == ["ref", "ref-again"]
        await wait_for(pilot, lambda: not app.running, timeout=120, what="the calibration")
        await settle(pilot, app)
        noise = app.config.noise_floor_percent
        assert noise is not None and 0 <= noise < 100
        assert [v.name for v in app.config.variants] == ["ref"]  # back to the user's run
        stored = json.loads((tmp_path / "state" / "sagetui" / "calibration.json").read_text())
        assert [e["noise_floor_percent"] for e in stored.values()] == [noise]
