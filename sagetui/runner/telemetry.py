"""NVML telemetry around each block of timed iterations (nvidia-ml-py, imported lazily).

    sampler = TelemetrySampler(device_index)
    sampler.start()          # before the block is enqueued
    ...                      # enqueue, synchronise
    summary = sampler.stop() # after the synchronise: the block's summary dict
    sampler.close()

A background thread reads SM and memory clocks, temperature, power and the clock-event
(throttle) reasons every interval_s (20 ms by default); start() and stop() each also read once,
so a block shorter than the interval still has two readings. The thread spends its time in
NVML calls, which ctypes makes without the GIL, and sleeps on an Event in between, so it does
not delay the launch loop the way a busy Python thread does (docs/architecture.md, Processes).

power_w is nvmlDeviceGetPowerUsage, which recent GPUs average over about a second: a short
block inherits some of the previous block's power (seen on an H200: a 0.3 s idle block right
after a matmul block read 550-690 W). Clocks and temperature are instantaneous.

Nothing here raises: without nvidia-ml-py, the NVML library, a driver or the device, every
summary is {"available": False, "reason": <what failed>}. Summaries are built by
sagetui.core.telemetry, which the UI uses too.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from sagetui.core import affinity
from sagetui.core.telemetry import (
    CLOCK_EVENT_REASONS,
    decode_reasons,
    summarize_samples,
    unavailable,
)
from sagetui.runner.nvml import NvmlUnavailable, close_nvml, describe, open_nvml

DEFAULT_INTERVAL_S = 0.02

# pynvml constant suffix for each reason, and NVML's documented bit as a last resort for a
# pynvml too old to name it (HwPowerBrakeSlowdown came later than the others).
_REASON_CONSTANTS = {
    "gpu_idle": ("GpuIdle", 0x1),
    "applications_clocks_setting": ("ApplicationsClocksSetting", 0x2),
    "sw_power_cap": ("SwPowerCap", 0x4),
    "hw_slowdown": ("HwSlowdown", 0x8),
    "sync_boost": ("SyncBoost", 0x10),
    "sw_thermal_slowdown": ("SwThermalSlowdown", 0x20),
    "hw_thermal_slowdown": ("HwThermalSlowdown", 0x40),
    "hw_power_brake_slowdown": ("HwPowerBrakeSlowdown", 0x80),
    "display_clock_setting": ("DisplayClockSetting", 0x100),
}
assert tuple(_REASON_CONSTANTS) == CLOCK_EVENT_REASONS


def reason_bits(nvml: Any) -> dict[str, int]:
    """Reason name -> bit, from pynvml's clock-event constants, else its older throttle ones."""
    bits = {}
    for name, (suffix, documented) in _REASON_CONSTANTS.items():
        value = getattr(nvml, f"nvmlClocksEventReason{suffix}", None)
        if value is None:
            value = getattr(nvml, f"nvmlClocksThrottleReason{suffix}", None)
        bits[name] = int(value) if value is not None else documented
    return bits


class TelemetrySampler:
    """Samples one GPU through NVML; see the module docstring for the protocol.

    The device is pci_bus_id when given (the unambiguous choice), else CUDA device
    device_index mapped through CUDA_VISIBLE_DEVICES when that names devices (NVML ignores the
    variable and counts every GPU), else NVML index device_index.
    """

    def __init__(
        self,
        device_index: int = 0,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        pci_bus_id: str | None = None,
    ) -> None:
        if not interval_s > 0:
            raise ValueError("interval_s must be > 0")
        self.device_index = device_index
        self.interval_s = interval_s
        self.pci_bus_id = pci_bus_id
        self._nvml: Any = None
        self._handle: Any = None
        self._reason: str | None = None  # why NVML is unusable; None until tried, or when fine
        self._opened = False
        self._bits: dict[str, int] = {}
        self._reasons_fn: Any = None
        self._unsupported: set[str] = set()
        self._samples: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._thread_error: str | None = None

    # -- NVML -----------------------------------------------------------------------------------
    def open(self) -> str | None:
        """Initialise NVML once; returns None when usable, else the reason it is not."""
        if self._opened:
            return self._reason
        self._opened = True
        try:
            pynvml = open_nvml()
        except NvmlUnavailable as exc:
            self._reason = str(exc)
            return self._reason
        self._nvml = pynvml
        try:
            self._handle = self._resolve_handle(pynvml)
        except Exception as exc:
            self._reason = f"NVML cannot open the GPU ({describe(exc)})"
            self._shutdown()
            return self._reason
        self._bits = reason_bits(pynvml)
        self._reasons_fn = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        return None

    def _resolve_handle(self, nvml: Any) -> Any:
        if self.pci_bus_id:
            return nvml.nvmlDeviceGetHandleByPciBusId(self.pci_bus_id)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
        entries = [e.strip() for e in visible.split(",") if e.strip()] if visible else []
        if 0 <= self.device_index < len(entries):
            entry = entries[self.device_index]
            if entry.isdigit():
                return nvml.nvmlDeviceGetHandleByIndex(int(entry))
            if entry.startswith(("GPU-", "MIG-")):
                return nvml.nvmlDeviceGetHandleByUUID(entry)
        return nvml.nvmlDeviceGetHandleByIndex(self.device_index)

    def _shutdown(self) -> None:
        if self._nvml is not None:
            close_nvml(self._nvml)
        self._nvml = None
        self._handle = None

    @property
    def reason(self) -> str | None:
        """Why telemetry is unavailable (None while usable); opens NVML if not yet tried."""
        return self.open()

    @property
    def available(self) -> bool:
        return self.open() is None

    # -- one reading ----------------------------------------------------------------------------
    def _field(self, name: str, read: Any) -> float | None:
        if name in self._unsupported:
            return None
        try:
            return float(read())
        except self._nvml.NVMLError_NotSupported:
            self._unsupported.add(name)  # permanent for this device: stop asking
            return None
        except self._nvml.NVMLError:
            return None  # transient (e.g. a busy power sensor): skip this reading

    def _reason_mask(self) -> int | None:
        nvml, h = self._nvml, self._handle
        if self._reasons_fn is not None:
            try:
                return int(self._reasons_fn(h))
            except (nvml.NVMLError_FunctionNotFound, nvml.NVMLError_NotSupported):
                # A driver older than the clock-event API: use the throttle call from now on.
                self._reasons_fn = None
            except nvml.NVMLError:
                return None
        try:
            return int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))
        except nvml.NVMLError:
            return None

    def read(self) -> dict[str, Any] | None:
        """One sample now, or None when NVML is unavailable."""
        if self.open() is not None:
            return None
        nvml, h = self._nvml, self._handle
        mask = self._reason_mask()
        power_mw = self._field("power_w", lambda: nvml.nvmlDeviceGetPowerUsage(h))
        return {
            "t_s": time.monotonic(),
            "sm_clock_mhz": self._field(
                "sm_clock_mhz", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)
            ),
            "mem_clock_mhz": self._field(
                "mem_clock_mhz", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)
            ),
            "temperature_c": self._field(
                "temperature_c",
                lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU),
            ),
            "power_w": None if power_mw is None else power_mw / 1000.0,  # NVML reports mW
            "throttle_reasons": [] if mask is None else decode_reasons(mask, self._bits),
        }

    # -- a block --------------------------------------------------------------------------------
    def _take(self) -> None:
        s = self.read()
        if s is not None:
            with self._lock:
                self._samples.append(s)

    def _off_timed_cpus(self) -> None:
        affinity.release()  # off --affinity's CPUs, which the timing thread has alone
        self._loop()

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                self._take()
        except Exception as exc:  # never let a sampling bug reach the timing loop
            self._thread_error = describe(exc)

    def start(self) -> None:
        """Begin a block: one reading now, then one every interval_s until stop()."""
        if self._thread is not None:
            self.stop()
        with self._lock:
            self._samples = []
        self._thread_error = None
        if self.open() is not None:
            return
        try:
            self._take()
        except Exception as exc:
            self._thread_error = describe(exc)
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._off_timed_cpus, name="sagetui-telemetry",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        """End the block: one last reading, and the block's summary (never raises)."""
        reason = self.open()
        if reason is not None:
            return unavailable(reason)
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=max(1.0, 10 * self.interval_s))
            self._thread = None
        if self._thread_error is None:
            try:
                self._take()
            except Exception as exc:
                self._thread_error = describe(exc)
        with self._lock:
            samples, self._samples = self._samples, []
        if not samples:
            why = self._thread_error or "the sampler was not started"
            return unavailable(f"no telemetry samples ({why})")
        return summarize_samples(samples)

    def samples(self) -> list[dict[str, Any]]:
        """The current block's raw samples so far (a copy)."""
        with self._lock:
            return list(self._samples)

    def close(self) -> None:
        """Stop any block and release NVML; a later start() opens it again."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=1.0)
            self._thread = None
        self._shutdown()
        self._opened, self._reason = False, None

    def __enter__(self) -> TelemetrySampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
