"""Sweeps: the plan (a list of shapes), and every number derived per point, in one place.

A sweep point is one RunConfig at one shape. Its figures, as SageAttention's bench/ counts them:
kernel-only TOPS = 4·B·H·Nq·Nkv·D / t (halved when causal) with t the p50 of the main loop
(`fused_mainloop`: quantization excluded) where the backend has phases, else of the whole call;
end-to-end TOPS with t the whole call's p50. The session, the report and `sagetui check` all call
these functions, so a number is derived once.

Seams for other work (one function each, so they can be pointed at it later):
`peak_tops` (each kernel's own types' datasheet peak) and `accuracy` (against fp32 attention).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

# a noisy point (its rule, mark and test) is the point's own, in core/blocks/sweep.py, where
# the registry of per-variant facts (core/variant_facts.py) reads it too
from sagetui.core.blocks.result import AccuracyBrief
from sagetui.core.blocks.sweep import NOISY_CI_PERCENT as NOISY_CI_PERCENT
from sagetui.core.blocks.sweep import NOISY_MARK as NOISY_MARK
from sagetui.core.blocks.sweep import NOISY_RULE as NOISY_RULE
from sagetui.core.blocks.sweep import noisy as noisy
from sagetui.core.config import Shape

KERNEL_PHASE = "fused_mainloop"


@dataclass(frozen=True)
class Axes:
    q_lens: list[int]
    head_dims: list[int]
    causal: list[bool]
    kv_lens: list[int] | None = None  # None: kv_len = q_len at every point
    tokens: int | None = None  # batch = tokens / q_len at every point

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @property
    def x_axis(self) -> str:
        """The swept length: kv_len when only it varies, else q_len."""
        return "kv_len" if len(self.q_lens) == 1 and self.kv_lens and len(self.kv_lens) > 1 \
            else "q_len"


def plan(base: Shape, axes: Axes) -> list[Shape]:
    """Every point's shape: head dim, then causal, then the other length, then the swept one
    ascending (a series' points are neighbours). ValueError (one line) for a bad combination."""
    shapes = []
    for d in axes.head_dims:
        for causal in axes.causal:
            kvs: list[int | None] = [*axes.kv_lens] if axes.kv_lens else [None]
            for kv in kvs:
                for q in axes.q_lens:
                    batch = base.batch
                    if axes.tokens is not None:
                        if axes.tokens % q:
                            raise ValueError(f"--tokens {axes.tokens} is not a multiple of "
                                             f"q_len {q} (batch = tokens / q_len)")
                        batch = axes.tokens // q
                    shapes.append(Shape(**{**base.model_dump(), "batch": batch, "q_len": q,
                                           "kv_len": kv, "head_dim": d, "causal": causal}))
    if axes.x_axis == "kv_len":  # one q_len: order each series by kv_len
        shapes.sort(key=lambda s: (s.head_dim, s.causal, s.n_kv_len))
    return shapes


def x_of(shape: Shape, x_axis: str) -> int:
    return shape.q_len if x_axis == "q_len" else shape.n_kv_len


def group_of(shape: Shape, x_axis: str, axes: Axes) -> str:
    """The series label: what is fixed along the x axis."""
    label = f"D{shape.head_dim} {'causal' if shape.causal else 'non-causal'}"
    if x_axis == "q_len" and axes.kv_lens:
        label += f" kv {shape.n_kv_len}"
    elif x_axis == "kv_len":
        label += f" q {shape.q_len}"
    return label


def kernel_phase(phases: Sequence[str]) -> str:
    return KERNEL_PHASE if KERNEL_PHASE in phases else "total"


def peak_tops(gpu: dict[str, Any] | None, spec: str | None, dtype: str) -> float | None:
    """The datasheet peak of this variant's own tensor-core types on this GPU (core/peaks.py:
    int8 QK with fp16 PV has the blended peak), from its spec; None off a known GPU."""
    from sagetui.core.config import VariantSpec
    from sagetui.core.peaks import kernel_peak

    if not spec:
        return None
    v = VariantSpec.parse(spec)
    peak = kernel_peak((gpu or {}).get("name"), v.backend, v.options, dtype)
    return peak["peak_tops"] if peak else None


def accuracy(variant: dict[str, Any], baseline: str | None) -> AccuracyBrief | None:
    """The point's accuracy of one variant: its metrics against fp32 attention of the same
    inputs (the runner's, core/accuracy.py), with its difference from the baseline variant's
    output beside them."""
    acc = variant.get("accuracy")
    out: dict[str, Any] = {k: acc.get(k) for k in ("cosine_similarity", "relative_l1", "rmse",
                                                  "max_abs_error")} if acc else {}
    if acc and acc.get("worst_heads"):  # the worst query head and its own relative L1
        worst = acc["worst_heads"][0]
        out.update(worst_head=worst, worst_head_relative_l1=next(
            (h.get("relative_l1") for h in acc.get("per_head") or [] if h.get("head") == worst),
            None))
    if variant.get("max_abs_diff") is not None and baseline is not None:
        out.update(against=baseline, max_abs_diff=variant["max_abs_diff"],
                   mean_abs_diff=variant.get("mean_abs_diff"),
                   byte_exact=variant.get("byte_exact"))
    kept = {k: v for k, v in out.items() if v is not None}
    return AccuracyBrief.model_validate(kept) if kept else None


def crossovers(series: dict[str, dict[str, list[tuple[int, float]]]]) -> list[dict[str, Any]]:
    """series[group][variant] = [(x, tops)...]. For every pair of variants in a group, each
    place where the faster one changes between neighbouring common x values, with the x where
    the lines cross (linear in log2 x, as the plot draws them)."""
    out = []
    for group, by_variant in series.items():
        names = list(by_variant)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                pa, pb = dict(by_variant[a]), dict(by_variant[b])
                xs = sorted(set(pa) & set(pb))
                for x0, x1 in zip(xs, xs[1:], strict=False):
                    d0, d1 = pa[x0] - pb[x0], pa[x1] - pb[x1]
                    if d0 == 0 or d1 == 0 or (d0 > 0) == (d1 > 0):
                        continue
                    w = d0 / (d0 - d1)
                    x = 2 ** (math.log2(x0) + w * (math.log2(x1) - math.log2(x0)))
                    before, after = (a, b) if d0 > 0 else (b, a)
                    out.append({"group": group, "before": before, "after": after,
                                "x_low": x0, "x_high": x1, "x": x})
    return out


METRICS = ("kernel_tops", "e2e_tops")  # the main loop alone, and the whole call


def all_crossovers(points: Sequence[Any]) -> list[dict[str, Any]]:
    """Crossovers of the kernel-only lines and of the end-to-end lines: where quantization
    costs more than the faster main loop saves shows only in the second."""
    return [{**x, "metric": m} for m in METRICS for x in crossovers(series_of(points, m))]


def series_of(points: Sequence[Any], metric: str = "kernel_tops"
              ) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """From SweepPoint models (or any objects with .group/.x/.variants): each group's lines."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for p in points:
        for v in p.variants:
            value = getattr(v, metric)
            if v.status == "ok" and value:
                out.setdefault(p.group, {}).setdefault(v.name, []).append((p.x, value))
    for lines in out.values():
        for line in lines.values():
            line.sort()
    return out


def largest_fit(points: Sequence[Any]) -> dict[str, Any] | None:
    """When a point ran out of memory: the largest point (by operations) whose variants all
    ran, stated so the user knows what fits."""
    oom = [p for p in points if p.fault_kind == "oom"]
    if not oom:
        return None
    fit = [p for p in points if p.status == "ok"]
    first = min(oom, key=lambda p: p.ops)
    if not fit:
        return {"index": first.index, "shape": first.shape.describe(),
                "note": f"no point fit: the smallest that ran out of memory was "
                        f"{first.shape.describe()}"}
    best = max(fit, key=lambda p: p.ops)
    return {"index": best.index, "shape": best.shape.describe(),
            "note": f"largest point that fit: {best.shape.describe()} (out of memory from "
                    f"{first.shape.describe()})"}
