"""The GPU's clocks around a swap's steps: one NVML reading as each step ends (runner/telemetry's
sampler, read from the program's thread after the step's synchronise, so outside its time),
and the GPU brought to its clocks before the first step: an idle GPU sits at a few hundred MHz
and takes a second or more under load to reach its clock, longer than ten steps of a few ms
(a process per arm measured its ramp, not its step)."""

from __future__ import annotations

import time
from typing import Any

import torch

WARM_MAX_S = 5.0  # at most, then go on and say so
WARM_MIN_S = 0.5  # at least: a clock read early may not have moved yet
HOLD = 5  # readings in a row within HOLD_WITHIN of each other: the clock holds
HOLD_WITHIN = 0.02


def reading(sampler: Any) -> tuple[float | None, float | None]:
    """(SM clock MHz, power W) now, or (None, None) without NVML."""
    if sampler is None:
        return None, None
    s = sampler.read()
    if s is None:
        return None, None
    return s.get("sm_clock_mhz"), s.get("power_w")


def bring_to_clocks(sampler: Any) -> str:
    """Matrix products on the current CUDA device until the SM clock holds (HOLD readings in a
    row within HOLD_WITHIN), WARM_MAX_S at most; what it took, in words."""
    first, _ = reading(sampler)
    if first is None:
        return "not brought to its clocks: no NVML clock readings"
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    t0 = time.monotonic()
    seen: list[float] = []
    while True:
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()
        clock, _ = reading(sampler)
        if clock is not None:
            seen.append(clock)
        took = time.monotonic() - t0
        last = seen[-HOLD:]
        held = len(last) == HOLD and max(last) - min(last) <= HOLD_WITHIN * max(last)
        if (held and took >= WARM_MIN_S) or took >= WARM_MAX_S:
            break
    del a
    end = seen[-1] if seen else first
    how = "it held" if held else f"it had not held after {WARM_MAX_S:g} s"
    return f"SM clock {first:.0f} -> {end:.0f} MHz in {took:.1f} s of matrix products ({how})"
