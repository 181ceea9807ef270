"""Telemetry on a machine without a GPU, the pure summaries, and the sampler against a fake NVML."""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import pytest

from sagetui.core.telemetry import (
    CLOCK_EVENT_REASONS,
    METRICS,
    decode_reasons,
    merge_blocks,
    summarize_samples,
    unavailable,
)
from sagetui.runner.telemetry import TelemetrySampler, reason_bits

# --- the sampler here: no GPU, never raises -------------------------------------------------


def _has_nvml() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:
        return False


@pytest.mark.skipif(_has_nvml(), reason="this machine has a working NVML")
def test_sampler_without_gpu_is_unavailable_with_reason() -> None:
    with TelemetrySampler(0, interval_s=0.005) as s:
        s.start()
        time.sleep(0.02)
        summary = s.stop()
        assert summary["available"] is False
        assert "NVML" in summary["reason"] or "nvidia-ml-py" in summary["reason"]
        assert summary["samples"] == 0
        assert s.read() is None
        assert s.available is False and s.reason == summary["reason"]
        # stop() without start() and a second start() are just as quiet
        assert s.stop()["available"] is False
        s.start()
        s.start()
        assert s.stop()["available"] is False


def test_sampler_without_nvidia_ml_py(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    s = TelemetrySampler()
    s.start()
    summary = s.stop()
    assert summary["available"] is False
    assert "nvidia-ml-py is not importable" in summary["reason"]
    s.close()


# --- the pure summaries ---------------------------------------------------------------------


def _sample(sm: float, mem: float | None, temp: float, power: float, *reasons: str) -> dict:
    return {
        "t_s": 0.0,
        "sm_clock_mhz": sm,
        "mem_clock_mhz": mem,
        "temperature_c": temp,
        "power_w": power,
        "throttle_reasons": list(reasons),
    }


def test_summarize_min_mean_max_and_reason_union() -> None:
    samples = [
        _sample(1980, None, 40, 300.0, "gpu_idle"),
        _sample(1900, None, 42, 500.0, "sw_power_cap"),
        _sample(1755, None, 45, 700.0, "sw_thermal_slowdown", "sw_power_cap"),
    ]
    s = summarize_samples(samples)
    assert s["available"] is True and s["reason"] is None and s["samples"] == 3
    assert s["sm_clock_mhz"] == {"min": 1755.0, "mean": pytest.approx(1878.333333), "max": 1980.0}
    assert s["temperature_c"] == {"min": 40.0, "mean": pytest.approx(42.333333), "max": 45.0}
    assert s["power_w"] == {"min": 300.0, "mean": 500.0, "max": 700.0}
    assert s["mem_clock_mhz"] is None  # not reported by the device
    assert s["throttle_reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]  # no gpu_idle


def test_summarize_nothing_is_unavailable() -> None:
    s = summarize_samples([])
    assert s["available"] is False and s["reason"]
    assert unavailable("x")["reason"] == "x"


def test_merge_blocks_equals_summarising_all_samples() -> None:
    a = [_sample(1980, 3201, 40, 300.0, "gpu_idle"), _sample(1900, 3201, 41, 400.0)]
    b = [_sample(1800, 3201, 44, 650.0, "hw_slowdown")] * 3
    merged = merge_blocks([summarize_samples(a), summarize_samples(b)])
    whole = summarize_samples(a + b)
    assert merged["samples"] == whole["samples"] == 5
    for m in METRICS:
        assert merged[m]["min"] == whole[m]["min"]
        assert merged[m]["max"] == whole[m]["max"]
        assert merged[m]["mean"] == pytest.approx(whole[m]["mean"])
    assert merged["throttle_reasons"] == whole["throttle_reasons"] == ["hw_slowdown"]


def test_merge_skips_blocks_without_telemetry() -> None:
    good = summarize_samples([_sample(1980, 3201, 40, 300.0)])
    merged = merge_blocks([{}, None, unavailable("NVML unavailable (x)"), good])
    assert merged["available"] is True and merged["samples"] == 1
    none = merge_blocks([{}, unavailable("NVML unavailable (x)"), {"available": False}])
    assert none == unavailable("NVML unavailable (x)")
    assert merge_blocks([])["available"] is False


def test_summaries_fit_the_report_model() -> None:
    report = pytest.importorskip("sagetui.core.report.model")
    s = summarize_samples([_sample(1980, None, 40, 300.0, "sw_power_cap")])
    report.Telemetry.model_validate(s)
    report.Telemetry.model_validate(merge_blocks([s, s]))
    report.Telemetry.model_validate(unavailable("no GPU"))


def test_decode_reasons() -> None:
    bits = {name: 1 << i for i, name in enumerate(CLOCK_EVENT_REASONS)}
    assert decode_reasons(0, bits) == []
    assert decode_reasons(0x1 | 0x4 | 0x40, bits) == [
        "gpu_idle",
        "sw_power_cap",
        "hw_thermal_slowdown",
    ]
    assert decode_reasons(0x100 | 0x1000, bits) == ["display_clock_setting", "bit_0x1000"]


def test_reason_bits_come_from_pynvml_constants() -> None:
    pynvml = pytest.importorskip("pynvml")
    bits = reason_bits(pynvml)
    assert list(bits) == list(CLOCK_EVENT_REASONS)
    assert bits["sw_power_cap"] == pynvml.nvmlClocksEventReasonSwPowerCap
    assert bits["hw_power_brake_slowdown"] == pynvml.nvmlClocksThrottleReasonHwPowerBrakeSlowdown
    # An old pynvml with throttle names only, and one missing a reason entirely.
    old = types.SimpleNamespace(nvmlClocksThrottleReasonSwPowerCap=0x4)
    assert reason_bits(old)["sw_power_cap"] == 0x4
    assert reason_bits(old)["hw_power_brake_slowdown"] == 0x80


# --- the sampler against a fake NVML: thread, units, fallbacks -------------------------------


class _NVMLError(Exception):
    pass


class _NotSupported(_NVMLError):
    pass


class _FunctionNotFound(_NVMLError):
    pass


def _fake_nvml(*, event_api: bool) -> types.ModuleType:
    m: Any = types.ModuleType("pynvml")
    m.NVMLError = _NVMLError
    m.NVMLError_NotSupported = _NotSupported
    m.NVMLError_FunctionNotFound = _FunctionNotFound
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM, m.NVML_TEMPERATURE_GPU = 1, 2, 0
    for i, name in enumerate(
        [
            "GpuIdle",
            "ApplicationsClocksSetting",
            "SwPowerCap",
            "HwSlowdown",
            "SyncBoost",
            "SwThermalSlowdown",
            "HwThermalSlowdown",
            "HwPowerBrakeSlowdown",
            "DisplayClockSetting",
        ]
    ):
        setattr(m, f"nvmlClocksThrottleReason{name}", 1 << i)
    m.calls = {"init": 0, "shutdown": 0, "throttle": 0}
    m.tick = 0

    def init() -> None:
        m.calls["init"] += 1

    def shutdown() -> None:
        m.calls["shutdown"] += 1

    def clock(h: str, kind: int) -> int:
        if kind == 2:
            raise _NotSupported("mem clock")
        m.tick += 1
        return 1900 if m.tick % 2 else 1700

    def throttle(h: str) -> int:
        m.calls["throttle"] += 1
        return 0x1 | 0x4  # idle + power cap

    def events(h: str) -> int:
        raise _FunctionNotFound("old driver")

    m.nvmlInit, m.nvmlShutdown = init, shutdown
    m.nvmlDeviceGetHandleByIndex = lambda i: f"gpu{i}"
    m.nvmlDeviceGetClockInfo = clock
    m.nvmlDeviceGetTemperature = lambda h, s: 55
    m.nvmlDeviceGetPowerUsage = lambda h: 612_500  # milliwatts
    m.nvmlDeviceGetCurrentClocksThrottleReasons = throttle
    if event_api:
        m.nvmlDeviceGetCurrentClocksEventReasons = events
    return m


@pytest.mark.parametrize("event_api", [True, False])
def test_sampler_with_fake_nvml(monkeypatch: pytest.MonkeyPatch, event_api: bool) -> None:
    fake = _fake_nvml(event_api=event_api)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    s = TelemetrySampler(0, interval_s=0.002)
    s.start()
    time.sleep(0.05)
    summary = s.stop()
    assert summary["available"] is True
    assert summary["samples"] >= 3  # start, the thread, stop
    assert summary["sm_clock_mhz"]["min"] == 1700 and summary["sm_clock_mhz"]["max"] == 1900
    assert summary["mem_clock_mhz"] is None  # NotSupported: reported as missing
    assert summary["temperature_c"] == {"min": 55.0, "mean": 55.0, "max": 55.0}
    assert summary["power_w"]["mean"] == pytest.approx(612.5)
    assert summary["throttle_reasons"] == ["sw_power_cap"]
    assert fake.calls["throttle"] >= 3  # the clock-event call fell back to the throttle one
    s.start()
    assert s.stop()["samples"] >= 2  # a block shorter than the interval still has two
    s.close()
    assert fake.calls == {"init": 1, "shutdown": 1, "throttle": fake.calls["throttle"]}


def test_sampler_maps_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_nvml(event_api=True)
    fake.nvmlDeviceGetHandleByUUID = lambda u: f"uuid:{u}"
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,GPU-abc")
    a, b = TelemetrySampler(0), TelemetrySampler(1)
    assert a.available and b.available
    assert (a._handle, b._handle) == ("gpu3", "uuid:GPU-abc")


def test_sampler_reports_init_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_nvml(event_api=True)

    def boom() -> None:
        raise _NVMLError("Driver Not Loaded")

    fake.nvmlInit = boom
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    s = TelemetrySampler()
    s.start()
    summary = s.stop()
    assert summary["available"] is False
    assert summary["reason"] == "NVML unavailable (_NVMLError: Driver Not Loaded)"
