"""The three times of the call the user makes (core/host_time.py; docs/architecture.md, "Host
time and back-to-back time"), each in blocks of its own, apart from the phases' instrumented
blocks: no event between phases, no board update, no check inside them.

- **GPU time**: CUDA events around a gated block of calls, over its calls.
- **Host time**: the host's time to enqueue that block while the gate holds the GPU, over its
  calls (nvbench's CPU time). The block follows LEAD_CALLS untimed calls behind the same gate:
  measured on an H100 (benchmarks/host_noise_gpu.py), the first call after any pause of the
  calls (a synchronise, 100 ms of Python, a sleep) took 2-7 times a later one's enqueue (sdpa
  0.29 ms against 0.04-0.06 at 37,810 tokens; sm80 0.69 against 0.13-0.30), the second still
  1.3-1.8 times and the third 1.05-1.1 (sm80 at 37,810 tokens, by position: 0.64, 0.24, 0.15,
  0.13, 0.14, 0.14 ms). That is the harness's pause, not the call (a model calls it in a stream
  of other launches, not after a synchronise), and how deep it is may depend on what the host
  did before: behind one untimed call a block of two (a call of 10 ms or more) read 1.2-1.5
  times the independent loop's at 37,810 tokens on an H100 (sagetui's after the phases' block,
  the loop's after its own calls). Behind three the block is the fourth and fifth calls, past
  the slow ones: 0.873-1.101 pooled over four runs on the same H100, single runs on both sides
  of 1 (docs/h200-results.md, 2026-12-07). Where the GPU reached the block before the host had
  enqueued it (the start event, after the gate, already passed), the GPU may have waited on
  the host: the block is measured again behind a gate twice as long, up to REDOS times, and
  said to be drained if it still did. The gate is sized to outlast the whole enqueue.
- **Back-to-back time**: a hot loop of as many calls from an idle GPU, synchronised once, over
  its calls: the pace of a model that calls it again and again.

A block holds enough calls for about CALL_BLOCK_S of GPU time (CALL_BLOCK_MIN to
CALL_BLOCK_MAX): the first launch's latency is then a small part of the loop. Each figure is
the median of REPEATS such blocks (one where a call takes LONG_CALL_S or more): measured on an
H100, one block's host time of a 0.12 ms call read up to twice its median now and then (the
host's own noise), and a round's one reading carried it into the workload's totals. Inside the
blocks Python's garbage collector is off (as timeit's: a collection's pause is no call's), and
the runner's other threads (telemetry, hashing) cannot take the interpreter from the calls
(a long switch interval): on the same H100 one round in five read a third less host time than
the rest, the rounds where no other thread ran.
"""

from __future__ import annotations

import gc
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sagetui.core.statistics.summary import median
from sagetui.runner.timing import gate_stream

CALL_BLOCK_S = 0.01
CALL_BLOCK_MIN, CALL_BLOCK_MAX = 2, 100
# the gate holds the GPU while the host enqueues the whole block (so that the start event still
# waiting when the host is done proves the GPU never waited on it): the block's host time by
# the last measurement, a quarter more, and this much
GATE_LEAD = 1.25
GATE_MARGIN_S = 5e-4
GATE_MAX_S = 2.0
# untimed calls behind the gate before the timed block (module docstring); the gate allows the
# first LEAD_COST calls' worth of enqueue for each
LEAD_CALLS = 3
LEAD_COST = 3
REDOS = 2
REPEATS = 3
LONG_CALL_S = 0.01
# the interpreter's switch interval inside the blocks: longer than any block's enqueue, so no
# other thread of the runner's runs in the middle of one (synchronising lets them run)
HOLD_S = 1.0


@dataclass(frozen=True)
class UserCallTimes:
    """Per call, seconds: host, GPU and back-to-back; how often the gated block was measured
    again, and whether the kept one may still have waited on the host."""

    host_s: float
    gpu_s: float
    back_to_back_s: float
    calls: int
    redone: int
    drained: bool


class CallTimer:
    """Times a variant's user call on its device (torch, or a simulated stream:
    runner/timing.py), its gate sized from the variant's last measurement (or the caller's
    hints before it)."""

    def __init__(self, clock_hz: float) -> None:
        self.clock_hz = clock_hz
        self._last: dict[str, tuple[float, float]] = {}  # variant -> (host, GPU) per call

    def calls(self, gpu_s: float) -> int:
        return max(CALL_BLOCK_MIN, min(CALL_BLOCK_MAX, math.ceil(CALL_BLOCK_S / max(gpu_s, 1e-6))))

    def measure(self, dev: Any, variant: str, call: Callable[[], Any], host_hint: float,
                gpu_hint: float) -> UserCallTimes:
        host, gpu = self._last.get(variant, (host_hint, gpu_hint))
        n = self.calls(gpu)
        gate = min(GATE_MAX_S, GATE_LEAD * (n + LEAD_COST * LEAD_CALLS) * host + GATE_MARGIN_S)
        repeats = 1 if gpu >= LONG_CALL_S else REPEATS
        hosts, gpus, b2bs = [], [], []
        redone, drained = 0, False
        collecting, switch = gc.isenabled(), sys.getswitchinterval()
        gc.disable()
        sys.setswitchinterval(HOLD_S)
        try:
            for _ in range(repeats):
                while True:
                    host_s, gpu_s, ahead = self._gated(dev, call, n, gate)
                    if ahead or redone >= REDOS or gate >= GATE_MAX_S:
                        break
                    redone += 1
                    gate = min(GATE_MAX_S, 2 * gate)
                drained |= not ahead
                hosts.append(host_s)
                gpus.append(gpu_s)
                b2bs.append(self._back_to_back(dev, call, n))
        finally:
            sys.setswitchinterval(switch)
            if collecting:
                gc.enable()
        self._last[variant] = (median(hosts), median(gpus))
        return UserCallTimes(host_s=median(hosts), gpu_s=median(gpus),
                             back_to_back_s=median(b2bs), calls=n, redone=redone,
                             drained=drained)

    def _gated(self, dev: Any, call: Callable[[], Any], n: int,
               gate: float) -> tuple[float, float, bool]:
        """One gated block: host and GPU time per call, and whether the GPU was still in the
        gate when the host had enqueued every call (then it never waited on the host)."""
        cuda = dev.cuda
        cuda.synchronize()
        gate_stream(dev, gate, self.clock_hz)
        for _ in range(LEAD_CALLS):
            call()
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        t = time.perf_counter()
        for _ in range(n):
            call()
        host = time.perf_counter() - t
        ahead = not start.query()
        end.record()
        cuda.synchronize()
        return host / n, start.elapsed_time(end) * 1e-3 / n, ahead

    def _back_to_back(self, dev: Any, call: Callable[[], Any], n: int) -> float:
        cuda = dev.cuda
        cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            call()
        cuda.synchronize()
        return (time.perf_counter() - t) / n
