"""One sweep point (the `sweep.points[i]` entry) from the report of that point's run, and the
sweep block from its points. The session calls these as points finish; nothing here runs a
kernel."""

from __future__ import annotations

from typing import Any

from sagetui.core.blocks.result import VariantResult
from sagetui.core.blocks.sweep import Sweep, SweepPoint, SweepVariantPoint
from sagetui.core.config import RunConfig, Shape
from sagetui.core.derived import kernel_and_e2e, shape_ops
from sagetui.core.report.envelope import envelope
from sagetui.core.report.model import Fault, Report, Variant
from sagetui.core.samples import Samples
from sagetui.core.statistics.summary import round_medians
from sagetui.core.sweep import plan


def phase_round_medians(rounds: list[list[float]] | None) -> list[float]:
    """A phase's round medians from its raw samples per round (a point's `samples[phase]`)."""
    return round_medians(rounds or [])


def call_round_medians(v: SweepVariantPoint) -> list[float]:
    """A variant's round medians of the whole call at its point (what its verdict pairs)."""
    return phase_round_medians((v.samples or {}).get("total"))


# a variant's result (blocks/result.py): what a point copies of its run's variant; a failed one
# keeps who it was and why
RESULT = set(VariantResult.model_fields)
FAILED = {"name", "backend", "spec", "error", "provenance"}


def variant_point(v: Variant, rep: Report, point_ops: float,
                  baseline: str | None) -> dict[str, Any]:
    if v.status != "ok" or v.timing is None:
        return {**v.model_dump(include=FAILED, exclude_none=True), "status": "failed"}
    entry = v.model_dump(include=RESULT, exclude_none=True)
    peak = (v.achieved or {}).get("peak_tops")  # its run's (core/run/figures.peak)
    kept = dict((rep.samples or Samples()).get(v.name, {}))
    samples = {p: s.tolist() for p, s in kept.items()}
    phase = plan.kernel_phase(list(v.phase_timings or {}))
    kernel = v.timing if phase == "total" else (v.phase_timings or {})[phase]
    intervals = v.intervals or {}  # its run's (core/run/figures.intervals)
    entry.update(kernel_phase=phase, kernel=kernel.model_dump(), rounds=len(v.rounds or []),
                 p50_ci_percent=intervals.get("total"), kernel_p50_ci_percent=intervals.get(phase),
                 samples=samples or None,
                 **kernel_and_e2e(point_ops, v.timing.p50_s, kernel.p50_s, peak))
    entry["accuracy"] = plan.accuracy(v.model_dump(), baseline if v.name != baseline else None)
    return entry


def point(index: int, shape: Shape, axes: plan.Axes, rep: Report | None, *,
          error: str | None = None, fault_kind: str | None = None,
          elapsed_s: float | None = None, measured_on: dict[str, Any] | None = None,
          group: str | None = None) -> SweepPoint:
    """The point's entry; `rep` None when the point never ran (its setup failed: `error`).
    `group`: the series it belongs to where no axes name it (a workload's call)."""
    x_axis = axes.x_axis
    data: dict[str, Any] = {"index": index, "x": plan.x_of(shape, x_axis),
                            "group": group or plan.group_of(shape, x_axis, axes), "shape": shape,
                            "ops": shape_ops(shape), "error": error, "fault_kind": fault_kind,
                            "elapsed_s": elapsed_s or None, "measured_on": measured_on}
    if rep is None:
        data["status"] = "failed"
        return SweepPoint.model_validate(drop_none(data))
    variants = [variant_point(v, rep, data["ops"], rep.baseline) for v in rep.variants or []]
    data.update(variants=variants, scheduler=_grid(rep), input_sha256=next(
        (v.input_sha256 for v in rep.variants or [] if v.input_sha256), None),
        faults=rep.faults or None, status=point_status([v["status"] for v in variants]))
    if rep.faults and not fault_kind:
        data["fault_kind"] = rep.faults[0].kind
        data["error"] = data["error"] or rep.faults[0].message
    return SweepPoint.model_validate(drop_none(data))


def point_status(variants: list[str]) -> str:
    """A measured point's status from its variants' (each "ok" exactly when it has timings):
    ok when every one is, partial when some is, else failed."""
    ok = variants.count("ok")
    return "ok" if variants and ok == len(variants) else ("partial" if ok else "failed")


def sweep_block(config: RunConfig, axes: plan.Axes, points: list[SweepPoint]) -> Sweep:
    """The whole block: points, the crossovers between their lines, the largest that fit."""
    return Sweep.model_validate(drop_none({
        "x_axis": axes.x_axis, "axes": axes.to_dict(), **measured_with(config),
        "points": points, "crossovers": plan.all_crossovers(points),
        "largest_fit": plan.largest_fit(points)}))


def measured_with(config: RunConfig) -> dict[str, Any]:
    """A block of points' Measured fields (blocks/sweep.py), from the configuration."""
    return {"baseline": config.baseline_name,
            "variants": {v.name: v.spec for v in config.variants},
            "warmup": config.warmup, "rounds": config.rounds, "iterations": config.iterations}


def _grid(rep: Report) -> Any:
    """The point's grid: its baseline's (each variant's own is in the point's run report;
    a sweep keeps one per point, the baseline's, the kernel its TOPS line is read against)."""
    variants = rep.variants or []
    base = next((v for v in variants if v.name == rep.baseline and v.scheduler), None)
    return (base or next((v for v in variants if v.scheduler), None) or rep).scheduler


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def points_status(points: list[SweepPoint], planned: int, *, stopped: bool = False) -> str:
    """A sweep's (a workload's) status from its points: complete when every planned point is
    there and ok, partial when some point measured something, else failed; `stopped` (a
    signal, the user) before every point ran: partial when some point measured something,
    else cancelled."""
    kept = any(p.status in ("ok", "partial") for p in points)
    if stopped:
        return "partial" if kept else "cancelled"
    ok = [p for p in points if p.status == "ok"]
    if len(ok) == len(points) == planned:
        return "complete"
    return "partial" if kept else "failed"


def stopped_detail(stopped_by: str, kept: int, planned: int, unit: str = "points",
                   dropped: bool = True) -> str:
    """Why a sweep (a workload: unit "calls") that was stopped is not complete; `dropped`:
    one was being measured, and is not kept (its rounds cut short)."""
    return (f"stopped by {stopped_by} after {kept} of {planned} {unit}"
            + ("; the one in progress is not kept" if dropped else ""))


def sweep_report(base: RunConfig, axes: plan.Axes, points: list[SweepPoint], *,
                 environment: dict[str, Any], created: str, status: str,
                 faults: list[Fault], detail: list[str] | None = None) -> Report:
    """The sweep report (a single runner's, several runners' merged, or Slurm jobs' joined):
    its points in index order and the block derived from them."""
    points = sorted(points, key=lambda p: p.index)
    return points_report(base, {"sweep": sweep_block(base, axes, points)},
                         environment=environment, created=created, status=status,
                         faults=faults, detail=detail)


def points_report(base: RunConfig, block: dict[str, Any], *, environment: dict[str, Any],
                  created: str, status: str, faults: list[Fault],
                  detail: list[str] | None = None) -> Report:
    """A report made of points (a sweep's, a workload's: `block`), with the envelope a run's
    has: its tool, status, environment, configuration and inputs."""
    data = {**envelope(created_utc=created, status=status, status_detail=detail,
                       environment=environment), "config": base.model_dump(mode="json"),
            "inputs": base.inputs_block(), "metadata": base.metadata or None, **block,
            "faults": [f.model_dump() for f in faults] or None}
    return Report.model_validate(drop_none(data))
