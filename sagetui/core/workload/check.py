"""`sagetui check` of a workload block: every point's operations and each variant's summaries,
p50 intervals and TOPS from its raw samples (as a sweep's point: sweep/check.py), its verdict
from its round medians, each call's weight from the counts, and the totals, their speedups and
intervals and the worst call and head from the points (core/workload/build.py's own
functions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sagetui.core.derived import OPS_FORMULA, shape_ops
from sagetui.core.report.model import Report
from sagetui.core.statistics.verdict import paired_speedup
from sagetui.core.sweep import plan as sw
from sagetui.core.sweep.build import call_round_medians
from sagetui.core.sweep.check import check_variant_point
from sagetui.core.sweep.model import SweepPoint
from sagetui.core.workload import build as wb

if TYPE_CHECKING:
    from sagetui.core.report.mismatch import MismatchCollector


def check_workload(c: MismatchCollector, report: Report) -> None:
    wl = report.workload
    if wl is None:
        return
    gpu = (report.environment or {}).get("gpu")
    for i, p in enumerate(wl.points):
        path = f"$.workload.points[{i}]"
        c.eq(f"{path}.ops", p.ops, shape_ops(p.shape), OPS_FORMULA)
        for j, v in enumerate(p.variants):
            peak = sw.peak_tops(gpu, v.spec, p.shape.dtype) if isinstance(gpu, dict) \
                else v.peak_tops
            check_variant_point(c, f"{path}.variants[{j}]", v, p.ops, peak)
        _verdicts(c, path, p, wl.baseline)
    for i, (call, w) in enumerate(zip(wl.calls, wb.share_weights(wl.calls), strict=True)):
        c.eq(f"$.workload.calls[{i}].weight", call.weight, w,
             "its signature's count shared among the replayed calls of that signature")
        if call.point is not None and call.point < len(wl.points) and call.shape is not None:
            c.eq(f"$.workload.calls[{i}].shape", call.shape.describe(),
                 wl.points[call.point].shape.describe(), "its point's shape")
    names = list(wl.variants)
    _rows(c, "$.workload.totals", [t.model_dump() for t in wl.totals],
          [t.model_dump() for t in wb.totals(wl.calls, wl.points, names, wl.baseline)],
          "Σ weight x p50 over the replayed calls; the speedup of that total and its interval "
          "(statistics/weighted_total.py)")
    _rows(c, "$.workload.worst", [w.model_dump() for w in wl.worst],
          [w.model_dump() for w in wb.worst(wl.calls, wl.points, names, wl.baseline)],
          "the lowest p50 speedup, the largest relative L1, the largest head's relative L1")


def _rows(c: MismatchCollector, path: str, got: list[dict[str, Any]],
          want: list[dict[str, Any]], why: str) -> None:
    from sagetui.core.report.mismatch import Mismatch

    if len(got) != len(want):
        c.out.append(Mismatch(path, len(got), len(want), f"one per variant: {why}"))
        return
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for k, val in w.items():
            if (g[k] is None) != (val is None):  # eq() skips a None: a figure given or not
                c.out.append(Mismatch(f"{path}[{i}].{k}", g[k], val, why))
            else:
                c.eq(f"{path}[{i}].{k}", g[k], val, why)


def _verdicts(c: MismatchCollector, path: str, p: SweepPoint, baseline: str | None) -> None:
    """Each variant's verdict again from the round medians of its and the baseline's whole
    call, paired by round, at the threshold it records."""
    base = next((v for v in p.variants if v.name == baseline), None)
    if base is None:
        return
    b = call_round_medians(base)
    for j, v in enumerate(p.variants):
        if v.verdict is None or v.name == baseline:
            continue
        mine = call_round_medians(v)
        n = min(len(b), len(mine))
        want = paired_speedup(b[:n], mine[:n], threshold_percent=v.verdict.threshold_percent,
                              confidence=v.verdict.confidence)
        for k, val in want.to_dict().items():
            if k not in ("threshold_percent", "confidence"):
                c.eq(f"{path}.variants[{j}].verdict.{k}", getattr(v.verdict, k), val,
                     "paired-t on log ratios of the round medians")
