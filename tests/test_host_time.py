"""What the user's model pays, on the CPU: the reference backend on a simulated device
(runner/timing.SimStream, its `host_us`/`device_us` knobs) whose host work and device work per
call are controlled, timed by the same gated path as a GPU's: host time, back-to-back time,
host-bound calls marked, a drained block detected and measured again, and `check` recomputing
the derived figures. A real runner process, real sleeps."""

from __future__ import annotations

import pytest

from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.host_time import bound_by, drained, host_bound, idle_s, typical
from sagetui.core.report.check import check_report
from sagetui.core.report.export import to_markdown
from sagetui.core.statistics.clocks import clock_note, cycle_medians
from sagetui.session.session import Session

TINY = Shape(heads=1, q_len=64, head_dim=64)


def test_idle_time_and_drained_queue_from_the_events_times() -> None:
    busy = [(0.0, 1.0), (1.0, 2.0), (2.000001, 3.0)]
    assert idle_s(busy) == pytest.approx(1e-6)
    assert not drained(busy)  # a microsecond between launches is a full queue
    gaps = [(0.0, 1e-3), (1.5e-3, 2.5e-3), (3e-3, 4e-3)]  # the host's pace: 0.5 ms idle each
    assert idle_s(gaps) == pytest.approx(1e-3)
    assert drained(gaps)
    assert not drained(gaps[:1]) and not drained([])


def test_host_bound_and_typical() -> None:
    assert host_bound(2e-3, 1e-3) and not host_bound(1e-3, 2e-3)
    assert host_bound(None, 1e-3) is None and bound_by(2e-3, 1e-3) == "host"
    assert bound_by(1e-3, 2e-3) == "GPU" and typical([3.0, 1.0, 2.0]) == 2.0
    assert typical([]) is None


def test_clock_note_only_when_clocks_differ_beyond_the_half_width() -> None:
    tel = {0: {"available": True, "sm_clock_mhz": {"mean": 1980.0}}, 1: {"available": False}}
    assert cycle_medians({0: 1e-3, 1: 1e-3}, tel) == {0: pytest.approx(1.98e6)}
    verdict = {"ci_low_percent": 1.0, "ci_high_percent": 2.0}  # half-width 0.5 %
    cycles = {"estimate_percent": 1.8, "ci_low_percent": 1.2, "ci_high_percent": 2.4}
    base = {"mean_sm_clock_mhz": 1960.0, "throttle_reasons": ["sw_power_cap"]}
    note = clock_note("b", {"mean_sm_clock_mhz": 1980.0}, base, verdict, cycles)
    assert note == ("b ran 1.0 % higher SM clocks under sw_power_cap; "
                    "in cycles: +1.80 [+1.20, +2.40]")
    assert clock_note("b", {"mean_sm_clock_mhz": 1961.0}, base, verdict, cycles) is None
    assert clock_note("b", None, base, verdict, cycles) is None  # no telemetry: nothing said


def test_host_bound_call_marked_and_a_drained_block_redone() -> None:
    # a: the device's work (20 ms) far above the host's (the reference's own ~1 ms): GPU-bound.
    # b: 20 ms of host work per call over 1 ms of device work: host-bound; its first block's
    # gate (from one warm-up call, capped at 50 ms) is short of the 4 x 19 ms the host needs,
    # so the queue drains, and the block is measured again with a gate from its own host time.
    cfg = RunConfig(shape=TINY, warmup=1, rounds=2, iterations=8, variants=[
        VariantSpec.parse("a=reference[device_us=20000]"),
        VariantSpec.parse("b=reference[host_us=20000,device_us=1000]")])
    report = Session(cfg).run()
    assert report.status == "complete", report.status_detail
    a, b = report.variants
    assert a.host_bound is False and b.host_bound is True
    assert a.timing.p50_s > 0.019 and b.timing.p50_s < 0.01  # GPU time: the device's work
    assert b.host_s > 0.019 and a.host_s < 0.01
    # back to back, each call costs the larger of the two
    assert a.back_to_back_s > 0.019 and b.back_to_back_s > 0.019
    assert len(b.host_times_s) == len(b.back_to_back_times_s) == 4  # one per kept block
    assert b.redone_blocks >= 1  # (kept drained after its redos: drained_blocks, not here)
    assert check_report(report) == []
    md = to_markdown(report)
    assert "| host ms | b2b ms | bound | redone blocks |" in md and "| HOST |" in md
    tampered = report.model_copy(update={"variants": [
        a, b.model_copy(update={"host_bound": False, "back_to_back_s": 1.0})]})
    paths = {m.path for m in check_report(tampered)}
    assert paths == {"$.variants[1].host_bound", "$.variants[1].back_to_back_s"}
