"""What the user's model pays (docs/architecture.md, "Host time and back-to-back time"): the
figures derived from a variant's host time and back-to-back time, and the drained-queue test of
a timed block. One place each: the runner, the report, every display and `sagetui check` call
these.

Each is of the call the user makes (`timed_call`: a stock variant's public function as a user
calls it; a build given by path, which has none of its own, its decomposition), timed in blocks
of its own once a round (runner/call_times.py), apart from the phases' instrumented blocks:

- **GPU time** (`call_gpu_s`): CUDA events around a gated block of calls, over its calls. The
  report's `timing` stays the phases' sum (the verdicts'); the two differ by the events between
  phases and the decomposition's own steps.
- **Host time** (`host_s`): the host's time to enqueue that block while the gate holds the GPU,
  over its calls (nvbench's CPU time): Python, checks, launches.
- **Back-to-back time** (`back_to_back_s`): wall time per call of a hot loop of as many calls,
  synchronised once: the pace of a model that calls it again and again.

A call is host-bound when its host time exceeds its GPU time. Back to back a call costs at
least the larger of the two: `check` rejects a report whose back-to-back time is below
max(host, GPU) by more than the noise (b2b_noise: B2B_NOISE, or the spread over the rounds of
the readings of the larger of the two, where wider: the host's jitter never makes the GPU's
work take less time).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

# Back to back, a call costs at least the larger of its host and GPU time (each measured in
# blocks of its own, minutes apart at most, at the clocks of the moment): below it by more than
# this share is no measurement of one call (the clocks between blocks move a few per cent).
B2B_NOISE = 0.10

# Between the calls of one workload replay the host's own pace moved 1.5-fold on an H100's
# virtual CPUs (docs/h200-results.md, 18:56), every variant's host time with it: beyond this
# spread the workload's notes say so (host_pace)
PACE_MOVED = 1.25

# A block's queue drained when the GPU idled between its calls for more than this share of the
# calls' own time plus this much per gap (CUDA events resolve 0.5 us; consecutive launches
# behind a full queue leave 1-3 us between kernels).
DRAIN_TOLERANCE = 0.02
DRAIN_GAP_S = 5e-6


def typical(per_block: Sequence[float] | None) -> float | None:
    """A variant's host or back-to-back time: the median of its blocks' figures."""
    values = [x for x in per_block or () if x is not None]
    return float(statistics.median(values)) if values else None


def host_bound(host_s: float | None, gpu_s: float | None) -> bool | None:
    """Whether a call is paced by the host: its host time exceeds its GPU time (None when
    either is unknown)."""
    if host_s is None or gpu_s is None:
        return None
    return host_s > gpu_s


def host_share(host_s: float | None, gpu_s: float | None) -> float | None:
    """The host's time to issue a call over the call's GPU time: above 1 it is host-bound, and
    below 1 the rest is the headroom a slower host (or a faster kernel) has before it is (None
    when either is unknown, or the GPU time is 0)."""
    if host_s is None or not gpu_s:
        return None
    return host_s / gpu_s


def b2b_noise(host_s: float | None, gpu_s: float | None,
              host_times: Sequence[float | None] | None,
              gpu_times: Sequence[float | None] | None) -> float:
    """How far below max(host, GPU) a back-to-back time may read: B2B_NOISE, or where wider the
    spread of the rounds' readings of the larger of the two ((max - min) / max): the host's
    jitter never makes the GPU's work take less time, nor the GPU's the host's. Each figure is
    a median over rounds measured apart, and a host whose pace moves between rounds moves them
    apart as much: on an H100's virtual CPUs one call's host time read 0.14 ms in some rounds
    and 0.24 ms in others of one replay (docs/h200-results.md)."""
    by_host = gpu_s is None or (host_s is not None and host_s >= gpu_s)
    seen = [x for x in (host_times if by_host else gpu_times) or () if x is not None and x > 0]
    if len(seen) < 2:
        return B2B_NOISE
    return max(B2B_NOISE, (max(seen) - min(seen)) / max(seen))


def back_to_back_floor(host_s: float | None, gpu_s: float | None,
                       noise: float = B2B_NOISE) -> float | None:
    """The least back-to-back time a call's host and GPU time allow, less `noise` (None when
    either is unknown)."""
    if host_s is None or gpu_s is None:
        return None
    return max(host_s, gpu_s) * (1 - noise)


def bound_by(host_s: float | None, gpu_s: float | None) -> str | None:
    """Which time bounds a call: "host" or "GPU" (None when either is unknown)."""
    hb = host_bound(host_s, gpu_s)
    return None if hb is None else "host" if hb else "GPU"


def idle_s(intervals: Sequence[tuple[float, float]]) -> float:
    """The time the device was idle between a block's calls: the span from the first call's
    start to the last call's end less the calls' own times (each call (start, end), seconds
    on the device's clock, in order)."""
    if not intervals:
        return 0.0
    span = intervals[-1][1] - intervals[0][0]
    busy = sum(end - start for start, end in intervals)
    return max(0.0, span - busy)


def drained(intervals: Sequence[tuple[float, float]], tolerance: float = DRAIN_TOLERANCE,
            gap_s: float = DRAIN_GAP_S) -> bool:
    """Whether the block's queue drained: the device idled between its calls longer than
    `tolerance` of the calls' time plus `gap_s` per gap. Such a block timed the host's pace,
    not the device's, and is measured again."""
    if len(intervals) < 2:
        return False
    busy = sum(end - start for start, end in intervals)
    return idle_s(intervals) > tolerance * busy + gap_s * (len(intervals) - 1)


def host_pace(host_by_point: Sequence[Mapping[str, float | None]]) -> list[float | None]:
    """Each point's host pace (a workload's calls, a sweep's points): over the variants timed
    there, the median of its host time over that variant's median across the points (1: as
    usual; None: no host time there). Every variant slower at one point than at the others
    says the host was, or that the point's call takes a longer host path."""
    seen: dict[str, list[float]] = {}
    for point in host_by_point:
        for name, x in point.items():
            if x:
                seen.setdefault(name, []).append(x)
    usual = {name: statistics.median(xs) for name, xs in seen.items()}
    out: list[float | None] = []
    for point in host_by_point:
        ratios = [x / usual[name] for name, x in point.items() if x and usual.get(name)]
        out.append(float(statistics.median(ratios)) if ratios else None)
    return out


def pace_moved(paces: Sequence[float | None]) -> tuple[float, list[int]] | None:
    """Where the points' host pace spread by PACE_MOVED or more: the spread (the slowest over
    the fastest) and the points (positions in `paces`) nearer the slowest (above the two's
    geometric mean); None otherwise."""
    known = [f for f in paces if f]
    if len(known) < 2 or max(known) < PACE_MOVED * min(known):
        return None
    lo, hi = min(known), max(known)
    mid = math.sqrt(lo * hi)
    return hi / lo, [i for i, f in enumerate(paces) if f and f > mid]
