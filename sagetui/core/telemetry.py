"""GPU telemetry summaries: the pure half of sagetui.runner.telemetry, usable without NVML.

A sample is a dict taken by the runner's sampler:

    {"t_s": 12.345,                  # time.monotonic()
     "sm_clock_mhz": 1980.0, "mem_clock_mhz": 3201.0, "temperature_c": 41.0, "power_w": 312.5,
     "throttle_reasons": ["sw_power_cap"]}

A metric the device does not report is None or absent. A block summary (one per block of
iterations) and a round summary (blocks merged) have the same shape, the report's Telemetry:

    {"available": bool, "reason": str | None, "samples": int,
     "sm_clock_mhz": {"min", "mean", "max"} | None, ... "power_w": ...,
     "throttle_reasons": sorted names seen, gpu_idle left out}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sagetui.core.finite import is_figure

METRICS = ("sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_w")

# NVML's clock-event (formerly "throttle") reasons, in bit order, under sagetui's names.
CLOCK_EVENT_REASONS = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "display_clock_setting",
)
# Idle is not a slowdown of the kernel: the GPU idles between blocks and while the host waits.
IGNORED_REASONS = frozenset({"gpu_idle"})


def decode_reasons(mask: int, bits: Mapping[str, int]) -> list[str]:
    """Names whose bit is set in an NVML clock-event mask; unknown bits read as 'bit_0x..'."""
    names = [name for name, bit in bits.items() if mask & bit]
    rest = mask
    for bit in bits.values():
        rest &= ~bit
    names += [f"bit_{1 << i:#x}" for i in range(rest.bit_length()) if rest >> i & 1]
    return names


def unavailable(reason: str) -> dict[str, Any]:
    """The summary of a block (or round) without telemetry, saying why."""
    return {
        "available": False,
        "reason": reason,
        "samples": 0,
        **{m: None for m in METRICS},
        "throttle_reasons": [],
    }


def summarize_samples(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Samples of one block -> min/mean/max per metric and the union of clock-event reasons."""
    if not samples:
        return unavailable("no telemetry samples were taken")
    out: dict[str, Any] = {"available": True, "reason": None, "samples": len(samples)}
    for m in METRICS:
        xs = [float(s[m]) for s in samples if is_figure(s.get(m))]
        out[m] = {"min": min(xs), "mean": sum(xs) / len(xs), "max": max(xs)} if xs else None
    seen = {r for s in samples for r in s.get("throttle_reasons") or ()}
    out["throttle_reasons"] = sorted(seen - IGNORED_REASONS)
    return out


def merge_blocks(blocks: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """Block summaries of one round -> one round summary.

    min of mins, max of maxes, and the mean of means weighted by each block's sample count, so
    the result equals summarising all the round's samples at once. Blocks without telemetry are
    skipped; if none has any, the round is unavailable with the first reason given.
    """
    given = [b for b in blocks if b]
    live = [b for b in given if b.get("available") and b.get("samples", 0) > 0]
    if not live:
        reasons = [b.get("reason") for b in given if b.get("reason")]
        return unavailable(str(reasons[0]) if reasons else "no telemetry for this round")
    out: dict[str, Any] = {
        "available": True,
        "reason": None,
        "samples": sum(int(b["samples"]) for b in live),
    }
    for m in METRICS:
        parts = [(b[m], int(b["samples"])) for b in live if b.get(m)]
        if not parts:
            out[m] = None
            continue
        n = sum(w for _, w in parts)
        out[m] = {
            "min": min(p["min"] for p, _ in parts),
            "mean": sum(p["mean"] * w for p, w in parts) / n,
            "max": max(p["max"] for p, _ in parts),
        }
    seen = {r for b in live for r in b.get("throttle_reasons") or ()}
    out["throttle_reasons"] = sorted(seen - IGNORED_REASONS)
    return out
