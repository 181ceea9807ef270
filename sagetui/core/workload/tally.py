"""The `workload` block from a capture and the points its calls were measured as: each call's
weight, the totals per variant and the worst call and head. The session calls these as the
replay ends and `sagetui check` calls them again on the report's points: each number is derived
here once."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sagetui.core.accuracy import error_rank
from sagetui.core.blocks.sweep import SweepPoint, SweepVariantPoint
from sagetui.core.blocks.workload import ReplayedCall, Workload, WorkloadTotal, WorstOf
from sagetui.core.capture.loaded import LoadedCapture, WorkloadCall
from sagetui.core.capture.manifest import MANIFEST
from sagetui.core.config import RunConfig
from sagetui.core.derived import speedup_or_none
from sagetui.core.report.model import Fault, Report
from sagetui.core.statistics import weighted_total
from sagetui.core.sweep.collect import (
    call_round_medians,
    drop_none,
    measured_with,
    points_report,
)


def call_label(call: WorkloadCall | ReplayedCall, prefix: str = "call ") -> str:
    """A replayed call's name in tables and as its point's group: "call 3 blocks.3.attn"
    (prefix "#": "#3 blocks.3.attn", in the progress lines)."""
    return f"{prefix}{call.index}" + (f" {call.module}" if call.module else "")


def share_weights(calls: Sequence[ReplayedCall]) -> list[float | None]:
    """Each replayed call's weight: its signature's count shared among the replayed calls of
    that signature (saved calls alike share one count: weighed once, not once each)."""
    replayed = Counter(c.signature for c in calls if c.point is not None)
    return [c.count / replayed[c.signature] if c.point is not None else None for c in calls]


def replayed_calls(capture: LoadedCapture, selected: Sequence[WorkloadCall]) -> list[ReplayedCall]:
    """Every selected call; the runnable ones numbered as points in order, the others with why
    they were skipped."""
    out, n = [], 0
    for c in selected:
        entry = ReplayedCall(index=c.index, module=c.module, signature=c.facts.signature,
                             count=c.weight, scale=c.scale, file=c.facts.file, shape=c.shape,
                             skipped=c.unfit, point=None if c.unfit else n,
                             cast=True if c.cast else None)
        n += c.unfit is None
        out.append(entry)
    return [c.model_copy(update={"weight": w}) for c, w in zip(out, share_weights(out),
                                                                 strict=True)]


def _measured(v: SweepVariantPoint | None) -> bool:
    return v is not None and v.status == "ok" and v.timing is not None


def _of(points: Sequence[SweepPoint], call: ReplayedCall, name: str) -> SweepVariantPoint | None:
    p = next((p for p in points if p.index == call.point), None) \
        if call.point is not None else None
    return next((v for v in p.variants if v.name == name), None) if p is not None else None


def totals(calls: Sequence[ReplayedCall], points: Sequence[SweepPoint], variants: Sequence[str],
           baseline: str | None) -> list[WorkloadTotal]:
    """Per variant: Σ weight · p50 over the replayed calls and, against the baseline, the
    speedup of that total with its interval (statistics/weighted_total.py)."""
    replayed = [c for c in calls if c.point is not None and c.weight]
    out = []
    for name in variants:
        mine = [(c, _of(points, c, name)) for c in replayed]
        missing = [c.index for c, v in mine if not _measured(v)]
        if missing:
            out.append(WorkloadTotal(variant=name, missing=missing))
            continue
        row: dict[str, Any] = {"variant": name, "seconds": weighted_total.total_seconds(
            (c.weight or 0.0, v.timing.p50_s) for c, v in mine if v and v.timing)}
        if baseline is not None and name != baseline:
            pairs = [(c, b, v) for c, v in mine if _measured(b := _of(points, c, baseline))]
            if len(pairs) == len(mine):
                t = weighted_total.total_speedup([weighted_total.CallTimes(
                    weight=c.weight or 0.0, baseline_p50=b.timing.p50_s,
                    variant_p50=v.timing.p50_s, baseline_rounds=call_round_medians(b),
                    variant_rounds=call_round_medians(v))
                    for c, b, v in pairs if b and v and b.timing and v.timing])
                row.update(speedup_percent=t.speedup_percent, ci_low_percent=t.ci_low_percent,
                           ci_high_percent=t.ci_high_percent, df=t.df)
        row.update(_back_to_back(mine, [_of(points, c, baseline) for c, _ in mine]
                                 if baseline is not None and name != baseline else None))
        out.append(WorkloadTotal.model_validate(drop_none(row)))
    return out


def _back_to_back(mine: list[tuple[ReplayedCall, SweepVariantPoint | None]],
                  base: list[SweepVariantPoint | None] | None) -> dict[str, Any]:
    """The total in back-to-back time (Σ weight · back-to-back time per call) and its speedup
    against the baseline's with its interval, paired by round (weighted_total.py), where every
    call has one."""
    if not all(v is not None and v.back_to_back_s for _, v in mine):
        return {}
    row: dict[str, Any] = {"back_to_back_seconds": weighted_total.total_seconds(
        (c.weight or 0.0, v.back_to_back_s) for c, v in mine if v and v.back_to_back_s)}
    if base is None or not all(b is not None and b.back_to_back_s for b in base):
        return row
    t = weighted_total.total_speedup([weighted_total.CallTimes(
        weight=c.weight or 0.0, baseline_p50=b.back_to_back_s, variant_p50=v.back_to_back_s,
        baseline_rounds=b.back_to_back_times_s or [], variant_rounds=v.back_to_back_times_s or [])
        for (c, v), b in zip(mine, base, strict=True)
        if v and b and v.back_to_back_s and b.back_to_back_s])
    row.update(back_to_back_speedup_percent=t.speedup_percent,
               back_to_back_ci_low_percent=t.ci_low_percent,
               back_to_back_ci_high_percent=t.ci_high_percent, back_to_back_df=t.df)
    return row


def worst(calls: Sequence[ReplayedCall], points: Sequence[SweepPoint], variants: Sequence[str],
          baseline: str | None) -> list[WorstOf]:
    """Per variant (WorstOf): the call it is slowest on against the baseline, the call it is
    least accurate on, and its worst query head over every call. Ties: the earlier call."""
    out = []
    for name in variants:
        row: dict[str, Any] = {"variant": name}
        speed, acc, head = [], [], []
        for c in calls:
            v = _of(points, c, name)
            if not _measured(v) or v is None or v.timing is None:
                continue
            b = _of(points, c, baseline) if baseline and name != baseline else None
            if b is not None and b.timing is not None and _measured(b):
                speed.append((speedup_or_none(b.timing.p50_s, v.timing.p50_s), c.index))
            a = v.accuracy_brief.model_dump(exclude_none=True) if v.accuracy_brief else {}
            if computed(a):  # a figure not finite (None in the report) is the worst
                acc.append((a.get("relative_l1"), c.index))
            if a.get("worst_head") is not None:
                head.append((a.get("worst_head_relative_l1"), c.index, a["worst_head"]))
        if speed:
            s, i = min(speed, key=lambda x: (x[0], x[1]))
            row.update(slowest_call=i, slowest_speedup_percent=s)
        if acc:
            r, i = max(acc, key=lambda x: (*error_rank(x[0]), -x[1]))
            row.update(least_accurate_call=i, relative_l1=_finite(r))
        if head:
            r, i, h = max(head, key=lambda x: (*error_rank(x[0]), -x[1]))
            row.update(worst_head_call=i, worst_head=h, worst_head_relative_l1=_finite(r))
        out.append(WorstOf.model_validate(drop_none(row)))
    return out


ACCURACY_FIGURES = ("cosine_similarity", "relative_l1", "rmse", "max_abs_error", "worst_head")


def computed(acc: dict[str, Any]) -> bool:
    """Whether a point's accuracy against fp32 attention was computed (a figure that was not
    finite is left out of it: a NaN output keeps its worst head and no relative L1)."""
    return any(acc.get(k) is not None for k in ACCURACY_FIGURES)


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def manifest_sha256(directory: str) -> str:
    from pathlib import Path

    return hashlib.sha256((Path(directory) / MANIFEST).read_bytes()).hexdigest()


def cast_to(calls: Sequence[ReplayedCall]) -> str | None:
    """The dtype float32 calls were replayed cast to (`--dtype`), where any was."""
    return next((c.shape.dtype for c in calls if c.cast and c.shape is not None), None)


def workload_block(config: RunConfig, capture: LoadedCapture, calls: list[ReplayedCall],
                   points: list[SweepPoint], selection: str | None = None,
                   order: str | None = None) -> Workload:
    names = [v.name for v in config.variants]
    base = config.baseline_name
    points = sorted(points, key=lambda p: p.index)
    return Workload.model_validate(drop_none({
        "directory": str(capture.directory), "manifest_sha256": manifest_sha256(
            str(capture.directory)), "calls_seen": capture.manifest.calls_seen,
        "selection": selection, "cast_to": cast_to(calls), "order": order,
        **measured_with(config),
        "calls": calls,
        "points": points, "totals": totals(calls, points, names, base),
        "worst": worst(calls, points, names, base)}))


def workload_report(base: RunConfig, block: Workload, *, environment: dict[str, Any],
                    created: str, status: str, faults: list[Fault],
                    detail: list[str] | None = None) -> Report:
    """The workload report: its configuration is the run's as given, at the first call's shape,
    its inputs the capture's directory (a file per call: the block's calls name them)."""
    base = base.model_copy(update={"inputs_path": block.directory})
    return points_report(base, {"workload": block}, environment=environment, created=created,
                         status=status, faults=faults, detail=detail)
