"""A verdict names its clocks: each variant's mean SM clock and power over its measured rounds,
and a clock-normalised estimate beside the time estimate (each round's median time x that
round's mean SM clock, in cycles, paired against the baseline's the same way, by the same
analysis: statistics/analysis.py). When the variants' clocks differ by more than the time
estimate's half-width, the verdict line says so. Without telemetry (the CPU) nothing is said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sagetui.core import format as fmt
from sagetui.core.derived import ratio_percent
from sagetui.core.telemetry import merge_blocks


def round_clock(telemetry: Mapping[str, Any] | None) -> float | None:
    """A round's mean SM clock (MHz), or None without telemetry."""
    clock = (telemetry or {}).get("sm_clock_mhz") if (telemetry or {}).get("available") \
        else None
    return float(clock["mean"]) if clock else None


def cycle_medians(round_medians: Mapping[int, float],
                  round_telemetry: Mapping[int, Mapping[str, Any] | None]) -> dict[int, float]:
    """Round -> its median time x its mean SM clock (cycles); rounds without a clock left out
    (none at all on the CPU)."""
    out = {}
    for r, t in round_medians.items():
        mhz = round_clock(round_telemetry.get(r))
        if mhz:
            out[r] = t * mhz * 1e6
    return out


def mean_clocks(telemetry: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The mean SM clock and power over the rounds (weighted by samples) and the throttle
    reasons seen, or None without telemetry."""
    merged = merge_blocks(telemetry)
    if not merged.get("available"):
        return None
    clock, power = merged.get("sm_clock_mhz"), merged.get("power_w")
    return {"mean_sm_clock_mhz": clock["mean"] if clock else None,
            "mean_power_w": power["mean"] if power else None,
            "throttle_reasons": list(merged.get("throttle_reasons") or [])}


def clock_note(name: str, clocks: Mapping[str, Any] | None,
               base_clocks: Mapping[str, Any] | None, verdict: Mapping[str, Any] | None,
               cycles_verdict: Mapping[str, Any] | None) -> str | None:
    """The verdict line's words when `name`'s mean SM clock differs from the baseline's by more
    than the time estimate's half-width: "b ran 1.0 % higher SM clocks under sw_power_cap; in
    cycles: +1.80 [+1.20, +2.40]"; None otherwise (or without clocks)."""
    mine = (clocks or {}).get("mean_sm_clock_mhz")
    base = (base_clocks or {}).get("mean_sm_clock_mhz")
    lo, hi = ((verdict or {}).get(k) for k in ("ci_low_percent", "ci_high_percent"))
    if not mine or not base or lo is None or hi is None:
        return None
    diff = ratio_percent(mine, base)
    if abs(diff) <= (hi - lo) / 2:
        return None
    reasons = sorted(set((clocks or {}).get("throttle_reasons") or [])
                     | set((base_clocks or {}).get("throttle_reasons") or []))
    text = (f"{name} ran {fmt.percent(abs(diff), 1)} {'higher' if diff > 0 else 'lower'} SM clocks"
            + (f" under {', '.join(reasons)}" if reasons else ""))
    cv = cycles_verdict or {}
    est, clo, chi = (cv.get(k) for k in ("estimate_percent", "ci_low_percent", "ci_high_percent"))
    if est is not None:
        text += f"; in cycles: {est:+.2f}" + ("" if clo is None or chi is None
                                              else f" [{clo:+.2f}, {chi:+.2f}]")
    return text
