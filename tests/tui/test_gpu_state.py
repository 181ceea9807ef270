"""The GPU's state beside a measurement (issue 15, item 5): what the runner's ready event
carries (runner/nvml.py's measurement_state) reaches the report's environment and the
console's header, which relates each round's SM clock to the application clock.

No GPU here, so a state is injected where the runner fills it (the ready event's gpu info):
into a real H200 report (sample_results/h200_backends.json, real per-round telemetry and, since
its re-recording, the runner's own state) for the header, and into a run model fed synthetic
events for the report path."""

from __future__ import annotations

import json
from pathlib import Path

from sagetui.core import events as ev
from sagetui.core.report.io import load_report, save_report
from sagetui.core.run.assemble import build_report
from sagetui.core.run.fold import apply
from sagetui.tui.source import live_source, saved_source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.status_panel import environment_line, latest_telemetry

from .conftest import ROOT, aio, screen_text, settle, tiny_config, viewer

H200 = ROOT / "sample_results" / "h200_backends.json"
STATE = {"persistence_mode": True, "ecc": True, "mig": False,
         "application_clocks": {"sm_mhz": 1980, "mem_mhz": 3201, "default_sm_mhz": 1980,
                                "default_mem_mhz": 3201},
         "other_processes": {"count": 2, "memory_bytes": 3 * 2**30}}
CTX = ViewContext(selected=None, series=(), error_colour="red", mark_colour="white",
                  running=False)


def h200_with_state(tmp_path: Path, state: dict) -> Path:
    d = json.loads(H200.read_text())
    d["environment"]["gpu"]["state"] = state  # where the runner's gpu info puts it
    path = tmp_path / "h200_state.json"
    path.write_text(json.dumps(d))
    return path


def test_the_header_line_says_the_state_and_this_rounds_clock_against_it(tmp_path) -> None:
    data = saved_source(load_report(h200_with_state(tmp_path, STATE)), "h200")
    r, tel = latest_telemetry(data)  # the report's real last round
    share = 100 * tel["sm_clock_mhz"]["mean"] / 1980
    line = environment_line(data, CTX)
    assert line is not None
    assert line.plain == ("GPU state: persistence on · ECC on · MIG off · app clocks SM 1980 / "
                          f"mem 3201 MHz (default) · round {r + 1} SM at {share:.0f} % of it · "
                          "2 other processes on the GPU (3.0 GiB)")


def test_a_clock_set_away_from_its_default_and_unknown_fields(tmp_path) -> None:
    state = {"persistence_mode": None, "ecc": None, "mig": True,
             "application_clocks": {"sm_mhz": 1500, "mem_mhz": 3201, "default_sm_mhz": 1980,
                                    "default_mem_mhz": 3201},
             "other_processes": {"count": 0, "memory_bytes": 0}}
    data = saved_source(load_report(h200_with_state(tmp_path, state)), "h200")
    text = environment_line(data, CTX).plain  # type: ignore[union-attr]
    assert text.startswith("GPU state: MIG on · app clocks SM 1500 / mem 3201 MHz (default "
                           "1980 / 3201)")
    assert "persistence" not in text and "ECC" not in text  # unknown: not guessed
    assert text.endswith("no other process on the GPU")
    nothing = {k: None for k in STATE}
    data = saved_source(load_report(h200_with_state(tmp_path, nothing)), "h200")
    assert environment_line(data, CTX).plain == "GPU state: NVML did not say"  # type: ignore


def test_reports_without_a_state_and_cpu_runs_show_no_line(tmp_path) -> None:
    # the H200 recordings now carry the runner's state (it is said); the same report as one
    # recorded before the state was (no state block) says nothing
    recorded = environment_line(saved_source(load_report(H200), "h200"), CTX)
    assert recorded is not None and recorded.plain.startswith("GPU state: persistence on")
    d = json.loads(H200.read_text())
    del d["environment"]["gpu"]["state"]
    (tmp_path / "h200_no_state.json").write_text(json.dumps(d))
    before = saved_source(load_report(tmp_path / "h200_no_state.json"), "h200")
    assert environment_line(before, CTX) is None
    live = live_source(tiny_config())
    apply(live.model, ev.Ready(input_sha256="0" * 64, device="cpu", gpu=None))
    assert environment_line(live, CTX) is None


def test_the_ready_events_state_is_in_the_live_header_and_the_report(tmp_path) -> None:
    live = live_source(tiny_config())
    apply(live.model, ev.Ready(input_sha256="0" * 64, device="cuda:0",
                               gpu={"name": "NVIDIA H200", "state": STATE}))
    assert "2 other processes" in environment_line(live, CTX).plain  # type: ignore[union-attr]
    from tests.test_check import _made_model

    m = _made_model()
    apply(m, ev.Ready(input_sha256="0" * 64, device="cuda:0",
                      gpu={"name": "NVIDIA H200", "state": STATE}))
    saved = save_report(build_report(m), tmp_path / "r.json")
    assert load_report(saved).environment["gpu"]["state"] == STATE  # type: ignore[index]


@aio
async def test_the_console_shows_the_state_in_its_header(tmp_path: Path) -> None:
    app = viewer(h200_with_state(tmp_path, STATE))
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        assert "GPU state: persistence on · ECC on · MIG off" in text
        assert "2 other processes on the GPU" in text
