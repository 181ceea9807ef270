"""Clocks that time one attention call's leaf phases in a single pass.

CPU: a monotonic nanosecond clock read between phases.

GPU (docs/architecture.md, What is measured): CUDA events recorded on the legacy default
stream (SageAttention's kernels launch there; a side stream or a CUDA graph would time
nothing), one event between consecutive phases. A block of iterations is enqueued behind a
gate (`torch.cuda._sleep`) so the GPU queue stays ahead of the host, the stream is
synchronised once per block, and the events are read after. Warm-up calls never go through a
clock.
"""

from __future__ import annotations

import time
from typing import Any


class CpuClock:
    """Times each leaf with time.perf_counter_ns; one instance per call."""

    def __init__(self, leaves: list[str]) -> None:
        self.leaves = leaves
        self._t0 = 0
        self._last = 0
        self.times: dict[str, float] = {}

    def start(self) -> None:
        self._t0 = self._last = time.perf_counter_ns()

    def mark(self, phase: str) -> None:
        now = time.perf_counter_ns()
        self.times[phase] = (now - self._last) * 1e-9
        self._last = now

    def result(self) -> dict[str, float]:
        return dict(self.times)


class CudaEventClock:
    """Records one CUDA event at the start and one after each leaf, on the current stream.

    Events are read only after the caller synchronises: `result()` then turns consecutive
    event pairs into seconds.
    """

    def __init__(self, leaves: list[str], torch_mod: Any) -> None:
        self.leaves = leaves
        self._torch = torch_mod
        self._events: list[tuple[str, Any]] = []

    def start(self) -> None:
        ev = self._torch.cuda.Event(enable_timing=True)
        ev.record()
        self._events = [("", ev)]

    def mark(self, phase: str) -> None:
        ev = self._torch.cuda.Event(enable_timing=True)
        ev.record()
        self._events.append((phase, ev))

    def result(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for (_, a), (name, b) in zip(self._events, self._events[1:], strict=False):
            out[name] = a.elapsed_time(b) * 1e-3  # elapsed_time is in milliseconds
        return out


def gate_stream(torch_mod: Any, seconds: float, clock_hz: float) -> None:
    """Hold the current stream for about `seconds` so that the host can enqueue a whole block of
    iterations before the GPU reaches the first (nvbench's blocking-kernel idea)."""
    cycles = int(max(0.0, seconds) * clock_hz)
    if cycles > 0:
        torch_mod.cuda._sleep(cycles)
