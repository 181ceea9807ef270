"""The report, built from a run model by one pure function: the session's recovery file and
final report, the console's export of a live run and the parity tests all call `build_report`
on a model; equal models give equal reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sagetui.core.blocks.profile import MainloopProfile
from sagetui.core.build_facts import BuildFacts, LeftOut
from sagetui.core.environment import environment_block
from sagetui.core.profile.diff import profile_diff
from sagetui.core.report.envelope import envelope
from sagetui.core.report.model import Report, Variant
from sagetui.core.run import figures, status
from sagetui.core.run.model import TOTAL, RunModel, VariantModel
from sagetui.core.samples import RoundSeries, Samples
from sagetui.core.statistics.analysis import Analysis


def build_report(m: RunModel, ending: tuple[str, list[str]] | None = None) -> Report:
    """Everything the model holds, as a valid Report (at any time: mid-run for the recovery
    file, at the end for the final report). `ending`: the status and its detail of a run that
    just ended (status.final_status), before the `finished` event that carries them."""
    assert m.config is not None, "a run model gets its configuration from run_started"
    cfg, shape = m.config, m.config.shape
    if m.baseline is not None and m.baseline != cfg.baseline_name:
        # chosen in the console (`b`, a baseline_changed event): the configuration the run
        # ended with, whose baseline the verdicts are against (`check` holds the two equal)
        cfg = cfg.model_copy(update={"baseline": m.baseline})
    an = figures.analysis(m)
    base = m.variants.get(m.baseline or "")
    samples = Samples()
    clocks = figures.clocks(m, an)
    variants = [_variant(m, v, an, samples, clocks.get(v.name))
                for v in m.variants.values()]
    run_status, detail = ending or ((m.status, m.status_detail) if m.status in status.TERMINAL
                                    else status.unfinished(len(m.completed_rounds)))
    data: dict[str, Any] = {
        **envelope(created_utc=m.created_utc, status=run_status, status_detail=detail,
                   environment=environment_block(runner=m.runner, ready=m.ready, host=m.host)),
        "config": cfg.model_dump(mode="json"),
        "inputs": cfg.inputs_block(),
        "metadata": cfg.metadata or None,
        "layout": shape.layout,
        **shape.tensor_shapes(),
        "warmup": cfg.warmup,
        "iterations": cfg.iterations,
        "iterations_per_round": cfg.iterations,
        "rounds": len(m.completed_rounds),
        "baseline": m.baseline,
        "threshold": m.threshold.fields() if m.threshold else None,
        "reference_output_sha256": base.first_output_sha256 if base else None,
        "variants": variants,
        "schedule": _schedule(m),
        "samples": samples or None,
        "faults": [f.model_dump() for f in m.faults] or None,
        **profile_parts(m.profiles, m.baseline),
    }
    data["fused_mainloop_phases"] = figures.fused_notes(m)
    d = m.decomposition
    if d:
        data["manual_decomposition_vs_public_sage2"] = {
            k: d.get(k) for k in ("equal", "max_abs", "mean_abs", "decomposed_sha256",
                                  "public_sha256", "variant")}
        data["manual_checksum"] = d.get("manual_checksum")
        data["reference_checksum"] = d.get("reference_checksum")
    data["tail_study"] = figures.tail_rows(m) or None
    return Report.model_validate({k: v for k, v in data.items() if v is not None})


def _build_facts(m: RunModel, name: str) -> BuildFacts | None:
    """A variant built from a source tree: its spec's build (sagetui/kernel_build)."""
    spec = next((s for s in (m.config.variants if m.config else []) if s.name == name), None)
    return spec.build if spec else None


def _variant(m: RunModel, v: VariantModel, an: Analysis, samples: Samples,
             clocks: dict[str, Any] | None) -> dict[str, Any]:
    f = figures.of(m, v)
    entry: dict[str, Any] = {
        "name": v.name, "path": v.path, "backend": v.backend, "spec": v.spec,
        "status": v.status if v.status != "pending" else "failed", "error": v.error,
        "kernel": f.kernel, "options": f.options or None,
        "scheduler": f.scheduler if v.status != "failed" or v.asked else None,
        "rounds_asked": len(v.asked),
        "failed_round": v.failed_round, "input_sha256": m.ready.get("input_sha256"),
        "build": _build_facts(m, v.name)}
    if v.completed_rounds:
        entry.update(rounds=f.rounds, timing=f.timing, phase_timings=f.phase_timings or None,
                     intervals=f.intervals or None, telemetry=f.telemetry,
                     achieved=f.achieved, sol=f.sol)
        pk = f.peak
        if pk:
            entry["peak"] = {k: pk[k] for k in ("qk_type", "pv_type", "source")}  # type: ignore[literal-required]
        kept = _series(v)
        samples[v.name] = kept
        a = an.variants.get(v.name)
        flags = (a.outliers if a else None) or []
        entry["outliers"] = {"count": len(flags), "where": figures.outlier_where(v, flags)}
        if a is not None and a.drift is not None:
            entry["drift"] = a.drift.to_dict()
        entry.update(f.host)
        entry["clocks"] = clocks
    entry.update(f.outputs)
    entry.update(v.facts.model_dump(exclude_none=True))
    entry["verdict"] = an.verdict_dict(v.name)
    if v.name in an.variants:
        entry["speedup_vs_baseline_percent"] = an.variants[v.name].speedup_p50_percent
    return {k: x for k, x in entry.items() if x is not None}


def _series(v: VariantModel) -> dict[str, RoundSeries]:
    """The raw samples of every phase measured in every completed round (sharing the model's
    arrays), and the total's."""
    rounds = v.completed_rounds
    return {p: v.samples[p].series() for p in [*figures.phase_order(v), TOTAL]
            if v.samples[p].rounds == rounds}


def _schedule(m: RunModel) -> list[dict[str, Any]]:
    """The blocks of every completed round, of the variants that completed it."""
    kept = {n: set(v.completed_rounds) for n, v in m.variants.items()}
    return [s for s in m.schedule if s["round"] in kept.get(s["variant"], set())]


def with_left_out(report: Report, left_out: Mapping[str, LeftOut]) -> Report:
    """The report with each variant whose build failed: asked for, never run (status failed,
    the build's failure its error), and the run partial, saying so (status.py: complete
    means every variant asked for ran)."""
    if not left_out:
        return report
    failed = [Variant(name=name, backend=lo.backend, spec=lo.spec, status="failed",
                      error=f"{status.BUILD_FAILED}{lo.why}") for name, lo in left_out.items()]
    run_status, detail = status.left_out_status(report.status or status.COMPLETE,
                                                list(report.status_detail or []),
                                                [(name, lo.why) for name, lo in left_out.items()])
    return report.model_copy(update={
        "variants": [*(report.variants or []), *failed], "status": run_status,
        "status_detail": detail})


def profile_parts(profiles: Sequence[MainloopProfile], baseline: str | None) -> dict[str, Any]:
    """A report's profile blocks: the profiles and, for two or more, the diff of each against
    the baseline's (core/profile/diff.py), made together so that one never goes without the
    other."""
    return {"mainloop_profiles": list(profiles) or None,
            "mainloop_diff": profile_diff(profiles, baseline)}


def with_profiles(report: Report, profiles: Sequence[MainloopProfile]) -> Report:
    """The report with profiles the session's model never held (the console's p, made after
    the run of the same builds), and their diff, as build_report makes them from a model that
    holds them."""
    return report.model_copy(update=profile_parts(profiles, report.baseline))


def profile_report(config_json: dict[str, Any], profiles: list[MainloopProfile],
                   status: str, environment: dict[str, Any] | None = None,
                   baseline: str | None = None) -> Report:
    """A profile pass's report (`sagetui profile`): the envelope, the configuration and the
    profiles; `environment`: the pass's (where the profiled calls ran, and ncu); two or more
    profiles also get the diff of each against the baseline's (the first's when `baseline`
    names none)."""
    data = {**envelope(created_utc=None, status=status, environment=environment),
            "config": config_json, "baseline": baseline, **profile_parts(profiles, baseline)}
    return Report.model_validate({k: v for k, v in data.items() if v is not None})
