"""`sagetui check` of a sweep block: every point's operations, x and series, its geometry (the
scheduler's grid facts from its shape), each variant's summaries and p50 intervals from the raw
samples, its TOPS and shares of peak from those, and the crossovers and largest fit from the
points. The numbers are recomputed with core/sweep's own functions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sagetui.core import scheduler as geo
from sagetui.core.derived import kernel_and_e2e, shape_ops
from sagetui.core.report.model import Report
from sagetui.core.statistics.intervals import half_percent
from sagetui.core.sweep import plan as sw
from sagetui.core.sweep.model import Sweep, SweepPoint, SweepVariantPoint

if TYPE_CHECKING:
    from sagetui.core.report.mismatch import MismatchCollector

# grid facts that depend on the GPU, not on the shape: checked through `waves` alone
_GPU_FACTS = {"sm_count", "ctas_per_sm", "waves"}


def check_sweep(c: MismatchCollector, report: Report) -> None:
    sweep = report.sweep
    if sweep is None:
        return
    try:
        axes = sw.Axes(**sweep.axes)
    except TypeError:
        axes = None
    gpu = (report.environment or {}).get("gpu")
    for p in sweep.points:
        path = f"$.sweep.points[{p.index}]"
        _point(c, path, p, sweep, axes)
        for j, v in enumerate(p.variants):
            peak = sw.peak_tops(gpu, v.spec, p.shape.dtype) if isinstance(gpu, dict) \
                else v.peak_tops
            check_variant_point(c, f"{path}.variants[{j}]", v, p.ops, peak)
    want = sw.all_crossovers(sweep.points)
    got = [x.model_dump() for x in sweep.crossovers]
    if len(got) != len(want):
        c.out.append(_mismatch("$.sweep.crossovers", len(got), len(want),
                               "crossovers of the points' kernel and end-to-end TOPS lines"))
    else:
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            for k, val in w.items():
                c.eq(f"$.sweep.crossovers[{i}].{k}", g[k], val, "from the points' TOPS lines")
    fit = sw.largest_fit(sweep.points)
    got_fit = sweep.largest_fit.index if sweep.largest_fit else None
    if got_fit != (fit["index"] if fit else None):
        c.out.append(_mismatch("$.sweep.largest_fit.index", got_fit, fit and fit["index"],
                               "the largest point by operations whose variants all ran, "
                               "stated when a point ran out of memory"))


def _mismatch(path: str, recorded: object, expected: object, why: str):
    from sagetui.core.report.mismatch import Mismatch

    return Mismatch(path, recorded, expected, why)


def _point(c: MismatchCollector, path: str, p: SweepPoint, sweep: Sweep,
           axes: sw.Axes | None) -> None:
    s = p.shape
    c.eq(f"{path}.ops", p.ops, shape_ops(s), sweep.ops_formula)
    c.eq(f"{path}.x", p.x, sw.x_of(s, sweep.x_axis), f"the point's {sweep.x_axis}")
    if axes is not None:
        c.eq(f"{path}.group", p.group, sw.group_of(s, sweep.x_axis, axes), "what is fixed")
    check_grid(c, path, p)


def check_grid(c: MismatchCollector, path: str, p: SweepPoint) -> None:
    """A point's grid facts (its baseline's kernel's tiles at its shape), where it has them
    (a sweep's point, a workload's call)."""
    s, sch = p.shape, p.scheduler
    if sch is None:
        return
    if sch.causal is not None:
        c.eq(f"{path}.scheduler.causal", sch.causal, s.causal, "the point's shape")
    if sch.kernel not in geo.TILES:
        return
    want = geo.grid_facts(sch.kernel, batch=s.batch, heads=s.heads, q_len=s.q_len,
                          kv_len=s.n_kv_len, head_dim=s.head_dim, causal=s.causal)
    for k, val in want.items():
        c.eq(f"{path}.scheduler.{k}", getattr(sch, k), val, f"{sch.kernel} tiles at this shape")
    if sch.waves is not None and sch.sm_count and sch.ctas_per_sm and sch.grid_ctas:
        c.eq(f"{path}.scheduler.waves", sch.waves, sch.grid_ctas / (sch.sm_count * sch.ctas_per_sm),
             "grid CTAs / (SMs x CTAs per SM)")


def check_variant_point(c: MismatchCollector, path: str, v: SweepVariantPoint, ops: float,
             peak: float | None) -> None:
    if v.status != "ok" or v.timing is None or v.kernel is None:
        return
    c.summary_shape(f"{path}.timing", v.timing)
    c.summary_shape(f"{path}.kernel", v.kernel)
    samples = v.samples or {}
    for field, phase, ci_field in (("timing", "total", "p50_ci_percent"),
                                   ("kernel", v.kernel_phase or "total", "kernel_p50_ci_percent")):
        rounds = samples.get(phase)
        if not rounds:
            continue
        c.summary_from_samples(f"{path}.{field}", getattr(v, field),
                               np.concatenate([np.asarray(r, dtype=np.float64) for r in rounds]))
        c.eq(f"{path}.{ci_field}", getattr(v, ci_field),
             half_percent([float(np.median(r)) for r in rounds if r]),
             "95 % t-interval of the log round medians")
        if v.rounds is not None:
            c.eq(f"{path}.rounds", v.rounds, len(rounds), "one sample list per round")
    for k, val in kernel_and_e2e(ops, v.timing.p50_s, v.kernel.p50_s, peak).items():
        c.eq(f"{path}.{k}", getattr(v, k), val, _WHY[k])


_WHY = {"kernel_tops": "ops / p50 of the kernel phase", "e2e_tops": "ops / p50 of the call",
        "peak_tops": "the GPU's datasheet peak", "kernel_share_of_peak": "kernel TOPS / peak",
        "e2e_share_of_peak": "end-to-end TOPS / peak"}
