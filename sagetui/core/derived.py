"""The derived numbers of a comparison and of throughput, each computed here and nowhere else:
percent changes and speedups, a log ratio in percent, operations, TOPS, share of peak.
Intervals are statistics/intervals.py's; the peaks themselves peaks.py's (datasheets); the
report, `check`, the sweep, the console and the exports all call these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sagetui.core.config import Shape

OPS_FORMULA = "4·B·H·Nq·Nkv·D operations (QK^T and PV, a multiply-add counting two), halved " \
              "when causal; packed sequences: 4·H·D·Σ Lq_i·Lk_i, each halved when causal"


def ratio_percent(a: float, b: float) -> float:
    """How much larger `a` is than `b`, in percent: (a / b - 1) x 100. Every speedup and
    percent change below is this; a drift's first-to-last change and a clock's difference too."""
    return (a / b - 1.0) * 100.0


def speedup_percent(baseline_s: float, variant_s: float) -> float:
    """The two-build report's `speedup_vs_baseline_percent`: (t_base / t_variant - 1) x 100,
    positive = the variant is faster. Derived from 001's own numbers: 0.24391904449462892 /
    0.2439577865600586 - 1 gives -0.015880643112875514 %, the value it records; means or a
    (b - v) / b form do not. The compare view's "faster than A" is this with A as the
    baseline."""
    return ratio_percent(baseline_s, variant_s)


def speedup_or_none(baseline_s: float | None, variant_s: float | None) -> float | None:
    return speedup_percent(baseline_s, variant_s) if baseline_s and variant_s else None


def change_percent(new: float | None, old: float | None) -> float | None:
    """How much longer `new` takes than `old`, in percent (+ = slower): a tail-study row
    against its sweep's first row."""
    return ratio_percent(new, old) if new and old else None


def percent_of_log(log_ratio: float) -> float:
    """A difference of logs as a percent change: (exp(x) - 1) x 100 (a verdict's estimate and
    interval, a log interval's half-width)."""
    return math.expm1(log_ratio) * 100.0


def change_of_speedup(speedup: float | None) -> float | None:
    """The time change a speedup means, in percent (+ = slower): change_percent(v, b) for
    speedup_percent(b, v). A paired interval on the speedup maps to one on the change, its ends
    swapped (a swap's step: -48 % is 92 % faster)."""
    if speedup is None or not math.isfinite(speedup) or speedup <= -100.0:
        return None
    return (100.0 / (100.0 + speedup) - 1.0) * 100.0


def speedup_of_change(change: float | None) -> float | None:
    """The speedup a time change means (+ = faster): change_of_speedup's map, which is its own
    inverse; a table that shows every comparison + = faster shows a change this way."""
    return change_of_speedup(change)


def attention_ops(*, batch: int, heads: int, q_len: int, kv_len: int, head_dim: int,
                  causal: bool, seqlens: Sequence[int] | None = None,
                  kv_seqlens: Sequence[int] | None = None) -> float:
    """OPS_FORMULA. Packed sequences (`seqlens`, `kv_seqlens` default `seqlens`) attend each
    to itself: the work is the sum of each one's, not the packed tokens' square."""
    if seqlens:
        pairs = zip(seqlens, kv_seqlens or seqlens, strict=True)
        ops = 4.0 * heads * head_dim * sum(lq * lk for lq, lk in pairs)
    else:
        ops = 4.0 * batch * heads * q_len * kv_len * head_dim
    return ops / 2 if causal else ops


def shape_ops(shape: Shape) -> float:
    return attention_ops(batch=shape.batch, heads=shape.heads, q_len=shape.q_len,
                         kv_len=shape.n_kv_len, head_dim=shape.head_dim, causal=shape.causal,
                         seqlens=shape.seqlens, kv_seqlens=shape.kv_seqlens)


def tops(ops: float, seconds: float) -> float:
    return ops / seconds / 1e12


def share_of_peak(value_tops: float | None, peak_tops: float | None) -> float | None:
    return value_tops / peak_tops if value_tops is not None and peak_tops else None


def achieved(ops: float, seconds: float, peak: float | None) -> dict[str, Any]:
    """Throughput and its share of `peak` (core.peaks: the kernel's own types on this GPU)."""
    t = tops(ops, seconds)
    return {"tops": t, "peak_tops": peak, "share_of_peak": share_of_peak(t, peak)}


def call_and_mainloop(ops: float, call_p50_s: float, mainloop_p50_s: float | None,
                      peak: float | None) -> dict[str, float | None]:
    """A run variant's `achieved` block: the whole call's TOPS and share, and its main loop's
    where it has one (what SageAttention's bench/ counts)."""
    whole = achieved(ops, call_p50_s, peak)
    out: dict[str, float | None] = {"call_tops": whole["tops"], "peak_tops": peak,
                                    "call_share_of_peak": whole["share_of_peak"]}
    if mainloop_p50_s:
        ml = achieved(ops, mainloop_p50_s, peak)
        out.update(mainloop_tops=ml["tops"], mainloop_share_of_peak=ml["share_of_peak"])
    return out


def kernel_and_e2e(ops: float, timing_p50_s: float | None, kernel_p50_s: float | None,
                   peak: float | None) -> dict[str, float | None]:
    """A sweep point's kernel-only and end-to-end TOPS and their shares, from the two p50s.
    `e2e_tops` is the figure a run's `achieved` block calls `call_tops` (call_and_mainloop):
    the whole call's TOPS, one function (`tops`) under the two names saved reports hold."""
    k = tops(ops, kernel_p50_s) if kernel_p50_s else None
    e = tops(ops, timing_p50_s) if timing_p50_s else None
    return {"kernel_tops": k, "e2e_tops": e, "peak_tops": peak,
            "kernel_share_of_peak": share_of_peak(k, peak),
            "e2e_share_of_peak": share_of_peak(e, peak)}
