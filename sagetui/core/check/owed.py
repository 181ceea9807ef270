"""The members of a run report that every writer of its schema wrote: in a report of any schema,
one left out where the report holds what it follows from is a finding, as from schema 5 on
(where check/report._run_members rebuilds the report with its own assembler and holds every
member). sagetui has written these since its first report (schema 1, session/collect.py in
d3dfadc): for each variant that ran rounds its timing, phase timings, outliers, achieved TOPS,
drift (two rounds or more), speedup and byte-exact flag (where the hashes are), and the
run's rounds, iterations, warm-up and schedule; before schema 3 the baseline's phase timings
and achieved TOPS again at the top. The two reports made elsewhere, whose fields sagetui kept,
hold the timing, speedup, byte-exact flag and rounds. What no rule holds is listed in
docs/reports.md ("`sagetui check`"), with why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from sagetui.core import scheduler
from sagetui.core.options import with_defaults
from sagetui.core.report.mismatch import MISSING, Mismatch
from sagetui.core.run.check import is_left_out, run_config
from sagetui.core.run.status import COMPLETE, parse_ending
from sagetui.core.samples import Samples
from sagetui.core.statistics.clocks import mean_clocks

if TYPE_CHECKING:
    from sagetui.core.report.mismatch import MismatchCollector
    from sagetui.core.report.model import Report

TOP_LEVEL_UNTIL = 3  # schema 3 wrote the phase timings and achieved TOPS per variant only
PER_VARIANT_FROM = 3  # ... and each variant's rounds asked
INPUTS_FROM = 4  # the `inputs` block
WHY = "every writer of a run report wrote it, from schema 1 (check/owed.py)"


def check_owed(c: MismatchCollector, report: Report) -> None:
    if report.sweep or report.workload or report.swap:
        return
    _held_to_each_other(c, report)
    if report.tool is not None and not report.variants and run_config(report) is not None \
            and (report.schedule or report.samples or report.rounds):
        _need(c, "$.variants", False, "the variants whose rounds it kept")  # a run's, gone
    if not c.complete:  # from schema 5 the rebuilt report holds every member
        _every_schema(c, report)


def check_version_members(c: MismatchCollector, report: Report) -> None:
    """The schema version held to the members the report holds: a member first written in
    schema N (its field's `since`, blocks/result.py and blocks/swap.py) says N or later; a
    version edited down would turn the later schemas' rules off."""
    said = report.schema_version
    if said is None or report.tool is None:
        return
    held: list[tuple[str, BaseModel]] = [
        (f"$.variants[{j}]", v) for j, v in enumerate(report.variants or [])]
    for kind, block in (("sweep", report.sweep), ("workload", report.workload)):
        for i, p in enumerate(block.points if block is not None else []):
            held += [(f"$.{kind}.points[{i}].variants[{j}]", v) for j, v in enumerate(p.variants)]
    if report.workload is not None:
        held.append(("$.workload", report.workload))
    if report.swap is not None:
        held += [(f"$.swap.processes[{i}].result", p.result)
                 for i, p in enumerate(report.swap.processes) if p.result is not None]
    for path, model in held:
        for name, field in type(model).model_fields.items():
            extra = field.json_schema_extra
            since = extra.get("since") if isinstance(extra, dict) else None
            if isinstance(since, int) and said < since and getattr(model, name) is not None:
                c.out.append(Mismatch("$.schema_version", said, f">= {since}",
                                      f"{path}.{field.alias or name} is there, first written "
                                      f"in schema {since}"))
                return


def _need(c: MismatchCollector, path: str, present: bool, what: str) -> None:
    if not present:
        c.out.append(Mismatch(path, MISSING, what, WHY))


def _every_schema(c: MismatchCollector, report: Report) -> None:
    variants = report.variants or []
    ours = report.tool is not None
    cfg = run_config(report) if ours else None
    if not variants:
        return
    base = report.variant(report.baseline or variants[0].name)
    ref_sha = report.reference_output_sha256 or (base.output_sha256 if base else None)
    schema = report.schema_version or 0
    if ours and cfg is not None:
        for key in ("q_shape", "k_shape", "v_shape"):
            _need(c, f"$.{key}", getattr(report, key) is not None, "the configuration's shape")
        if schema >= INPUTS_FROM:
            _need(c, "$.inputs", report.inputs is not None, "what q, k and v were")
    samples = report.samples or Samples()
    for i, v in enumerate(variants):
        p = f"$.variants[{i}]"
        if ours:
            _need(c, f"{p}.status", v.status is not None, "how the variant ended")
        kept = samples.get(v.name) or {}
        if kept.get("total") or v.timing is not None:  # its timing merges its rounds'
            _need(c, f"{p}.rounds", bool(v.rounds), "a summary per round of its samples")
        if not v.rounds:
            continue
        _need(c, f"{p}.timing", v.timing is not None, "the summary of its rounds")
        if ours and v.phase_timings is not None:
            for phase in kept:
                if phase != "total" and len(kept[phase]):
                    _need(c, f"{p}.phase_timings.{phase}", phase in v.phase_timings,
                          "a summary of the phase's samples")
        if ours and schema >= PER_VARIANT_FROM:  # schema 3 put each variant's facts on it
            _need(c, f"{p}.rounds_asked", v.rounds_asked is not None, "the rounds asked of it")
            if len(v.rounds) >= 2:
                _need(c, f"{p}.intervals", v.intervals is not None, "its p50s' intervals")
            if v.backend and with_defaults(v.backend, {}):
                _need(c, f"{p}.options", v.options is not None, "its options as they ran")
            if v.kernel in scheduler.TILES:
                _need(c, f"{p}.scheduler", v.scheduler is not None, "its kernel's grid")
        if base is not None and base.timing is not None and v.timing is not None:
            _need(c, f"{p}.speedup_vs_baseline_percent",
                  v.speedup_vs_baseline_percent is not None, "against the baseline's p50")
        if v.output_sha256 and ref_sha:
            _need(c, f"{p}.byte_exact", v.byte_exact is not None, "from the output hashes")
        if ours:
            _need(c, f"{p}.phase_timings", v.phase_timings is not None, "a summary per phase")
            _need(c, f"{p}.outliers", v.outliers is not None, "the flagged iterations")
            if len(v.rounds) >= 2:
                _need(c, f"{p}.drift", v.drift is not None, "the slope over its rounds")
            if cfg is not None:
                _need(c, f"{p}.achieved", v.achieved is not None, "the TOPS of its p50")
    if any(v.rounds for v in variants):
        for key in ("rounds", "iterations_per_round") + (("iterations", "warmup", "schedule")
                                                          if ours else ()):
            _need(c, f"$.{key}", getattr(report, key) is not None, "the run's own")
    if not ours:
        return
    if (report.schema_version or 0) < TOP_LEVEL_UNTIL and base is not None \
            and base.phase_timings and base.status in (None, "ok", "excluded"):
        _need(c, "$.phase_timings", report.phase_timings is not None, "the baseline's")
        for phase in base.phase_timings:
            if report.phase_timings is not None:
                _need(c, f"$.phase_timings.{phase}", phase in report.phase_timings,
                      "the baseline's")
        if base.achieved:
            _need(c, "$.achieved", report.achieved is not None, "the baseline's")
    if cfg is None:
        return
    asked = [v.name for v in cfg.variants]
    if [v.name for v in variants if v.name in asked] != asked:
        c.out.append(Mismatch("$.variants", [v.name for v in variants], asked,
                              "the configuration's variants, in order"))
    if cfg.tail_study and report.tail_study is None and report.status == COMPLETE:
        _need(c, "$.tail_study", False, "the rows --tail-study timed")


def _held_to_each_other(c: MismatchCollector, report: Report) -> None:
    """Accuracy is measured for every variant that ran (or it says why not), per head for
    every variant where it is for one, and the clocks of every variant whose telemetry read
    them where one has them: a report of any schema whose variants disagree lost one's."""
    if report.tool is None:
        return
    accurate = [v for v in report.variants or [] if v.accuracy is not None]
    per_head = any(v.accuracy.per_head for v in accurate if v.accuracy)
    # a failed variant gets no late figures; a run stopped (or whose runner died) while
    # computing them says which it never computed
    uncomputed = parse_ending(report.status_detail or [], None).computing or ""
    clocked = any(v.clocks is not None for v in report.variants or [])
    for i, rv in enumerate(report.variants or []):
        owed = rv.status in (None, "ok") and not (uncomputed and rv.name in uncomputed) \
            and not is_left_out(rv)
        if accurate and owed and rv.rounds and rv.accuracy is None and \
                rv.accuracy_error is None:
            c.out.append(Mismatch(f"$.variants[{i}].accuracy", MISSING, "present",
                                  "measured for every variant that ran, or why not"))
        if clocked and rv.rounds and rv.clocks is None and mean_clocks(
                [t.model_dump() for t in rv.telemetry or []]):
            c.out.append(Mismatch(f"$.variants[{i}].clocks", MISSING, "present", "the clocks "
                                  "of every variant whose telemetry read them, as for the others"))
        for k in ("per_head", "worst_heads"):
            if per_head and rv.accuracy is not None and getattr(rv.accuracy, k) is None:
                c.out.append(Mismatch(f"$.variants[{i}].accuracy.{k}", MISSING, "present",
                                      "measured per head for every variant, as for the others"))
