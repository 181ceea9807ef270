"""The console's side of calibration and the verdicts' threshold (docs/statistics.md,
"Threshold and noise floor"), on real CPU runs: the baseline picked before a run, the
threshold after calibrating, `u` while idle, a run with every variant off, and the two
speedups labelled apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from sagetui.core.eventlog import LogLine
from sagetui.session import calibration
from sagetui.tui.app import SageTUI
from sagetui.tui.widgets.status_panel import state_line
from sagetui.tui.widgets.variant_table import VariantTable
from sagetui.tui.widgets.verdict_table import VerdictTable

from ..conftest import fake_noise_floor
from .conftest import THEME, aio, screen_text, settle, tiny_config, wait_for


@pytest.fixture(autouse=True)
def _private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def logged(app: SageTUI) -> list[str]:
    """Every log line from now on (the Log tab's text, as written)."""
    lines: list[str] = []
    write = app.write_log

    def write_log(line: LogLine) -> None:
        lines.append(line.text)
        write(line)

    app.write_log = write_log  # type: ignore[method-assign]
    return lines


@aio
async def test_the_baseline_chosen_before_a_run_stays_at_complete(tmp_path: Path) -> None:
    # auto_shape: no shape on the command line, the console's usual start
    cfg = tiny_config(rounds=2, iterations=3, variants=2, auto_shape=True)
    app = SageTUI(config=cfg, theme_name=THEME, export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("v", "b")
        assert app.data.baseline == "slow"
        await pilot.press("r")
        # its end, not its running (a tiny run can start and end between two looks)
        await wait_for(pilot, lambda: not app.running and app.final_report is not None,
                       timeout=120, what="the run to end")
        await settle(pilot, app)
        assert app.data.status == "complete"
        assert app.final_report is not None and app.final_report.baseline == "slow"
        assert app.data.baseline == "slow"
        assert app.data.variants["ref"].verdict is not None  # judged against "slow"


@aio
async def test_after_calibrating_the_verdict_table_shows_the_new_threshold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_noise_floor(monkeypatch, 1.5)
    app = SageTUI(config=tiny_config(rounds=2, iterations=3), theme_name=THEME,
                  export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("a")
        # its outcome, not its running (a calibration can start and end between two looks)
        await wait_for(pilot, lambda: not app.running and len(calibration.entries()) == 1,
                       timeout=120, what="the calibration")
        await settle(pilot, app)
        verdict = app.data.variants["ref-again"].verdict
        assert verdict is not None and verdict["threshold_percent"] == 3.0
        assert verdict["threshold_source"] == "calibration"
        table = app.query_one(VerdictTable)
        assert "within ±3.00 % (calibrated: noise floor 1.500 %" in str(table.border_title)
        assert "3.00" in screen_text(app)
        # calibrating again asks first; "n" keeps the stored one
        await pilot.press("a")
        await pilot.pause()
        assert "Replace it" in screen_text(app) and not app.running
        await pilot.press("n")
        await pilot.pause()
        assert not app.running and len(calibration.entries()) == 1


@aio
async def test_a_noisy_calibration_is_refused_in_the_console(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_noise_floor(monkeypatch, 30.399)  # the noisy machine
    app = SageTUI(config=tiny_config(rounds=2, iterations=3), theme_name=THEME,
                  export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        lines = logged(app)
        await pilot.press("a")
        # its outcome, not its running: a calibration on a forked runner can start and end
        # between two looks
        await wait_for(pilot, lambda: any("too noisy" in line for line in lines), timeout=120,
                       what="the calibration's refusal")
        await wait_for(pilot, lambda: not app.running, timeout=30, what="the calibration's end")
        await settle(pilot, app)
        assert app.config.noise_floor_percent is None and calibration.entries() == {}


@aio
async def test_until_ci_while_idle_says_next_run_and_the_header_shows_the_target(
        tmp_path: Path) -> None:
    app = SageTUI(config=tiny_config(rounds=2, iterations=20, variants=2), theme_name=THEME,
                  export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        lines = logged(app)
        await pilot.press("u", "0", ".", "0", "1", "enter")  # a target it will not reach soon
        await pilot.pause()
        assert not app.running
        assert lines and "next run" in lines[-1] and not lines[-1].startswith("running")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.data.model.progress.round >= 0, timeout=60,
                       what="a round")
        header = state_line(app.data, app.context()).plain
        assert "until every 95 % CI < 0.01 %" in header and "at most 50 rounds" in header
        assert "/50" not in header  # the limit is not shown as the plan
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running, timeout=30, what="the stop")


@aio
async def test_a_run_with_every_variant_off_does_not_start(tmp_path: Path) -> None:
    app = SageTUI(config=tiny_config(), theme_name=THEME, export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        lines = logged(app)
        await pilot.press("t")  # the only variant off
        await pilot.press("r")
        await pilot.pause()
        assert not app.running and app.session is None and app.data.status == "idle"
        assert "every variant is off" in lines[-1]


@aio
async def test_the_two_speedups_are_labelled_apart(tmp_path: Path) -> None:
    app = SageTUI(config=tiny_config(rounds=2, iterations=3, variants=2), theme_name=THEME,
                  export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        variants = [str(c.label) for c in app.query_one(VariantTable).columns.values()]
        verdicts = [str(c.label) for c in app.query_one(VerdictTable).columns.values()]
        assert "p50 Δ %" in variants and "paired %" in verdicts
        assert not set(variants) & set(verdicts) - {"variant"}


@aio
async def test_calibrations_are_listed_and_cleared_from_the_console(tmp_path: Path) -> None:
    calibration.store_noise_floor(tiny_config(), 1.0, None, "cpu")
    app = SageTUI(config=tiny_config(), theme_name=THEME, export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("A")
        await pilot.pause()
        text = screen_text(app)
        assert "Stored calibrations" in text and "noise floor 1.000 %" in text
        await pilot.press("y")
        await pilot.pause()
        assert calibration.entries() == {}


@aio
async def test_a_and_p_before_a_run_take_the_backend_the_header_shows(tmp_path: Path,
                                                                     monkeypatch) -> None:
    """`sagetui` with no option on a CPU-only torch: the header names the reference backend
    and its shape, while `a` and `p` asked for a run first "so the backend and shape are known".
    No CUDA can run here (torch's own version file says so): the console's configuration is
    settled as a runner would settle it, and `a` calibrates at once."""
    from sagetui.cli.console import console_app
    from sagetui.cli.main import build_parser, run_config
    from sagetui.cli.run_options import no_cuda_here

    if no_cuda_here("auto") is None:
        pytest.skip("torch here is a CUDA build")
    monkeypatch.chdir(tmp_path)
    app = console_app(build_parser("").parse_args(["--recovery-dir", str(tmp_path)]),
                      run_config)
    assert app.run_control.config is not None and not app.run_control.config.auto
    assert app.editing.build is not None and not app.editing.build([]).auto  # the editor's
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert "backend reference" in screen_text(app)
        await pilot.press("a")
        await wait_for(pilot, lambda: app.running, what="the calibration's start")
        assert not [n for n in app._notifications if "Run once first" in n.message]
        await pilot.press("r")  # stopped: nothing stored
        await wait_for(pilot, lambda: not app.running, timeout=60, what="the stop")
