"""`check` of what the user's model pays and of the clocks a verdict names: each variant's host
time and back-to-back time from its blocks' figures, its host-bound flag from those and its GPU
time (core/host_time.py), its mean clock and power from its rounds' telemetry, its verdict in
cycles from its rounds' medians and clocks against the baseline's, and the verdict line's note
(core/statistics/clocks.py). The blocks' own figures and the redone and drained counts are the
runner's measurements, taken as recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sagetui.core.host_time import (
    B2B_NOISE,
    b2b_noise,
    back_to_back_floor,
    host_bound,
    host_share,
    typical,
)
from sagetui.core.report.mismatch import Mismatch
from sagetui.core.run.load import report_threshold
from sagetui.core.statistics.analysis import analyse
from sagetui.core.statistics.clocks import clock_note, cycle_medians, mean_clocks

if TYPE_CHECKING:
    from sagetui.core.blocks.result import VariantResult
    from sagetui.core.report.mismatch import MismatchCollector
    from sagetui.core.report.model import Report, Variant

WHY = "core/host_time.py, from its blocks' figures"
WHY_CALL = ("core/host_time.py: one call back to back costs at least its host and its GPU "
            "time")
# the schema whose host times are of the call the user makes, in blocks of their own (before
# it they were of the instrumented decomposition: taken as recorded)
CALL_TIMES_SCHEMA = 6
HOST_SHARE_SCHEMA = 7  # the first to record host_share: an older report owes none
WHY_CLOCKS = "core/statistics/clocks.py, from its rounds' medians and telemetry"


def check_host(c: MismatchCollector, report: Report) -> None:
    variants = report.variants or []
    schema = report.schema_version or 0
    call_timed, share = schema >= CALL_TIMES_SCHEMA, schema >= HOST_SHARE_SCHEMA
    for i, v in enumerate(variants):
        _check_fields(c, f"$.variants[{i}]", v, call_timed, share)
    for kind, block in (("sweep", report.sweep), ("workload", report.workload)):
        for i, p in enumerate(block.points if block is not None else []):
            for j, pv in enumerate(p.variants):
                _check_fields(c, f"$.{kind}.points[{i}].variants[{j}]", pv, call_timed, share)
    _check_clocks(c, report, variants)


def _check_fields(c: MismatchCollector, at: str, v: VariantResult, call_timed: bool,
                  share: bool) -> None:
    """A run's variant or a point's: its host, GPU and back-to-back times of the call, its
    host-bound flag; from schema 6 the call they are of, and back-to-back no less than the
    larger of host and GPU time, less the noise."""
    if v.host_times_s is not None or v.host_s is not None:
        c.eq(f"{at}.host_s", v.host_s, typical(v.host_times_s), WHY)
    if v.back_to_back_times_s is not None or v.back_to_back_s is not None:
        c.eq(f"{at}.back_to_back_s", v.back_to_back_s, typical(v.back_to_back_times_s), WHY)
    if v.call_gpu_times_s is not None or v.call_gpu_s is not None:
        c.eq(f"{at}.call_gpu_s", v.call_gpu_s, typical(v.call_gpu_times_s), WHY)
    gpu = v.call_gpu_s if v.call_gpu_s is not None else v.timing.p50_s if v.timing else None
    # (deleted where its host and GPU times say it: a missing figure, c.eq)
    c.eq(f"{at}.host_bound", v.host_bound, host_bound(v.host_s, gpu), WHY)
    if share or v.host_share is not None:
        c.eq(f"{at}.host_share", v.host_share, host_share(v.host_s, gpu), WHY)
    if not call_timed or v.host_s is None or _instrumented(v):
        return
    # schema 6 on: the three times are the call's own, and say which call
    for name in ("timed_call", "call_gpu_s"):
        if getattr(v, name) is None:
            c.out.append(Mismatch(f"{at}.{name}", None, "recorded with host_s", WHY_CALL))
    noise = b2b_noise(v.host_s, v.call_gpu_s, v.host_times_s, v.call_gpu_times_s)
    floor = back_to_back_floor(v.host_s, v.call_gpu_s, noise)
    if floor is not None and (v.back_to_back_s is None or v.back_to_back_s < floor):
        c.out.append(Mismatch(f"{at}.back_to_back_s", v.back_to_back_s,
                              f">= {floor!r} (max of host_s and call_gpu_s, less "
                              f"{noise:.0%}: the noise, the larger one's spread over the "
                              f"rounds where wider than {B2B_NOISE:.0%})", WHY_CALL))


def _instrumented(v: VariantResult) -> bool:
    """A host time recorded by an older runner (an event stream replayed): of the instrumented
    decomposition, with none of the call's own fields; taken as recorded."""
    return v.timed_call is None and v.call_gpu_s is None and v.call_gpu_times_s is None


def _medians(v: Variant) -> tuple[dict[int, float], dict[int, dict[str, Any]]]:
    rounds = v.rounds or []
    tel = v.telemetry or []
    return ({r: s.p50_s for r, s in enumerate(rounds)},
            {r: t.model_dump() for r, t in enumerate(tel)})


def _check_clocks(c: MismatchCollector, report: Report, variants: list[Variant]) -> None:
    if not any(v.clocks is not None for v in variants):
        return
    means = {v.name: mean_clocks([t.model_dump() for t in v.telemetry or []]) for v in variants}
    cycles = analyse({v.name: cycle_medians(*_medians(v)) for v in variants}, {},
                     report.baseline if report.baseline in means else None,
                     report_threshold(report), drift_of=())
    base = means.get(report.baseline or "")
    for i, v in enumerate(variants):
        if v.clocks is None:
            continue
        at = f"$.variants[{i}].clocks"
        got = means[v.name] or {}
        for k in ("mean_sm_clock_mhz", "mean_power_w"):
            c.eq(f"{at}.{k}", getattr(v.clocks, k), got.get(k), WHY_CLOCKS)
        cv = cycles.verdict_dict(v.name)
        recorded = v.clocks.cycles_verdict.model_dump() if v.clocks.cycles_verdict else None
        for k in ("state", "estimate_percent", "ci_low_percent", "ci_high_percent",
                  "confidence", "rounds", "threshold_percent", "threshold_source", "method"):
            _eq(c, f"{at}.cycles_verdict.{k}", (recorded or {}).get(k), (cv or {}).get(k))
        verdict = v.verdict.model_dump() if v.verdict else None
        _eq(c, f"{at}.note", v.clocks.note, clock_note(v.name, got, base, verdict, cv))


def _eq(c: MismatchCollector, path: str, recorded: Any, expected: Any) -> None:
    """c.eq, and a figure recorded where none follows (or none where one does) is a mismatch
    too: a note left out says nothing where it should."""
    if (recorded is None) != (expected is None):
        c.out.append(Mismatch(path, recorded, expected, WHY_CLOCKS))
    else:
        c.eq(path, recorded, expected, WHY_CLOCKS)
