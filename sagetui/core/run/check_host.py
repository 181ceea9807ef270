"""`check` of what the user's model pays and of the clocks a verdict names: each variant's host
time and back-to-back time from its blocks' figures, its host-bound flag from those and its GPU
time (core/host_time.py), its mean clock and power from its rounds' telemetry, its verdict in
cycles from its rounds' medians and clocks against the baseline's, and the verdict line's note
(core/statistics/clocks.py). The blocks' own figures and the redone and drained counts are the
runner's measurements, taken as recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sagetui.core.host_time import host_bound, typical
from sagetui.core.run.load import report_threshold
from sagetui.core.statistics.analysis import analyse
from sagetui.core.statistics.clocks import clock_note, cycle_medians, mean_clocks

if TYPE_CHECKING:
    from sagetui.core.report.mismatch import MismatchCollector
    from sagetui.core.report.model import Report, Variant

WHY = "core/host_time.py, from its blocks' figures"
WHY_CLOCKS = "core/statistics/clocks.py, from its rounds' medians and telemetry"


def check_host(c: MismatchCollector, report: Report) -> None:
    variants = report.variants or []
    for i, v in enumerate(variants):
        _check_fields(c, f"$.variants[{i}]", v)
    for kind, block in (("sweep", report.sweep), ("workload", report.workload)):
        for i, p in enumerate(block.points if block is not None else []):
            for j, pv in enumerate(p.variants):
                _check_fields(c, f"$.{kind}.points[{i}].variants[{j}]", pv)
    _check_clocks(c, report, variants)


def _check_fields(c: MismatchCollector, at: str, v: Any) -> None:
    """A run's variant or a point's: its host and back-to-back times and host-bound flag."""
    if v.host_times_s is not None or v.host_s is not None:
        c.eq(f"{at}.host_s", v.host_s, typical(v.host_times_s), WHY)
    if v.back_to_back_times_s is not None or v.back_to_back_s is not None:
        c.eq(f"{at}.back_to_back_s", v.back_to_back_s, typical(v.back_to_back_times_s), WHY)
    if v.host_bound is not None:
        c.eq(f"{at}.host_bound", v.host_bound,
             host_bound(v.host_s, v.timing.p50_s if v.timing else None), WHY)


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
    from sagetui.core.report.mismatch import Mismatch

    if (recorded is None) != (expected is None):
        c.out.append(Mismatch(path, recorded, expected, WHY_CLOCKS))
    else:
        c.eq(path, recorded, expected, WHY_CLOCKS)
