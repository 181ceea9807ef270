"""The call the user makes, timed on a simulated stream (runner/timing.SimStream): its host time
leaves out the first call after a pause, which the harness's synchronise causes, not the call
(runner/call_times.py; measured on an H100 by benchmarks/host_noise_gpu.py)."""

from __future__ import annotations

import time

from sagetui.runner.call_times import CallTimer
from sagetui.runner.timing import SimStream

HOST_S = 2e-4  # each call's enqueue
FIRST_S = 2e-2  # the first call's after a synchronise
GPU_S = 1e-3


class PausedStream(SimStream):
    """Remembers a synchronise: the next call pays FIRST_S of host time."""

    def __init__(self) -> None:
        super().__init__()
        self.paused = True

    def synchronize(self) -> None:
        super().synchronize()
        self.paused = True


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_host_time_leaves_out_the_first_call_after_a_synchronise() -> None:
    dev = PausedStream()

    def call() -> None:
        spin(FIRST_S if dev.paused else HOST_S)
        dev.paused = False
        dev.work(GPU_S)

    got = CallTimer(clock_hz=1.5e9).measure(dev, "v", call, host_hint=HOST_S, gpu_hint=GPU_S)
    assert got.calls == 10  # 10 ms of GPU time at 1 ms a call
    # with the first call inside, the block's host time would be (20 + 9 x 0.2) / 10 = 2.2 ms
    assert HOST_S <= got.host_s < 5 * HOST_S, got
    # back to back from an idle GPU, synchronised once: the first call's cost is the loop's
    assert got.back_to_back_s >= (FIRST_S + 9 * HOST_S) / 10 * 0.9, got
    assert got.gpu_s >= GPU_S * 0.9, got
