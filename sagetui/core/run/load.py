"""A saved report loaded into the run model, so that `sagetui view` shows it with the same panels
and the same figures (figures.py) as a live run.

Every variant keeps its report entry (`recorded`): its numbers are shown as written. Its raw
samples, where kept, are adopted (not copied) for the plots and the intervals. A report made
before schema 3 kept one scheduler block, the first variant's, and copied the baseline's
phase timings to the top level: here each variant gets its own grid from its own kernel
(figures.scheduler), and top-level facts stay the report's (`RunModel.report`), shown only
where no variant has its own (the phase-breakdown report has no variants at all).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from sagetui.core.config import RunConfig
from sagetui.core.phases import PARENTS
from sagetui.core.report.model import Report, VariantFacts
from sagetui.core.run import figures
from sagetui.core.run.model import TOTAL, RunModel, VariantModel
from sagetui.core.samples import Samples
from sagetui.core.statistics.threshold import Threshold, config_threshold


def report_threshold(report: Report) -> Threshold:
    """The threshold a saved report's verdicts were judged with (what a recomputed verdict, for
    a new baseline say, uses too): the report's own (schema 3), its verdicts', else its
    configuration's (the config is free-form JSON), else the default. A noise floor over the
    rule gives the default."""
    if report.threshold is not None and (t := Threshold.from_fields(
            report.threshold.model_dump())):
        return t
    for v in report.variants or []:
        if v.verdict is not None and (t := Threshold.from_fields(v.verdict.model_dump())):
            return t
    return config_threshold(report.config or {})


def from_report(report: Report) -> RunModel:
    m = RunModel(report=report)
    try:
        m.config = RunConfig.model_validate(report.config) if report.config else None
    except ValidationError:
        m.config = None  # free-form JSON of another version: the report's own fields stand
    m.status = report.status or "saved"
    m.status_detail = list(report.status_detail or [])
    m.created_utc = report.created_utc
    env = report.environment or {}
    m.runner = {k: env[k] for k in ("python", "torch", "device", "protocol") if k in env}
    m.ready = {"device": env.get("device"), "gpu": env.get("gpu")
               if isinstance(env.get("gpu"), dict) else None}
    m.host = {k: env[k] for k in ("platform", "host") if k in env}
    m.baseline = report.baseline or (report.variants[0].name if report.variants else None)
    m.threshold = report_threshold(report)
    m.faults = list(report.faults or [])
    dec = report.manual_decomposition_vs_public_sage2
    if dec is not None:
        m.decomposition = {**dec.model_dump(exclude_none=True),
                           "manual_checksum": report.manual_checksum,
                           "reference_checksum": report.reference_checksum}
    m.tail_rows = [row.model_dump(exclude_none=True) for row in report.tail_study or []]
    m.schedule = [e.model_dump() for e in report.schedule or []]
    numbers = report.round_numbers()
    m.profiles = list(report.mainloop_profiles or [])
    for i, rv in enumerate(report.variants or []):
        v = m.variant(rv.name)
        v.index, v.recorded = i, rv
        v.backend, v.path, v.spec = rv.backend, rv.path, rv.spec
        v.status, v.error, v.failed_round = rv.status or "ok", rv.error, rv.failed_round
        v.kernel = rv.kernel
        v.options = _options(report, rv.name)
        v.facts = VariantFacts.model_validate(rv.model_dump(
            include=set(VariantFacts.model_fields), exclude_none=True))
        v.verdict = rv.verdict.model_dump() if rv.verdict else None
        v.drift = rv.drift.model_dump() if rv.drift else None
        v.speedup_percent = rv.speedup_vs_baseline_percent
        _samples(v, (report.samples or Samples()).get(rv.name) or {}, numbers.get(rv.name))
        v.first_output_sha256 = (report.reference_output_sha256
                                 if rv.name == m.baseline else None)
    m.completed_rounds = sorted({r for v in m.variants.values() for r in v.completed_rounds})
    m.version += 1
    return m


def _options(report: Report, name: str) -> dict[str, Any]:
    cfg = report.config if isinstance(report.config, dict) else {}
    variants = cfg.get("variants")
    for c in variants if isinstance(variants, list) else []:  # a report is read as it is
        if isinstance(c, dict) and c.get("name") == name and isinstance(c.get("options"), dict):
            return dict(c["options"])
    return {}


def _samples(v: VariantModel, phases: dict[str, Any], numbers: list[int] | None) -> None:
    """A variant's raw samples, adopted; its phase tree from their names (or its recorded
    phase timings'), parents where the tree of SageAttention's phases has them."""
    order = list(phases) or list((v.recorded.phase_timings or {}) if v.recorded else {})
    v.phases = [(n, PARENTS.get(n) if PARENTS.get(n) in order else None)
                for n in order if n != TOTAL]
    for phase, series in phases.items():
        rounds = numbers if numbers and len(numbers) == len(series) \
            else list(range(len(series)))
        v.phase(phase).adopt(series, rounds)
    total = v.samples.get(TOTAL)
    if total is not None:
        v.round_medians = figures.round_medians(v)
        v.asked = list(total.rounds)
    elif v.recorded is not None and v.recorded.rounds:
        v.asked = list(range(len(v.recorded.rounds)))
