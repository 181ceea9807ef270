"""A workload report's tables: a row per replayed call and variant (p50 with its interval,
verdict against the baseline, accuracy with the worst head), the totals per variant and the
worst call and head. `sagetui run --workload` prints these rows, the Markdown and CSV exports
write them: one place for each cell."""

from __future__ import annotations

import csv
import io
from typing import Any

from sagetui.core import format as fmt
from sagetui.core import host_time, variant_facts
from sagetui.core.blocks.workload import ReplayedCall, Workload
from sagetui.core.report.csv_cell import inert_cell, markdown_row
from sagetui.core.report.model import Report
from sagetui.core.statistics.verdict import MIN_THRESHOLD_PERCENT, decide
from sagetui.core.sweep.export import device_name, noisy_note

# a call's own columns, then each variant's facts (core/variant_facts.py's CALLS and
# WORKLOAD_CSV: the host-time facts only where a call has a host time)
CALL_COLUMNS = ("call", "weight", "shape", "variant",
                *(f.header() for f in variant_facts.shown_in(variant_facts.CALLS)
                  if f.group != variant_facts.HOST))
TOTAL_COLUMNS = ("variant", "total ms (Σ weight x p50)", "speedup % [95% CI]")
CALL_FIELDS = ("call", "module", "count", "weight", "shape", "cast", "file", "variant", "status")
CSV_FIELDS = CALL_FIELDS + tuple(f.key for f in variant_facts.shown_in(variant_facts.WORKLOAD_CSV)
                                 if f.group != variant_facts.HOST)


def workload_of(report: Report) -> Workload:
    if report.workload is None:
        raise ValueError("not a workload report")
    return report.workload


def label(c: ReplayedCall) -> str:
    return f"{c.index}" + (f" {c.module}" if c.module else "")


def weight_text(w: float | None) -> str:
    return fmt.DASH if w is None else f"{w:g}"


def _variants(wl: Workload) -> list[Any]:
    return [v for p in wl.points for v in p.variants]


def call_columns(wl: Workload) -> tuple[str, ...]:
    """The calls' table's columns: the call's, then its variants' facts (with the host-time
    facts where the calls have them: per call which time bounds it)."""
    cols = variant_facts.columns(variant_facts.CALLS, _variants(wl))
    return (*CALL_COLUMNS[:4], *variant_facts.headers(cols))


NOT_REACHED = "not measured: the replay stopped before it"


def shape_text(c: ReplayedCall) -> str:
    """The call's run shape; a float32 call replayed cast to --dtype says so."""
    if c.shape is None:
        return fmt.DASH
    return c.shape.describe() + (" (cast from float32)" if c.cast else "")


def call_rows(wl: Workload) -> list[tuple[str, ...]]:
    """call_columns per replayed call and variant; a skipped, failed or not reached call says
    why. A noisy p50 carries the noise mark (sweep/export.p50_cell)."""
    cols = variant_facts.columns(variant_facts.CALLS, _variants(wl))
    at = variant_facts.At(wl.baseline)
    blank = ("",) * (len(cols) - 1)
    rows: list[tuple[str, ...]] = []
    for c in wl.calls:
        head = (label(c), weight_text(c.weight), shape_text(c))
        p = wl.point_of(c)
        if c.point is None or p is None:
            rows.append((*head, fmt.DASH, f"skipped: {c.skipped}" if c.point is None
                         else NOT_REACHED, *blank))
            continue
        if not p.variants:
            rows.append((*head, fmt.DASH, f"failed: {p.error}", *blank))
        for v in p.variants:
            rows.append((*head, v.name, *(variant_facts.cells(v, cols, at) if v.status == "ok"
                                          else (f"failed: {v.error}", *blank))))
    return rows


def notes(wl: Workload) -> list[str]:
    """The sign of its speedups (+ = faster, as every table says it), and what the marks in
    the calls' table mean, where any is there."""
    out = [f"speedup % and verdicts: + = faster than the baseline, {wl.baseline}"]
    if note := noisy_note(wl.points):
        out.append(note)
    if note := pace_note(wl):
        out.append(note)
    if wl.cast_to:
        out.append(f"cast from float32: the program passed the call in float32; it was "
                   f"replayed in {wl.cast_to} (--dtype {wl.cast_to}), its accuracy against "
                   f"fp32 attention of the cast inputs")
    return out


def pace_note(wl: Workload) -> str | None:
    """Where every variant's host time moved together between the calls (host_time.host_pace):
    the back-to-back totals of calls near host-bound follow the host's pace, and their
    intervals hold each call's own rounds, not the minutes between calls (None without
    back-to-back totals). A replay that took its calls in turn, round by round, sampled the
    host's pace alike in every call (its intervals hold it): there a difference between calls
    is their own host paths, no note's matter."""
    if not _has_back_to_back(wl) or wl.order is not None:
        return None
    points = {p.index: p for p in wl.points}
    calls = [c for c in wl.calls if c.point is not None and c.point in points]
    paces = host_time.host_pace([{v.name: v.host_s for v in points[c.point].variants}
                                 for c in calls if c.point is not None])
    moved = host_time.pace_moved(paces)
    if moved is None:
        return None
    spread, slow = moved
    where = ", ".join(f"call {label(calls[i])}" for i in slow)
    return (f"host pace: the variants' host time a call moved {spread:.1f}-fold between the "
            f"calls, together (slower at {where}): the "
            "host's pace moved during the replay, or those calls take a longer host path; the "
            "back-to-back totals of calls near host-bound follow it, and their intervals hold "
            "each call's own rounds only: replay again before comparing them")


BACK_TO_BACK_COLUMNS = ("total b2b ms (Σ weight x back-to-back)", "b2b speedup % [95% CI]")


def total_columns(wl: Workload) -> tuple[str, ...]:
    """TOTAL_COLUMNS, and the totals in back-to-back time where the calls have them."""
    return TOTAL_COLUMNS + (BACK_TO_BACK_COLUMNS if _has_back_to_back(wl) else ())


def _has_back_to_back(wl: Workload) -> bool:
    return any(t.back_to_back_seconds is not None for t in wl.totals)


def threshold(wl: Workload) -> float:
    """The SAME threshold of the calls' verdicts (a total's word is judged with it)."""
    return next((v.verdict.threshold_percent for p in wl.points for v in p.variants
                 if v.verdict is not None), MIN_THRESHOLD_PERCENT)


def total_word(wl: Workload, lo: float | None, hi: float | None) -> str | None:
    """A total's verdict (SAME, FASTER, SLOWER, INCONCLUSIVE) from its interval, at the calls'
    threshold: what the totals' table, the console's Variants and Verdicts panels say."""
    return decide(lo, hi, threshold(wl)) if lo is not None and hi is not None else None


def _speed(wl: Workload, variant: str, est: float | None, lo: float | None,
           hi: float | None) -> str:
    if variant == wl.baseline:
        return "baseline"
    word = total_word(wl, lo, hi)
    return (f"{word} " if word else "") + f"{fmt.pct(est)} {fmt.ci(lo, hi)}"


def total_rows(wl: Workload) -> list[tuple[str, ...]]:
    """Per variant its total in GPU time and, where the calls have one, in back-to-back time,
    each with its verdict against the baseline's (SAME, FASTER, SLOWER or INCONCLUSIVE from
    the total's interval, at the calls' threshold)."""
    rows: list[tuple[str, ...]] = []
    b2b = _has_back_to_back(wl)
    for t in wl.totals:
        if t.seconds is None:
            rows.append((t.variant, "not every call measured: "
                         + ", ".join(map(str, t.missing or [])), "", *(("", "") if b2b else ())))
            continue
        rows.append((t.variant, fmt.ms(t.seconds),
                     _speed(wl, t.variant, t.speedup_percent, t.ci_low_percent,
                            t.ci_high_percent),
                     *((fmt.ms(t.back_to_back_seconds),
                        _speed(wl, t.variant, t.back_to_back_speedup_percent,
                               t.back_to_back_ci_low_percent,
                               t.back_to_back_ci_high_percent)) if b2b else ())))
    return rows


def worst_lines(wl: Workload) -> list[str]:
    """Per variant: its slowest call against the baseline, its least accurate call and its
    worst query head over every call."""
    out = []
    for w in wl.worst:
        parts = []
        if w.slowest_call is not None:
            parts.append(f"slowest on call {w.slowest_call} "
                         f"({fmt.pct(w.slowest_speedup_percent)} % against {wl.baseline})")
        if w.least_accurate_call is not None:
            parts.append(f"least accurate on call {w.least_accurate_call} "
                         f"(relative L1 {_l1(w.relative_l1)})")
        if w.worst_head is not None:
            parts.append(f"worst head {w.worst_head} of call {w.worst_head_call} "
                         f"(relative L1 {_l1(w.worst_head_relative_l1)})")
        if parts:
            out.append(f"{w.variant}: " + "; ".join(parts))
    return out


def _l1(x: float | None) -> str:
    return "not finite" if x is None else f"{fmt.fraction_pct(x)} %"


def summary_line(report: Report) -> str:
    wl = workload_of(report)
    replayed = sum(wl.point_of(c) is not None for c in wl.calls)
    return (f"{replayed} of {len(wl.calls)} saved calls replayed ({wl.calls_seen} calls in the "
            f"program) from {wl.directory} on {device_name(report)}: {wl.rounds} rounds x "
            f"{wl.iterations} iterations per call"
            + ("" if wl.order is None else ", the calls taken in turn a round at a time")
            + f"; status {report.status}")


def to_markdown(report: Report) -> str:
    wl = workload_of(report)

    def table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
        return [markdown_row(columns), "|" + "---|" * len(columns),
                *(markdown_row(r) for r in rows), ""]

    lines = ["## sagetui workload", "", f"- {summary_line(report)}"]
    lines += [f"- {x}" for x in report.status_detail or []]
    lines += ["", *table(call_columns(wl), call_rows(wl))]
    lines += [f"- {x}" for x in notes(wl)]
    lines += ["" if notes(wl) else "", *table(total_columns(wl), total_rows(wl))]
    lines += [f"- {x}" for x in worst_lines(wl)]
    lines += [f"- interval of the total's speedup: {wl.total_method}"]
    lines += [f"- fault: {f.kind}: {f.message}" for f in report.faults or []]
    return "\n".join(lines).rstrip() + "\n"


def _num(x: Any) -> str:
    return "" if x is None else repr(x)


def to_csv(report: Report) -> str:
    """A row per call and variant (a call skipped, failed or not reached: a row per variant
    saying why)."""
    wl = workload_of(report)
    cols = variant_facts.columns(variant_facts.WORKLOAD_CSV, _variants(wl))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*CALL_FIELDS, *(f.key for f in cols)])
    names = list(wl.variants)
    for c in wl.calls:
        fixed = [c.index, inert_cell(c.module or ""), c.count, _num(c.weight),
                 c.shape.describe() if c.shape else "", bool(c.cast), inert_cell(c.file)]
        p = wl.point_of(c)
        measured = {v.name: v for v in p.variants} if p is not None else {}
        for name in dict.fromkeys([*names, *measured]):
            v = measured.get(name)
            if v is None:
                if c.point is None:
                    status, skipped, error = "skipped", c.skipped or "", ""
                else:
                    status, skipped, error = ("not measured", "", NOT_REACHED) if p is None \
                        else (p.status, "", p.error or "")
                w.writerow([*fixed, inert_cell(name), status, *variant_facts.blank_row(
                    cols, skipped=inert_cell(skipped), error=inert_cell(error))])
                continue
            w.writerow([*fixed, inert_cell(v.name), v.status, *variant_facts.raw_cells(v, cols)])
    return buf.getvalue()
