"""The call the user makes, timed on a simulated stream (runner/timing.SimStream): its host time
leaves out the slow calls after a pause, which the harness's synchronise causes, not the call
(runner/call_times.py; measured on an H100 by benchmarks/host_noise_gpu.py)."""

from __future__ import annotations

import time

from sagetui.runner.call_times import CallTimer
from sagetui.runner.timing import SimStream

HOST_S = 2e-4  # each call's enqueue
FIRST_S = 2e-2  # the first call's after a synchronise
GPU_S = 1e-3


class CountingStream(SimStream):
    """Counts the calls since its last synchronise (`since`): what a call's host time depends on
    here, as on an H100 (benchmarks/host_noise_gpu.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.since = 0

    def synchronize(self) -> None:
        super().synchronize()
        self.since = 0


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_host_time_leaves_out_the_first_call_after_a_synchronise() -> None:
    dev = CountingStream()

    def call() -> None:
        spin(FIRST_S if dev.since == 0 else HOST_S)  # the first call after a synchronise
        dev.since += 1
        dev.work(GPU_S)

    got = CallTimer(clock_hz=1.5e9).measure(dev, "v", call, host_hint=HOST_S, gpu_hint=GPU_S)
    assert got.calls == 10  # 10 ms of GPU time at 1 ms a call
    # with the first call inside, the block's host time would be (20 + 9 x 0.2) / 10 = 2.2 ms
    assert HOST_S <= got.host_s < 5 * HOST_S, got
    # back to back from an idle GPU, synchronised once: the first call's cost is the loop's
    assert got.back_to_back_s >= (FIRST_S + 9 * HOST_S) / 10 * 0.9, got
    assert got.gpu_s >= GPU_S * 0.9, got


# the calls after a synchronise pay 10, 2 and 1.3 times HOST_LONG_S, then 1 (the shape measured
# on an H100 at 37,810 tokens: benchmarks/host_noise_gpu.py)
SLOWER_AFTER_SYNC = (10.0, 2.0, 1.3)
HOST_LONG_S = 2e-3
GPU_LONG_S = 2e-2  # a long call: a block of two, one block a figure


def test_a_block_of_two_is_timed_past_the_slow_calls_after_a_synchronise() -> None:
    dev = CountingStream()

    def call() -> None:
        cost = SLOWER_AFTER_SYNC
        spin(HOST_LONG_S * (cost[dev.since] if dev.since < len(cost) else 1.0))
        dev.since += 1
        dev.work(GPU_LONG_S)

    got = CallTimer(clock_hz=1.5e9).measure(dev, "v", call, host_hint=HOST_LONG_S,
                                            gpu_hint=GPU_LONG_S)
    assert got.calls == 2
    # behind one untimed call the block would be the second and third: (2 + 1.3) / 2 = 1.65 x
    assert HOST_LONG_S <= got.host_s < 1.3 * HOST_LONG_S, got
