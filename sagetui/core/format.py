"""One formatter per kind of cell: the console's widgets, `sagetui run`'s and `compare`'s
tables and every export write numbers through these, so a figure reads the same everywhere
(rel. L1 is a percent in all of them, a latency is milliseconds with three decimals...).

Plain text only: a display styles it (rich, Textual) but never re-formats the number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sagetui.core.finite import is_figure
from sagetui.core.options import option_value

DASH = "-"

# Short labels for plot axes and narrow columns, where the reference reports' phase names are
# too wide.
SHORT_PHASES = {
    "k_mean_and_smoothing_preparation": "k mean+smooth",
    "qk_int8_quantization": "qk int8",
    "q_int8_quantization": "q int8",
    "k_int8_subtract_mean_quantization": "k int8 -mean",
    "k_int8_quantization": "k int8",
    "v_fp8_transpose_scale_quantization": "v fp8",
    "v_transpose_pad_permute": "v transpose",
    "v_scale_fp8_quantization": "v scale fp8",
    "fused_mainloop": "mainloop",
    "total": "total",
}


def ms(seconds: float | None, digits: int = 3) -> str:
    """A latency, in milliseconds."""
    return f"{seconds * 1e3:.{digits}f}" if is_figure(seconds) else DASH  # type: ignore[operator]


def ms_significant(seconds: float | None, digits: int = 4) -> str:
    """A latency in milliseconds to `digits` significant digits, for GPUs or clocks whose
    times differ by orders: 0.1234, 12.35."""
    return f"{seconds * 1e3:.{digits}g}" if is_figure(seconds) else DASH  # type: ignore[operator]


def pct(value: float | None, digits: int = 2, sign: bool = True) -> str:
    """A number that is already a percentage (a speedup, a drift slope): +1.23."""
    if not is_figure(value):
        return DASH
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def percent(value: float | None, digits: int = 2, sign: bool = False) -> str:
    """A number that is already a percentage, with its unit: "1.23 %", "+0.66 %"."""
    text = pct(value, digits, sign)
    return text if text == DASH else f"{text} %"


def share(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage with its unit: 0.405 -> "40.5 %" (of the peak, of the
    samples, of the call)."""
    text = fraction_pct(value, digits)
    return text if text == DASH else f"{text} %"


def noise_floor(value: float | None, sep: str = " ") -> str:
    """An A/A calibration's round-to-round noise, in percent: "noise floor 1.000 %" (`sep`
    ": " where it heads a sentence)."""
    return f"noise floor{sep}{percent(value, 3)}"


RATIO_FROM = 10.0  # a speedup of 10x or more, either way, reads better as a ratio


def speedup(value: float | None, digits: int = 2) -> str:
    """A speedup in percent, as pct; from 10x faster or slower on (a phase of 0.002 ms against
    one of 0.364 read "+23335.14 %") as how many times: "183x faster", "12x slower"."""
    if not is_figure(value):
        return DASH
    assert value is not None
    ratio = 1 + value / 100
    if 1 / RATIO_FROM < ratio < RATIO_FROM:
        return pct(value, digits)
    if ratio >= RATIO_FROM:
        return f"{ratio:.0f}x faster"
    return f"{1 / ratio:.0f}x slower" if ratio > 0 else DASH


def fraction_pct(value: float | None, digits: int = 2) -> str:
    """A fraction shown as a percentage, without its sign: a share of peak, a relative L1
    error, a row efficiency (0.0391 -> 3.91)."""
    return f"{100 * value:.{digits}f}" if is_figure(value) else DASH  # type: ignore[operator]


def ci(low: float | None, high: float | None, digits: int = 2) -> str:
    """An interval in percent: [-0.12, +0.04]."""
    if not (is_figure(low) and is_figure(high)):
        return DASH
    return f"[{low:+.{digits}f}, {high:+.{digits}f}]"


def half_width(percent: float | None, digits: int = 1) -> str:
    """A ± half-width in percent: ± 0.4 %."""
    return f"± {percent:.{digits}f} %" if is_figure(percent) else DASH


def cosine(value: float | None) -> str:
    return f"{value:.5f}" if is_figure(value) else DASH


def sci(value: float | None) -> str:
    """A small error (RMSE, max |error|): three significant digits."""
    return f"{value:.3g}" if is_figure(value) else DASH


def tops(value: float | None) -> str:
    """Throughput: one decimal, three significant digits below 10 (a CPU's 0.0412)."""
    if not is_figure(value):
        return DASH
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3g}"  # type: ignore[arg-type]


def gbps(value: float | None) -> str:
    """A bandwidth in GB/s (10^9 bytes): whole above 100, three significant digits below."""
    if not is_figure(value):
        return DASH
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"  # type: ignore[arg-type]


def count(value: int | None) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else DASH


def size(nbytes: int | None) -> str:
    """Bytes in powers of 1024, as --max-bytes reads them: 512 B, 1.5 KiB, 300.0 MiB."""
    if not isinstance(nbytes, int) or nbytes < 0:
        return DASH
    power = min((nbytes.bit_length() - 1) // 10, 4) if nbytes else 0
    if power == 0:
        return f"{nbytes} B"
    return f"{nbytes / 1024 ** power:.1f} {('KiB', 'MiB', 'GiB', 'TiB')[power - 1]}"


def duration(seconds: float | None) -> str:
    """0:07, 12:34, 1:02:03."""
    if not is_figure(seconds) or seconds < 0:  # type: ignore[operator]
        return DASH
    s = int(round(seconds))  # type: ignore[arg-type]
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def nice_step(span: float, most: int, steps: tuple[float, ...] = (1, 2, 2.5, 5)) -> float:
    """The smallest step of the form s x 10^k (s in `steps`) that cuts `span` into at most
    `most` parts: every axis's ticks (the console's plots, the sweep's SVG)."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(1, most)
    mag = 10.0 ** math.floor(math.log10(raw))
    for s in (*steps, 10):
        if s * mag >= raw * (1 - 1e-9):
            return s * mag
    return 10 * mag


def printable(text: str) -> str:
    """Without control characters: a name from a report must not drive the terminal (plot
    legends are parsed from ANSI text)."""
    return "".join(c if c.isprintable() else "?" for c in text)


def short_phase(name: str, width: int = 14) -> str:
    label = SHORT_PHASES.get(name) or printable(name).replace("_", " ")
    return label if len(label) <= width else label[: width - 1] + "~"


def min_mean_max(mmm: Mapping[str, Any] | None, unit: str, digits: int = 0) -> str | None:
    """'1980 MHz' when steady, '1965-1995 MHz' when it moved during the round."""
    if not mmm:
        return None
    lo, hi = mmm.get("min"), mmm.get("max")
    if lo is None or hi is None:
        return None
    if round(lo, digits) == round(hi, digits):
        return f"{lo:.{digits}f} {unit}"
    return f"{lo:.{digits}f}-{hi:.{digits}f} {unit}"


def verdict(v: Mapping[str, Any] | None, computed: bool = False) -> str:
    """A verdict with its paired estimate and interval: "SAME -0.10 [-0.12, -0.04]"; the
    estimate is the interval's centre, not the two-build report's p50 speedup. `computed`: derived
    by sagetui from a report that recorded none (marked *)."""
    if not v:
        return DASH
    est, lo, hi = (v.get(k) for k in ("estimate_percent", "ci_low_percent", "ci_high_percent"))
    return (f"{v['state']}{'*' if computed else ''}" + ("" if est is None else f" {est:+.2f}")
            + ("" if lo is None or hi is None else f" [{lo:+.2f}, {hi:+.2f}]"))


def drift(d: Mapping[str, Any] | None) -> tuple[str, bool]:
    """A drift slope in % per round and whether it is flagged: ("+0.66 DRIFT", True)."""
    if not d or not is_figure(d.get("slope_percent_per_round")):
        return DASH, False
    flagged = bool(d.get("flagged"))
    return f"{d['slope_percent_per_round']:+.2f}" + (" DRIFT" if flagged else ""), flagged


ACCURACY_COLUMNS = {"cos": "cos sim", "l1": "rel L1 %", "rmse": "RMSE", "max": "max |err|"}


def accuracy(acc: Mapping[str, Any] | None) -> dict[str, str]:
    """Cosine similarity, relative L1 (a percent), RMSE and max |error| against fp32
    attention, or dashes (ACCURACY_COLUMNS names the columns)."""
    a = acc or {}
    return {"cos": cosine(a.get("cosine_similarity")), "l1": fraction_pct(a.get("relative_l1")),
            "rmse": sci(a.get("rmse")), "max": sci(a.get("max_abs_error"))}


def worst_heads(acc: Mapping[str, Any] | None) -> str:
    """The worst query heads by relative L1, worst first: "12 (8.10 %), 3 (7.93 %)"; a head
    whose output is not finite reads "not finite"."""
    a = acc or {}
    l1 = {h.get("head"): h.get("relative_l1") for h in a.get("per_head") or []}
    cells = [f"{h} ({fraction_pct(l1[h]) + ' %' if is_figure(l1.get(h)) else 'not finite'})"
             for h in a.get("worst_heads") or []]
    return ", ".join(cells) or DASH


def options_text(backend: str, options: Mapping[str, Any],
                 dispatched: str | None = None) -> tuple[str, str | None]:
    """Every option as it ran, `key=value, ...`, each that is not the public function's default
    marked `*`, and the note saying so (None when nothing is marked). `dispatched`: the function
    sage2-auto's dispatch called (its `dispatch` fact)."""
    from sagetui.core.options import in_effect, public_of

    options = in_effect(backend, options)
    public = public_of(backend, dispatched)
    defaults = public[1] if public else {}
    marked = [k for k, v in options.items() if k in defaults and defaults[k] != v]
    text = ", ".join(f"{k}={option_value(v)}" + ("*" if k in marked else "")
                     for k, v in options.items())
    if not marked or public is None:
        return text or DASH, None
    want = ", ".join(f"{k}={option_value(defaults[k])}" for k in marked)
    return text, f"* not {public[0]}'s default ({want})"


def share_of_peak(fraction: float | None, peak_tops: float | None = None,
                  types: tuple[str, str] | None = None) -> str:
    """"40.5 % of 1,979 (int8/fp8)"."""
    text = share(fraction)
    if text == DASH:
        return DASH
    if is_figure(peak_tops):
        text += f" of {peak_tops:,.0f}"
        if types:
            text += f" ({types[0]}/{types[1]})"
    return text
