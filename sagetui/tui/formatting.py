"""Numbers and names as the console shows them (milliseconds, percent, short phase labels)."""

from __future__ import annotations

import math

from sagetui.core.config import RunConfig

DASH = "-"

# Short labels for plot axes, where the reference reports' phase names are too wide.
SHORT_PHASES = {
    "k_mean_and_smoothing_preparation": "k mean+smooth",
    "qk_int8_quantization": "qk int8",
    "q_int8_quantization": "q int8",
    "k_int8_subtract_mean_quantization": "k int8 -mean",
    "v_fp8_transpose_scale_quantization": "v fp8",
    "v_transpose_pad_permute": "v transpose",
    "v_scale_fp8_quantization": "v scale fp8",
    "fused_mainloop": "mainloop",
    "total": "total",
}


def ms(seconds: float | None, digits: int = 3) -> str:
    if seconds is None or not math.isfinite(seconds):
        return DASH
    return f"{seconds * 1e3:.{digits}f}"


def pct(value: float | None, digits: int = 2, sign: bool = True) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def ci(low: float | None, high: float | None, digits: int = 2) -> str:
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return DASH
    return f"[{low:+.{digits}f}, {high:+.{digits}f}]"


def duration(seconds: float | None) -> str:
    """0:07, 12:34, 1:02:03."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return DASH
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def printable(text: str) -> str:
    """Without control characters: a name from a report must not drive the terminal (plot
    legends are parsed from ANSI text)."""
    return "".join(c if c.isprintable() else "?" for c in text)


def short_phase(name: str, width: int = 14) -> str:
    label = SHORT_PHASES.get(name) or printable(name).replace("_", " ")
    return label if len(label) <= width else label[: width - 1] + "~"


def min_mean_max(mmm: dict | None, unit: str, digits: int = 0) -> str | None:
    """'1980 MHz' when steady, '1965-1995 MHz' when it moved during the round."""
    if not mmm:
        return None
    lo, hi = mmm.get("min"), mmm.get("max")
    if lo is None or hi is None:
        return None
    if round(lo, digits) == round(hi, digits):
        return f"{lo:.{digits}f} {unit}"
    return f"{lo:.{digits}f}-{hi:.{digits}f} {unit}"


def t975(df: int) -> float:
    """Student t quantile at 0.975 (two-sided 95 %), without scipy (its import costs 0.6 s
    of UI time): exact table to 30 degrees of freedom, then a Cornish-Fisher expansion."""
    table = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
             2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074,
             2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
    if df < 1:
        return math.inf
    if df <= len(table):
        return table[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def until_ci_line(config: RunConfig, running: bool) -> str:
    """What `u` set, said for a running session or for the next run."""
    target = config.until_ci_percent
    if target is None:
        return f"adaptive stopping off: a run makes {config.rounds} rounds"
    limit = f"at least 2 rounds, at most {config.round_limit}"
    if running:
        return (f"running until every 95 % interval is narrower than {target:g} % (from the "
                f"next round; {limit})")
    return (f"the next run (r) stops once every 95 % interval is narrower than {target:g} % "
            f"({limit})")


def parse_until_ci(value: str) -> float | None:
    """The `u` dialog's value: a width in percent, or None for off (ValueError if neither)."""
    target = None if value.lower() in ("off", "0", "none") else float(value)
    if target is not None and not 0 < target <= 100:
        raise ValueError(value)
    return target


def until_ci_problem(value: str) -> str | None:
    try:
        parse_until_ci(value)
    except ValueError:
        return f"not a width in percent (0 < width <= 100, or off): {value!r}"
    return None
