"""The one fold: `apply(model, event)` is every change a run model ever sees.

The session applies each event it emits to its own model before it hands the event on; the
console applies the same events to its own. Same stream, same function: the two models, and the
reports built from them (build.py), are equal. Nothing here reads a clock or the machine: what
it needs of them (the time a run started, the host) comes in an event.

Samples are folded column by column, an array per phase, never sample by sample: 10,000
iterations a second must not cost a display's thread a fifth of its time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import ValidationError

from sagetui.core import events as ev
from sagetui.core.config import RunConfig
from sagetui.core.report.model import Fault, Report, VariantFacts
from sagetui.core.run import late, status
from sagetui.core.run.model import TOTAL, BlockFacts, RunModel, VariantModel
from sagetui.core.statistics.summary import median, summarize
from sagetui.core.statistics.threshold import Threshold


def new_model(config: RunConfig | None = None,
              runner: Mapping[str, Any] | None = None) -> RunModel:
    """A model of a run that has not started: its configured variants, pending; `runner`:
    what the runner that will measure it said of itself (a sweep's next point on it)."""
    m = RunModel()
    if config is not None:
        configure(m, config)
    m.runner = dict(runner or {})
    return m


def configure(m: RunModel, config: RunConfig) -> None:
    """Take a configuration's variants (a run's start, or `auto` resolved for this machine):
    a variant the configuration no longer names goes, one it keeps keeps its place."""
    m.config = config
    names = [v.name for v in config.variants]
    for stale in [n for n in m.variants if n not in names]:
        del m.variants[stale]
    for i, spec in enumerate(config.variants):
        v = m.variant(spec.name)
        v.index, v.backend, v.path = i, spec.backend, spec.path
        v.spec, v.options = spec.spec, dict(spec.options)
    m.variants = {n: m.variants[n] for n in names}
    m.baseline = config.baseline_name


def apply(m: RunModel, e: ev.Event) -> None:
    """Fold one event into the model. `version` moves with every event a display shows
    differently; a batch of iterations moves `sample_version` only."""
    match e:
        case ev.Iterations():
            _iterations(m, e)
            return
        case ev.RunStarted():
            configure(m, e.config)
            m.created_utc, m.host = e.created_utc, dict(e.host)
            m.status, m.status_detail = status.RUNNING, []
            m.progress.stage = "starting"
        case ev.ConfigResolved():
            configure(m, e.config)
        case ev.Hello():
            m.runner = {"python": e.python, "torch": e.torch, "device": e.device,
                        "protocol": e.protocol}
        case ev.VariantLoaded():
            _variant_loaded(m, e)
        case ev.Ready():
            m.ready = {"input_sha256": e.input_sha256, "device": e.device, "gpu": e.gpu,
                       "reused_inputs": e.reused_inputs}
            m.progress.stage = "warm-up"
        case ev.ThresholdResolved():
            m.threshold = Threshold.from_fields(e.threshold)
        case ev.WarmupDone():
            m.progress.stage = "warm-up"
        case ev.RoundStarted():
            p = m.progress
            p.round, p.iteration_in_round, p.stage = e.round, 0, "measuring"
            p.variants_in_round = len(e.variants) or 1
            for name in e.variants:
                if e.round not in (asked := m.variant(name).asked):
                    asked.append(e.round)
        case ev.BlockDone():
            _block_done(m, e)
        case ev.RoundDone():
            _round_done(m, e)
        case ev.AnalysisDone():
            _analysis(m, e)
        case ev.BaselineChanged():
            m.baseline = e.baseline
        case ev.ProfilesAdded():
            names = {p.variant for p in e.profiles}
            m.profiles = [p for p in m.profiles if p.variant not in names] + list(e.profiles)
        case ev.Measured():
            m.measured, m.computing = True, list(e.computing)
            m.progress.stage = "computing" if e.computing else "post-run"
        case ev.LateFacts():
            _late_facts(m, e)
        case ev.Decomposition():
            if e.equal is not None and not e.nonfinite:
                m.decomposition = ev.to_dict(e)
            elif e.skipped:
                m.decomposition_skipped = e.skipped
            _computed(m, late.DECOMPOSITION)
        case ev.TailRow():
            m.tail_rows.append(ev.to_dict(e))
            m.progress.stage = "tail study"
        case ev.FaultRaised():
            _fault(m, e.fault, e.failed)
        case ev.Resumed():
            m.measured, m.computing = False, []
            for v in m.variants.values():
                for s in v.samples.values():
                    s.drop()
            m.schedule = [s for s in m.schedule if s["round"] in set(m.completed_rounds)]
            m.status, m.status_detail = status.RUNNING, []
            m.progress.stage = "starting"
        case ev.Finished():
            m.status, m.status_detail = e.status, list(e.detail)
            m.progress.stage = "done"
            _final_analysis(m, e.report)
        case ev.FromRunner():
            apply(m, e.event)  # one runner's model: the event its session emitted
            return
        case ev.PointStarted():
            m.progress.point = (e.index, e.total, e.round, e.call is not None)
            m.progress.stage = "measuring"  # the point's own stages are its model's
        case (ev.LogMessage() | ev.PhaseStarted() | ev.RunnerError() | ev.Bye()
              | ev.LateDone() | ev.PointDone()):
            return  # nothing a run's model holds (a sweep's points are its own model's)
        case _:
            ev.unexpected(e)
            return
    m.version += 1


def _late_facts(m: RunModel, e: ev.LateFacts) -> None:
    """A late figure: a variant's (its accuracy), or the run's (the inputs' sha256)."""
    if e.variant is None:
        if "input_sha256" in e.facts:
            m.ready["input_sha256"] = e.facts["input_sha256"]
            _computed(m, late.INPUT_SHA256)
        return
    if e.variant in m.variants:
        merge_facts(m, m.variants[e.variant], e.facts)
    _computed(m, late.accuracy_key(e.variant))


def _computed(m: RunModel, key: str) -> None:
    if key in m.computing:
        m.computing.remove(key)
    if m.measured and not m.computing:
        m.progress.stage = "post-run"


def _variant_loaded(m: RunModel, e: ev.VariantLoaded) -> None:
    v = m.variant(e.name)
    v.backend = e.backend
    v.path = e.path if e.path is not None else v.path
    if e.status == "ok":
        v.status, v.kernel, v.error = "ok", e.kernel, None
        v.phases = list(e.phases)
        merge_facts(m, v, e.facts)
    else:
        v.status, v.error = "failed", e.error
        m.faults.append(Fault(kind="variant", message=e.error or "failed", variant=e.name))


def merge_facts(m: RunModel, v: VariantModel, facts: dict) -> None:
    """A variant's facts from the runner, checked against the report's VariantFacts: a fact
    that does not fit is a protocol fault, never a crash of the fold."""
    if not facts:
        return
    try:
        v.facts = VariantFacts.model_validate({**v.facts.model_dump(exclude_none=True),
                                               **facts})
    except ValidationError as exc:
        why = str(exc).splitlines()
        m.faults.append(Fault(kind="protocol", variant=v.name,
                              message=f"the runner's facts of {v.name} do not fit the report: "
                                      f"{'; '.join(why[1:3]) or why[0]}"[:500]))


def _iterations(m: RunModel, e: ev.Iterations) -> None:
    """A block's iterations, as columns; a parent phase gets the sum of its children (in their
    order) when all of them are in the event."""
    v = m.variant(e.variant)
    cols = {leaf: np.asarray(col, dtype=np.float64) for leaf, col in e.phases.items()}
    cap = m.planned_samples()  # reserved once: no array of a run's grows by copying
    per_round = m.config.iterations if m.config is not None else 64
    for leaf, col in cols.items():
        v.phase(leaf, cap).add(e.round, col, per_round)
    for parent in dict.fromkeys(p for _, p in v.phases if p):
        kids = v.children(parent)
        if kids and all(k in cols for k in kids):
            acc = cols[kids[0]].copy()
            for k in kids[1:]:
                acc += cols[k]
            v.phase(parent, cap).add(e.round, acc, per_round)
    v.phase(TOTAL, cap).add(e.round, np.asarray(e.total_s, dtype=np.float64), per_round)
    p = m.progress
    p.iteration_in_round += e.n
    p.iterations_done += e.n
    p.current_variant = v.name
    m.sample_version += 1


def _block_done(m: RunModel, e: ev.BlockDone) -> None:
    v = m.variant(e.variant)
    v.blocks[(e.round, e.half)] = BlockFacts(
        telemetry=dict(e.telemetry or {}), output_sha256=e.output_sha256, checksum=e.checksum,
        max_abs_diff=e.max_abs_diff, mean_abs_diff=e.mean_abs_diff, host_call_s=e.host_call_s,
        call_gpu_s=e.call_gpu_s, back_to_back_s=e.back_to_back_s, redone=e.redone or 0,
        drained=bool(e.drained))
    if e.output_sha256:
        v.output_hashes.add(e.output_sha256)
        v.first_output_sha256 = v.first_output_sha256 or e.output_sha256
    merge_facts(m, v, e.facts)
    m.schedule.append({"round": e.round, "variant": e.variant, "half": e.half,
                       "iterations": e.iterations})


def _round_done(m: RunModel, e: ev.RoundDone) -> None:
    """The round is over: it holds the variants in `completed` whole, and no others (a variant
    whose runner failed inside it loses the round's samples)."""
    r = e.round
    if e.completed and r not in m.completed_rounds:
        m.completed_rounds.append(r)
    given = e.samples or {}
    for name, v in m.variants.items():
        values = None
        if name not in e.completed:
            for s in v.samples.values():
                s.drop(r)
            continue
        if name in given:  # the session's arrays, folded from the same events
            for phase, (series, rounds) in given[name].items():
                v.phase(phase).adopt(series, rounds)
            total = v.samples.get(TOTAL)
            for i, rr in enumerate(total.rounds if total is not None else []):
                if rr not in v.round_medians:  # (a round it had not seen completed)
                    _round_figures(v, rr, total.round_values(i))  # type: ignore[union-attr]
            continue
        for phase, s in v.samples.items():
            got = s.complete(r)
            if phase == TOTAL:
                values = got
        if values is not None and values.size:
            _round_figures(v, r, values)
    if not set(m.variants) <= set(e.completed):  # else none to drop: no scan of every
        # round's blocks at each round's end (O(rounds^2): 7 s over 5,000 rounds)
        m.schedule = [s for s in m.schedule if s["round"] != r or s["variant"] in e.completed]


def _round_figures(v: VariantModel, r: int, total: np.ndarray) -> None:
    """A completed round's median and summary of the whole call (a round never changes)."""
    v.round_medians[r] = median(total)
    v.round_summaries[r] = summarize(total)


def _analysis(m: RunModel, e: ev.AnalysisDone) -> None:
    for name, verdict in e.verdicts.items():
        if name in m.variants:
            m.variants[name].verdict = verdict
            m.variants[name].verdict_computed = e.computed
    if m.baseline in m.variants:
        m.variants[m.baseline].verdict = None  # the baseline has none of its own
    for name, drift in e.drift.items():
        if name in m.variants:
            m.variants[name].drift = drift
    for name, speedup in e.speedups.items():
        if name in m.variants:
            m.variants[name].speedup_percent = speedup


def _fault(m: RunModel, fault: Fault, failed: str | None) -> None:
    m.faults.append(fault)
    v = m.variants.get(failed or "")
    if v is not None:
        v.status, v.error = "failed", fault.message
        v.failed_round = fault.round
        for s in v.samples.values():  # its unfinished round is not kept
            s.drop()


def _final_analysis(m: RunModel, report: Report) -> None:
    """The run's last analysis (every variant's drift included), as the session's report
    computed it once: the display shows those numbers, not a round's older ones."""
    for rv in report.variants or []:
        v = m.variants.get(rv.name)
        if v is None:
            continue
        v.verdict = rv.verdict.model_dump() if rv.verdict else None
        v.drift = rv.drift.model_dump() if rv.drift else None
        v.speedup_percent = rv.speedup_vs_baseline_percent
