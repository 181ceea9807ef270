"""Workload reports side by side: replays of one capture, call by call and in total.

A call of B is A's call of the same index in the capture and the same shape; at each call a
variant of B is matched with one of A's by the one rule (match.py), and its cells are a sweep
point's (sweeps.point_cells: p50, `faster %` against A's and the unpaired verdict from the two
calls' round medians). Under the calls, each matched variant's total (Σ weight x p50, the
report's own `workload.totals`) against A's: `faster %` of the totals and the unpaired
interval of their ratio (statistics/weighted_total.unpaired_total_speedup). The totals are
what a gate looks at (`--fail-if-slower/--fail-if-faster`), not each call: a model pays its
total.

Replays of another capture (another manifest sha256) are refused (--force compares them by
call index anyway); replays of other calls of one capture (another --calls) have their calls
compared but not their totals.
"""

from __future__ import annotations

from sagetui.core import format as fmt
from sagetui.core.blocks.workload import ReplayedCall, Workload
from sagetui.core.compare.match import letter, match
from sagetui.core.compare.runs import CROSS_NOTE, cross_threshold
from sagetui.core.compare.sweeps import point_lines
from sagetui.core.compare.table import (
    Column,
    Delta,
    Line,
    Table,
    against_a,
    key_columns,
    verdict_cell,
)
from sagetui.core.derived import speedup_or_none
from sagetui.core.report.io import one_line
from sagetui.core.report.model import Report
from sagetui.core.statistics.threshold import Threshold
from sagetui.core.statistics.weighted_total import ReplayedCallTimes, unpaired_total_speedup
from sagetui.core.sweep.collect import call_round_medians

NOTES = ["faster %: + = faster than A (A p50 / p50 - 1; a total: A's total / total - 1)",
         CROSS_NOTE, "calls match by their index in the capture and their shape; at a call, "
         "variants match by name, else baseline with baseline, else in order (matched) · "
         "total: Σ weight x p50 over the calls replayed, what --fail-if-slower/--fail-if-"
         "faster gate; its interval unpaired (two replays share no round)"]

Key = tuple[int, str]


def _workload(r: Report) -> Workload:
    assert r.workload is not None  # facts.kind: every report here is a workload's
    return r.workload


def call_key(c: ReplayedCall) -> Key:
    return c.index, c.shape.describe() if c.shape else ""


def _label(c: ReplayedCall) -> str:
    return f"call {c.index}" + (f" {c.module}" if c.module else "")


def workload_table(labelled: list[tuple[str, Report]]) -> Table:
    reports = [r for _, r in labelled]
    wls = [_workload(r) for r in reports]
    a = wls[0]
    pairs = [match(list(a.variants), a.baseline, list(w.variants), w.baseline) if i else {}
             for i, w in enumerate(wls)]
    calls = [{call_key(c): c for c in w.calls if c.point is not None} for w in wls]
    many = len(wls) > 1
    cols = key_columns(Column("call"), Column("variant"), many=many)
    for i in range(len(wls)):
        x = letter(i)
        cols += [Column(f"{x} p50 ms", True)] + (against_a(x) if i else [])
    thresholds = [cross_threshold(reports[0], r) for r in reports]
    table = Table(cols, [], NOTES if many else [])
    per_call = Table([], [])  # the calls' deltas are shown, not gated: the totals are
    for key in dict.fromkeys(k for cs in calls for k in cs):
        where = _label(next(cs[key] for cs in calls if key in cs))
        table.lines += point_lines(per_call, [w.point_of(cs[key]) if key in cs else None
                                              for w, cs in zip(wls, calls, strict=True)],
                                   pairs, where, thresholds, tops=False)
    table.builds = per_call.builds
    _totals(table, wls, pairs, calls, thresholds, many)
    table.refusals = [
        f"{letter(i)} ({label}) replays another capture (manifest sha256 "
        f"{w.manifest_sha256[:12]} vs A's {a.manifest_sha256[:12]})"
        for i, ((label, _), w) in enumerate(zip(labelled, wls, strict=True))
        if i and w.manifest_sha256 != a.manifest_sha256]
    return table


def _times(w: Workload, calls: list[ReplayedCall], name: str) -> list[ReplayedCallTimes] | None:
    """A variant's weight, p50 and round medians at each of these calls; None when one of
    them lacks a p50."""
    out = []
    for c in calls:
        p = w.point_of(c)
        v = next((v for v in p.variants if v.name == name), None) if p else None
        if v is None or v.status != "ok" or v.timing is None or not c.weight:
            return None
        out.append(ReplayedCallTimes(c.weight, v.timing.p50_s, call_round_medians(v)))
    return out


def _totals(table: Table, wls: list[Workload], pairs: list[dict[str, tuple[str, str]]],
            calls: list[dict[Key, ReplayedCall]], thresholds: list[Threshold],
            many: bool) -> None:
    """A line per variant of A with its total in every report, and B's, C's... against A's:
    the deltas a gate looks at."""
    a = wls[0]
    for name in a.variants:
        mine = [next((t for t in w.totals
                      if (pairs[i].get(t.variant, (t.variant, ""))[0] if i else t.variant)
                      == name), None) for i, w in enumerate(wls)]
        row = [f"total ({len(calls[0])} calls)",
               one_line(" / ".join(dict.fromkeys(t.variant for t in mine if t)))]
        if many:
            row.append("")
        ta = mine[0].seconds if mine[0] else None
        for i, t in enumerate(mine):
            row.append(fmt.ms(t.seconds if t else None))
            if not i:
                continue
            same_calls = calls[i].keys() == calls[0].keys() and all(
                calls[i][k].weight == calls[0][k].weight for k in calls[0])
            tb = t.seconds if t and same_calls else None
            faster = speedup_or_none(ta, tb)
            verdict = None
            if faster is not None and t is not None:
                at = _times(a, list(calls[0].values()), name)
                bt = _times(wls[i], [calls[i][k] for k in calls[0]], t.variant)
                if at and bt:
                    verdict = unpaired_total_speedup(
                        at, bt, threshold_percent=thresholds[i].percent)
                table.deltas.append(Delta(letter(i), f"{one_line(t.variant)} total", faster,
                                          verdict))
            row += [fmt.pct(faster) if same_calls else "other calls", verdict_cell(verdict)]
        table.lines.append(Line(row, total=True))
