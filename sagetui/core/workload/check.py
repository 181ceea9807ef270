"""`sagetui check` of a workload block: every point's operations and each variant's summaries,
p50 intervals and TOPS from its raw samples (as a sweep's point: sweep/check.py), its verdict
from its round medians, each call's weight from the counts, and the totals, their speedups and
intervals and the worst call and head from the points (core/workload/tally.py's own
functions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sagetui.core.derived import OPS_FORMULA, shape_ops
from sagetui.core.report.io import one_line
from sagetui.core.report.mismatch import MISSING, Mismatch
from sagetui.core.report.model import Report
from sagetui.core.run.status import CANCELLED, COMPLETE, FAILED, PARTIAL
from sagetui.core.sweep import plan
from sagetui.core.sweep.check import (
    check_grid,
    check_measured_with,
    check_point_claims,
    check_variant_point,
)
from sagetui.core.sweep.collect import points_status
from sagetui.core.workload import tally

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
        c.eq(f"{path}.x", p.x, plan.x_of(p.shape, "q_len"), "its call's q_len")
        call = next((x for x in wl.calls if x.point == p.index), None)
        if call is not None:
            c.eq(f"{path}.group", p.group, tally.call_label(call), "its call's index and module")
        check_grid(c, path, p)
        for j, v in enumerate(p.variants):
            peak = plan.peak_tops(gpu, v.spec, p.shape.dtype) if isinstance(gpu, dict) \
                else v.peak_tops
            check_variant_point(c, f"{path}.variants[{j}]", v, p.ops, peak)
        check_point_claims(c, path, p, wl.baseline, report.config)
    check_measured_with(c, report, wl, "$.workload")
    indices = [call.index for call in wl.calls]
    if indices != sorted(set(indices)):
        c.out.append(Mismatch("$.workload.calls", indices, "increasing, each once",
                              "the calls in the program's order (the manifest's)"))
    # the runnable calls numbered as points in order (tally.replayed_calls); the points in
    # that order, each once, a replay stopped early lacking the last
    n = 0
    for i, call in enumerate(wl.calls):
        if call.point is not None:
            c.eq(f"$.workload.calls[{i}].point", call.point, n, "the runnable calls in order")
        n += call.skipped is None
    for i, p in enumerate(wl.points):
        c.eq(f"$.workload.points[{i}].index", p.index, i, "the replayed calls in order")
    for i, (call, w) in enumerate(zip(wl.calls, tally.share_weights(wl.calls), strict=True)):
        path = f"$.workload.calls[{i}]"
        c.eq(f"{path}.weight", call.weight, w,
             "its signature's count shared among the replayed calls of that signature")
        point = wl.point_of(call)
        if call.point is not None and call.shape is None and c.complete:
            c.out.append(Mismatch(f"{path}.shape", MISSING, "its point's shape",
                                  "a replayed call's shape"))
        if point is not None and call.shape is not None:
            mine = call.shape.model_dump()
            for k, x in point.shape.model_dump().items():
                if mine.get(k) is not None or x is not None:
                    c.same(f"{path}.shape.{k}", mine.get(k), x, "its point's shape")
        if (call.point is None) == (call.skipped is None):
            c.out.append(Mismatch(f"{path}.skipped", call.skipped, "why, where it has no point",
                                  "a call is replayed (a point) or skipped (why), not both"))
        if call.cast and (call.shape is None or call.shape.dtype != wl.cast_to):
            c.out.append(Mismatch(f"{path}.cast", call.cast, f"replayed in {wl.cast_to}",
                                  "a cast call is replayed in the workload's cast_to (--dtype)"))
    c.same("$.workload.cast_to", wl.cast_to, tally.cast_to(wl.calls),
         "the dtype the cast calls were replayed in")
    _status(c, report)
    names = list(wl.variants)
    _rows(c, "$.workload.totals", [t.model_dump() for t in wl.totals],
          lambda: [t.model_dump()
                   for t in tally.totals(wl.calls, wl.points, names, wl.baseline)],
          "Σ weight x p50 over the replayed calls; the speedup of that total and its interval "
          "(statistics/weighted_total.py)")
    _rows(c, "$.workload.worst", [w.model_dump() for w in wl.worst],
          lambda: [w.model_dump() for w in tally.worst(wl.calls, wl.points, names, wl.baseline)],
          "the lowest p50 speedup, the largest relative L1, the largest head's relative L1")


def _rows(c: MismatchCollector, path: str, got: list[dict[str, Any]],
          recompute: Callable[[], list[dict[str, Any]]], why: str) -> None:
    try:
        want = recompute()
    except ValueError as exc:  # the points hold what no figure can be made of (an edit)
        c.out.append(Mismatch(path, "recorded", f"cannot be recomputed: {one_line(str(exc))}",
                              why))
        return
    if len(got) != len(want):
        c.out.append(Mismatch(path, len(got), len(want), f"one per variant: {why}"))
        return
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for k, val in w.items():
            # eq() skips a None (a figure given or not) and compares numbers and words
            if isinstance(val, list):  # a variant's calls not measured: held whole
                c.recomputed.update(f"{path}[{i}].{k}[{j}]" for j in range(len(g[k] or [])))
            if (g[k] is None) != (val is None) or (isinstance(val, list) and g[k] != val):
                c.out.append(Mismatch(f"{path}[{i}].{k}", g[k], val, why))
            elif not isinstance(val, list):
                c.eq(f"{path}[{i}].{k}", g[k], val, why)


def _status(c: MismatchCollector, report: Report) -> None:
    """The status against the points (sweep/collect.points_status): `complete` only when every
    call to replay has its point and every variant measured it; a replay cut short (stopped,
    or its recovery file) is `partial` when a point was kept, else cancelled or failed; one
    with a variant left out (`variants`: never ran) is never complete. A replay that took its
    calls in turn and was stopped between rounds keeps every call it reached, cut short: a
    point with fewer rounds than the replay's (at a fixed number of rounds) is one. Who
    stopped it and when (status_detail) is taken as recorded."""
    wl = report.workload
    assert wl is not None
    planned = sum(call.point is not None for call in wl.calls)
    fixed = (report.config or {}).get("until_ci_percent") is None
    short = fixed and any(v.status == "ok" and (v.round_count or 0) < wl.rounds
                          for p in wl.points for v in p.variants or [])
    cut = len(wl.points) < planned or short
    want = points_status(wl.points, planned, stopped=cut)
    c.recomputed.add("$.status")
    if want == COMPLETE and any(v.status == "failed" for v in report.variants or []):
        want = PARTIAL  # a variant left out (its build failed: run/assemble.with_left_out)
    allowed = {want, FAILED} if want == CANCELLED else {want}
    if report.status in (COMPLETE, PARTIAL, FAILED, CANCELLED) and report.status not in allowed:
        c.out.append(Mismatch("$.status", report.status, want,
                              f"from the {len(wl.points)} points of {planned} calls to replay"))
