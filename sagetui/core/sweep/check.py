"""`sagetui check` of a sweep block: every point's operations, x and series, its geometry (the
scheduler's grid facts from its shape), each variant's summaries and p50 intervals from the raw
samples, its TOPS and shares of peak from those, and the crossovers and largest fit from the
points. The numbers are recomputed with core/sweep's own functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sagetui.core import scheduler
from sagetui.core.blocks.result import AccuracyMetrics
from sagetui.core.blocks.sweep import Sweep, SweepPoint, SweepVariantPoint
from sagetui.core.blocks.workload import Workload
from sagetui.core.config import Shape, shape_of
from sagetui.core.derived import kernel_and_e2e, shape_ops
from sagetui.core.finite import is_figure
from sagetui.core.report.mismatch import MISSING
from sagetui.core.report.model import Report
from sagetui.core.statistics.intervals import half_percent
from sagetui.core.sweep import plan
from sagetui.core.sweep.collect import call_round_medians, phase_round_medians

if TYPE_CHECKING:
    from sagetui.core.report.mismatch import MismatchCollector

# grid facts that depend on the GPU, not on the shape: checked through `waves` alone
_GPU_FACTS = {"sm_count", "ctas_per_sm", "waves"}


def check_sweep(c: MismatchCollector, report: Report) -> None:
    sweep = report.sweep
    if sweep is None:
        return
    try:
        axes = plan.Axes(**sweep.axes)
    except TypeError:
        axes = None
    gpu = (report.environment or {}).get("gpu")
    shapes = _plan(report, axes) if report.workload is None else None
    last = -1
    for i, p in enumerate(sweep.points):
        # in index order, each once, within the plan (a Slurm job's part holds some of them)
        c.recomputed.add(f"$.sweep.points[{i}].index")
        if p.index <= last or (shapes is not None and p.index >= len(shapes)):
            c.out.append(_mismatch(f"$.sweep.points[{i}].index", p.index,
                                   f"above {last}" + (f", below {len(shapes)}" if shapes else ""),
                                   "the points in index order, each once, within the plan"))
        last = p.index
        if shapes is not None and p.index < len(shapes):
            planned = shapes[p.index].model_dump()
            for k, x in p.shape.model_dump().items():
                c.same(f"$.sweep.points[{p.index}].shape.{k}", x, planned.get(k),
                       "the sweep's plan at this index (sweep/plan.plan)")
        path = f"$.sweep.points[{p.index}]"
        _point(c, path, p, sweep, axes)
        for j, v in enumerate(p.variants):
            peak = plan.peak_tops(gpu, v.spec, p.shape.dtype) if isinstance(gpu, dict) \
                else v.peak_tops
            check_variant_point(c, f"{path}.variants[{j}]", v, p.ops, peak)
        check_point_claims(c, path, p, sweep.baseline, report.config)
    check_measured_with(c, report, sweep, "$.sweep")
    _sweep_status(c, report, sweep, axes)
    want = plan.all_crossovers(sweep.points)
    got = [x.model_dump() for x in sweep.crossovers]
    if len(got) != len(want):
        c.out.append(_mismatch("$.sweep.crossovers", len(got), len(want),
                               "crossovers of the points' kernel and end-to-end TOPS lines"))
    else:
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            for k, val in w.items():
                c.eq(f"$.sweep.crossovers[{i}].{k}", g[k], val, "from the points' TOPS lines")
    fit = plan.largest_fit(sweep.points)
    got_fit = sweep.largest_fit.index if sweep.largest_fit else None
    if got_fit != (fit["index"] if fit else None):
        c.out.append(_mismatch("$.sweep.largest_fit.index", got_fit, fit and fit["index"],
                               "the largest point by operations whose variants all ran, "
                               "stated when a point ran out of memory"))


def _mismatch(path: str, recorded: object, expected: object, why: str):
    from sagetui.core.report.mismatch import Mismatch

    return Mismatch(path, recorded, expected, why)


def _point(c: MismatchCollector, path: str, p: SweepPoint, sweep: Sweep,
           axes: plan.Axes | None) -> None:
    s = p.shape
    c.eq(f"{path}.ops", p.ops, shape_ops(s), sweep.ops_formula)
    c.eq(f"{path}.x", p.x, plan.x_of(s, sweep.x_axis), f"the point's {sweep.x_axis}")
    if axes is not None:
        c.eq(f"{path}.group", p.group, plan.group_of(s, sweep.x_axis, axes), "what is fixed")
    check_grid(c, path, p)


def check_grid(c: MismatchCollector, path: str, p: SweepPoint) -> None:
    """A point's grid facts (its baseline's kernel's tiles at its shape), where it has them
    (a sweep's point, a workload's call)."""
    s, sch = p.shape, p.scheduler
    if sch is None:
        if c.complete and any(v.status == "ok" for v in p.variants):
            c.out.append(_mismatch(f"{path}.scheduler", MISSING, "its baseline's grid",
                                   "a measured point's grid at its shape"))
        return
    c.owed(f"{path}.scheduler.causal", sch.causal, s.causal, "the point's shape")
    if sch.kernel not in scheduler.TILES:
        return
    want = scheduler.grid_facts(sch.kernel, batch=s.batch, heads=s.heads, q_len=s.q_len,
                          kv_len=s.n_kv_len, head_dim=s.head_dim, causal=s.causal)
    for k, val in want.items():
        c.owed(f"{path}.scheduler.{k}", getattr(sch, k), val, f"{sch.kernel} tiles at this shape")
    if sch.sm_count and sch.ctas_per_sm and sch.grid_ctas:
        c.eq(f"{path}.scheduler.waves", sch.waves, sch.grid_ctas / (sch.sm_count * sch.ctas_per_sm),
             "grid CTAs / (SMs x CTAs per SM)")


def check_variant_point(c: MismatchCollector, path: str, v: SweepVariantPoint, ops: float,
             peak: float | None) -> None:
    if v.status != "ok" or v.timing is None or v.kernel_timing is None:
        return
    c.summary_shape(f"{path}.timing", v.timing)
    c.summary_shape(f"{path}.kernel", v.kernel_timing)
    samples = v.samples or {}
    for field, summary, phase, ci_field in (
            ("timing", v.timing, "total", "p50_ci_percent"),
            ("kernel", v.kernel_timing, v.kernel_phase or "total", "kernel_p50_ci_percent")):
        rounds = samples.get(phase)
        if not rounds:
            continue
        c.summary_from_samples(f"{path}.{field}", summary,
                               np.concatenate([np.asarray(r, dtype=np.float64) for r in rounds]))
        c.owed(f"{path}.{ci_field}", getattr(v, ci_field),
             half_percent(phase_round_medians(rounds)),
             "95 % t-interval of the log round medians")
        c.owed(f"{path}.rounds", v.round_count, len(rounds), "one sample list per round")
    for k, val in kernel_and_e2e(ops, v.timing.p50_s, v.kernel_timing.p50_s, peak).items():
        c.owed(f"{path}.{k}", getattr(v, k), val, _WHY[k])


_WHY = {"kernel_tops": "ops / p50 of the kernel phase", "e2e_tops": "ops / p50 of the call",
        "peak_tops": "the GPU's datasheet peak", "kernel_share_of_peak": "kernel TOPS / peak",
        "e2e_share_of_peak": "end-to-end TOPS / peak"}


def _against_fp32(v: SweepVariantPoint) -> bool:
    a = v.accuracy_brief
    return a is not None and any(getattr(a, f) is not None
                                 for f in (*AccuracyMetrics.model_fields, "worst_head"))


def check_point_claims(c: MismatchCollector, path: str, p: SweepPoint, baseline: str | None,
                       config: dict[str, Any] | None) -> None:
    """A point's words and verdicts: each variant ok exactly when it has timings, the point's
    status from its variants', byte-exact against the baseline's output at the point, and
    each verdict from the variants' round medians through the one analysis."""
    from sagetui.core.statistics.analysis import analyse
    from sagetui.core.statistics.threshold import Threshold, rule_percent

    words = []
    for j, v in enumerate(p.variants):
        if v.samples and v.kernel_phase is not None:
            c.eq(f"{path}.variants[{j}].kernel_phase", v.kernel_phase,
                 plan.kernel_phase([k for k in v.samples if k != "total"]),
                 "the main loop's phase where the backend has one, else the whole call")
        word = "ok" if v.timing is not None and v.kernel_timing is not None else "failed"
        c.eq(f"{path}.variants[{j}].status", v.status, word, "ok exactly when it has timings")
        words.append(word)
    ok = words.count("ok")
    want = "ok" if p.variants and ok == len(p.variants) else "partial" if ok else "failed"
    if not (p.status == "skipped" and not p.variants):
        c.eq(f"{path}.status", p.status, want, "from its variants' (sweep/collect.point_status)")
    base = next((v for v in p.variants if v.name == baseline), None)
    # the late figures (accuracy against fp32) came for some variant: they come for each. A
    # point whose late figures never came (a replay stopped between turns) holds only the
    # comparisons of its outputs with the baseline's, which its rounds made
    accurate = any(_against_fp32(v) for v in p.variants)
    for j, v in enumerate(p.variants):
        # before schema 5 a point's baseline had no accuracy (it was against the baseline)
        if accurate and v.accuracy_brief is None and v.status == "ok" \
                and (c.complete or v is not base):
            c.out.append(_mismatch(f"{path}.variants[{j}].accuracy", MISSING, "present",
                                   "measured for every variant at the point, as for the others"))
        if base is None or v is base or not (base.output_sha256 and v.output_sha256):
            continue
        acc = v.accuracy_brief.model_dump(exclude_none=True) if v.accuracy_brief else {}
        vp = f"{path}.variants[{j}].accuracy"
        if acc.get("max_abs_diff") is None and acc.get("byte_exact") is None:
            # no comparison with the baseline's output: one not finite (plan.accuracy); the
            # runner compares every two finite outputs of the point's inputs
            if is_figure(v.checksum) and is_figure(base.checksum):
                c.out.append(_mismatch(vp, MISSING, "present", "the comparison with the "
                                       "baseline's output, which two finite outputs have"))
            continue
        exact = v.output_sha256 == base.output_sha256
        c.owed(f"{vp}.byte_exact", acc.get("byte_exact"), exact,
             "its output's sha256 is the baseline's")
        if exact:
            for k in ("max_abs_diff", "mean_abs_diff"):
                if acc.get(k) is not None:  # the runner's reading: held to the hashes
                    c.eq(f"{vp}.{k}", acc[k], 0.0, "a byte-exact output differs nowhere")
    if base is None:
        return
    medians = {v.name: dict(enumerate(call_round_medians(v))) for v in p.variants}
    p50s = {v.name: v.timing.p50_s if v.timing else None for v in p.variants}
    # the run's threshold where a verdict was left out: any other verdict's, else the rule's
    given = next((Threshold.from_fields(v.verdict.model_dump()) for v in p.variants
                  if v.verdict is not None), None) or _configured_threshold(config)
    for j, v in enumerate(p.variants):
        vp = f"{path}.variants[{j}].verdict"
        if v.verdict is not None:
            c.same(f"{vp}.threshold_percent", v.verdict.threshold_percent,
                   rule_percent(v.verdict.threshold_source, v.verdict.noise_floor_percent,
                                config), "the threshold rule for its source and the configuration")
        t = Threshold.from_fields(v.verdict.model_dump()) if v.verdict is not None else given
        if t is None or not medians.get(v.name):
            continue
        try:
            an = analyse(medians, p50s, baseline, t, drift_of=())
        except ValueError:
            continue
        a = an.variants.get(v.name)
        want_v = a.verdict.to_dict() if a is not None and a.verdict is not None else {}
        if v.verdict is None:
            if want_v and c.complete:
                c.out.append(_mismatch(vp, MISSING, want_v.get("state"),
                                       "the paired verdict on the round medians"))
            continue
        got = v.verdict.model_dump()
        for k, x in want_v.items():
            c.same(f"{vp}.{k}", got.get(k), x,
                   "the paired verdict on the round medians of the raw samples")


def _configured_threshold(config: dict[str, Any] | None) -> Any:
    """The threshold the configuration resolves to (None where it resolves to none)."""
    from sagetui.core.statistics.threshold import resolve_threshold

    cfg = config or {}
    try:
        return resolve_threshold(cfg.get("threshold_percent"), cfg.get("noise_floor_percent"))
    except (ValueError, TypeError):
        return None


def _plan(report: Report, axes: plan.Axes | None) -> list[Shape] | None:
    """The shapes the sweep planned, from its configuration's shape and its axes."""
    shape = shape_of((report.config or {}).get("shape"))
    if shape is None or axes is None:
        return None
    try:
        return plan.plan(shape, axes)
    except (ValueError, TypeError):
        return None


def check_measured_with(c: MismatchCollector, report: Report, block: Sweep | Workload,
                        path: str) -> None:
    """A block of points' (a sweep's, a workload's) warm-up, rounds and iterations: the
    configuration's; no variant of a point keeps more rounds than it was asked to run."""
    from sagetui.core.run.check import run_config
    from sagetui.core.sweep.collect import measured_with

    cfg = run_config(report)
    if cfg is None:
        if report.config and c.complete:
            c.out.append(_mismatch("$.config", "unreadable", "a configuration this sagetui reads",
                                   "the configuration the points were measured with"))
        return
    for k, x in measured_with(cfg).items():
        c.eq(f"{path}.{k}", str(getattr(block, k)) if isinstance(x, dict) else getattr(block, k),
             str(x) if isinstance(x, dict) else x, "the configuration")
    if c.complete and report.inputs is None and cfg.inputs_block():
        c.out.append(_mismatch("$.inputs", MISSING, "present", "the configuration's inputs"))
    for i, p in enumerate(block.points):
        if p.variants and [v.name for v in p.variants] != list(block.variants):
            c.out.append(_mismatch(f"{path}.points[{i}].variants", [v.name for v in p.variants],
                                   list(block.variants), "every variant measured at the point"))
    most = cfg.round_limit
    for i, p in enumerate(block.points):
        for j, v in enumerate(p.variants):
            if v.round_count is not None and v.round_count > most:
                c.out.append(_mismatch(f"{path}.points[{i}].variants[{j}].rounds", v.round_count,
                                       f"<= {most}", "the rounds it was asked to run"))


def _sweep_status(c: MismatchCollector, report: Report, sweep: Sweep,
                  axes: plan.Axes | None) -> None:
    """A sweep's status from its points (sweep/collect.points_status) against its plan: stopped
    by the user, it is cancelled unless every point ran; cut short by an error, partial where
    it kept a point. A part of a sweep (a Slurm job's, measured by a pool whose runners list
    its points) may be complete with fewer points than the plan; a sweep of one runner, or the
    parts merged, is complete only with every point of it."""
    from sagetui.core.sweep.collect import points_status

    if report.status is None or report.workload is not None:
        return
    shapes = _plan(report, axes)
    want = points_status(sweep.points, len(shapes) if shapes is not None else len(sweep.points))
    from sagetui.core.run.check import is_left_out

    if any(is_left_out(v) for v in report.variants or []):  # a variant whose build failed
        want = "partial" if want == "complete" else want  # never ran: run/status.left_out_status
    allowed = {want}
    if want != "complete":
        allowed.add("cancelled")
    if want == "failed" and sweep.points:
        allowed.add("partial")
    runners = [r for r in (report.environment or {}).get("runners") or [] if isinstance(r, dict)]
    # a Slurm job's part runs its points through a pool (session/slurm.run_job), whose runners
    # list them; `sagetui merge` of the parts (each runner names its part) is the whole sweep
    part = bool(runners) and not any("part" in r for r in runners)
    if want == "partial" and sweep.points and all(p.status == "ok" for p in sweep.points) \
            and part:
        allowed.add("complete")  # a part of the sweep
    measured = sorted(i for r in runners for i in r.get("points") or [])
    if measured and measured != [p.index for p in sweep.points]:
        c.out.append(_mismatch("$.sweep.points", [p.index for p in sweep.points], measured,
                               "the points its runners measured (environment.runners)"))
    c.recomputed.add("$.status")
    if report.status not in allowed:
        c.out.append(_mismatch("$.status", report.status, " or ".join(sorted(allowed)),
                               "from the points against the sweep's plan "
                               "(sweep/collect.points_status)"))
