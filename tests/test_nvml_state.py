"""The environment of a measurement (docs/reports.md, "The GPU's state"): runner/nvml.py's queries
of persistence mode, ECC, MIG, application clocks and other processes answer None where NVML cannot,
and never raise. There is no GPU here: NVML is really absent or failing, and where values are
decoded a stand-in module plays NVML (marked so below)."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from sagetui.runner import nvml


class NVMLError(Exception):
    pass


def _raising(*args: Any) -> Any:
    raise NVMLError("Not Supported")


def failing_nvml() -> SimpleNamespace:
    """Mocked (no GPU here): an NVML whose every device query fails, as on a GPU that supports
    none of them or a container without permission."""
    names = ("nvmlDeviceGetPersistenceMode", "nvmlDeviceGetEccMode", "nvmlDeviceGetMigMode",
             "nvmlDeviceGetApplicationsClock", "nvmlDeviceGetDefaultApplicationsClock",
             "nvmlDeviceGetComputeRunningProcesses")
    return SimpleNamespace(NVML_FEATURE_ENABLED=1, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
                           **{n: _raising for n in names})


def h200_nvml(own_pid: int) -> SimpleNamespace:
    """Mocked (no GPU here): NVML's answers on an H200 with persistence and ECC on, MIG off,
    default application clocks, and two other processes beside the runner (one of which the
    driver gives no memory for)."""
    clocks = {1: 1980, 2: 3201}
    procs = [SimpleNamespace(pid=own_pid, usedGpuMemory=2**30),
             SimpleNamespace(pid=1, usedGpuMemory=3 * 2**29),
             SimpleNamespace(pid=2, usedGpuMemory=None)]
    return SimpleNamespace(
        NVML_FEATURE_ENABLED=1, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
        nvmlDeviceGetPersistenceMode=lambda h: 1, nvmlDeviceGetEccMode=lambda h: (1, 1),
        nvmlDeviceGetMigMode=lambda h: (0, 0),
        nvmlDeviceGetApplicationsClock=lambda h, c: clocks[c],
        nvmlDeviceGetDefaultApplicationsClock=lambda h, c: clocks[c],
        nvmlDeviceGetComputeRunningProcesses=lambda h: procs)


def test_a_failing_nvml_gives_none_for_every_field() -> None:
    state = nvml.measurement_state(failing_nvml(), object(), os.getpid())
    assert state == {"persistence_mode": None, "ecc": None, "mig": None,
                     "application_clocks": None, "other_processes": None}


def test_the_state_is_decoded_and_the_runner_itself_is_not_another_process() -> None:
    state = nvml.measurement_state(h200_nvml(4242), object(), 4242)
    assert state["persistence_mode"] is True and state["ecc"] is True and state["mig"] is False
    assert state["application_clocks"] == {"sm_mhz": 1980, "mem_mhz": 3201,
                                           "default_sm_mhz": 1980, "default_mem_mhz": 3201}
    # two others; their memory is unknown as a whole since the driver withheld one's
    assert state["other_processes"] == {"count": 2, "memory_bytes": None}


def test_without_pynvml_the_gpu_facts_say_why_and_the_state_is_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    facts = nvml.gpu_facts(0, "58e8b1e0-0000", os.getpid())
    assert facts["state"] is None and "nvidia-ml-py is not importable" in facts["nvml"]


def test_with_the_real_pynvml_and_no_driver_the_state_is_none() -> None:
    pytest.importorskip("pynvml")
    try:
        with nvml.nvml_open():
            pytest.skip("NVML works here: this test is for a machine without a driver")
    except nvml.NvmlUnavailable:
        pass
    facts = nvml.gpu_facts(0, None, os.getpid())
    assert facts["state"] is None and facts["nvml"].startswith("unavailable: NVML unavailable")


def test_the_device_is_found_by_uuid_first_then_by_index() -> None:
    # Mocked (no GPU here): which handle call NVML got
    calls: list[tuple[str, object]] = []
    fake = SimpleNamespace(
        nvmlDeviceGetHandleByUUID=lambda u: calls.append(("uuid", u)) or "by-uuid",
        nvmlDeviceGetHandleByIndex=lambda i: calls.append(("index", i)) or "by-index")
    assert nvml.device_handle(fake, 3, "58e8b1e0") == "by-uuid"
    assert calls == [("uuid", "GPU-58e8b1e0")]
    fake.nvmlDeviceGetHandleByUUID = _raising
    assert nvml.device_handle(fake, 3, "58e8b1e0") == "by-index"
    assert nvml.device_handle(fake, 1, None) == "by-index"
