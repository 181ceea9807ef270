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

import queue
import threading
import time
from typing import Any

from sagetui.core import affinity

# The SM clock a gate's cycles are counted at when NVML gives none (and the simulated stream's)
DEFAULT_CLOCK_HZ = 1.5e9


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

    def span(self, origin: Any) -> tuple[float, float]:
        """(start, end) of this call in seconds after the event `origin`, on the device's
        clock (after the synchronise): the drained-queue test's input (core/host_time.py)."""
        return (origin.elapsed_time(self._events[0][1]) * 1e-3,
                origin.elapsed_time(self._events[-1][1]) * 1e-3)

    @property
    def first_event(self) -> Any:
        return self._events[0][1]

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


class SimEvent:
    """A CUDA event's stand-in on a SimStream: stamped with perf_counter when the stream's
    thread reaches it."""

    def __init__(self, stream: SimStream, enable_timing: bool = True) -> None:
        self.stream = stream
        self.t: float | None = None

    def record(self) -> None:
        self.stream.put(self._stamp)

    def _stamp(self) -> None:
        self.t = time.perf_counter()

    def query(self) -> bool:
        """Whether the stream has reached it (torch.cuda.Event.query)."""
        return self.t is not None

    def elapsed_time(self, other: SimEvent) -> float:
        assert self.t is not None and other.t is not None, "read after synchronize()"
        return (other.t - self.t) * 1e3  # milliseconds, as torch's


class SimStream:
    """A CUDA stream's stand-in on the CPU, for tests of the timed path (the reference backend's
    `host_us`/`device_us` knobs): a thread that runs what is enqueued in order, device work as
    sleeps and events as perf_counter stamps. It answers the torch.cuda calls the engine makes
    on a stream (`Event`, `_sleep`, `synchronize`) as `stream.cuda`, so the gated path, its
    host time, the drained-queue test and the back-to-back loop run on it unchanged."""

    def __init__(self) -> None:
        self._q: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.cuda = self

    def put(self, fn: Any) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sagetui-sim-stream",
                                            daemon=True)
            self._thread.start()
        self._q.put(fn)

    def _run(self) -> None:
        affinity.release()  # the simulated GPU: off --affinity's CPUs, as a real one is
        while True:
            fn = self._q.get()
            try:
                fn()
            finally:
                self._q.task_done()

    def Event(self, enable_timing: bool = True) -> SimEvent:  # noqa: N802 - torch.cuda's name
        return SimEvent(self, enable_timing)

    def work(self, seconds: float) -> None:
        """Device work of `seconds`, after what is already queued."""
        if seconds > 0:
            self.put(lambda: time.sleep(seconds))

    def _sleep(self, cycles: int) -> None:
        self.work(cycles / DEFAULT_CLOCK_HZ)

    def synchronize(self) -> None:
        self._q.join()
