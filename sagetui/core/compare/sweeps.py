"""Sweeps side by side, point by point: a point of B is A's point of the same shape (batch,
heads, kv heads, q and kv lengths, head dim, causal; dtype and layout are the sweeps' own and
facts.py compares them), and at each point a variant of B is matched with one of A's by the
one rule (match.py) applied to the sweeps' variant lists. Per point and variant: the p50 of the
whole call, kernel TOPS, and for B, C, ...: `faster %` against A's p50 and the unpaired verdict
from the two points' round medians (what a gate looks at).

Sweeps with no point in common are not comparable (a refusal: --force shows them anyway, one
report's points under the other's).
"""

from __future__ import annotations

from dataclasses import dataclass

from sagetui.core import format as fmt
from sagetui.core.blocks.sweep import Sweep, SweepPoint, SweepVariantPoint
from sagetui.core.compare.facts import build_difference
from sagetui.core.compare.match import letter, match
from sagetui.core.compare.runs import CROSS_NOTE, cross_threshold
from sagetui.core.compare.table import (
    Column,
    Delta,
    Line,
    Table,
    against_a,
    key_columns,
    verdict_cell,
)
from sagetui.core.config import Shape
from sagetui.core.derived import speedup_or_none
from sagetui.core.report.io import one_line
from sagetui.core.report.model import Report
from sagetui.core.statistics.threshold import Threshold
from sagetui.core.statistics.unpaired import unpaired_speedup
from sagetui.core.sweep.collect import call_round_medians

NOTES = ["faster %: + = faster than A (A p50 / p50 - 1, the whole call)", CROSS_NOTE,
         "points match by shape; at a point, variants match by name, else baseline with "
         "baseline, else in order (matched) · kernel TOPS: of the kernel phase's p50 (the main "
         "loop where the backend has one)"]

Key = tuple[int, int, int, int, int, int, bool]


def point_key(s: Shape) -> Key:
    return s.batch, s.heads, s.n_kv_heads, s.q_len, s.n_kv_len, s.head_dim, s.causal


def point_label(s: Shape) -> str:
    """The point's shape without what every point of a sweep shares (dtype, layout)."""
    kv = f"/{s.n_kv_heads}kv" if s.n_kv_heads != s.heads else ""
    kvl = f" kv {s.n_kv_len}" if s.n_kv_len != s.q_len else ""
    return f"{s.batch}x{s.q_len}x{s.heads}{kv}x{s.head_dim}{kvl}" + (" causal" if s.causal
                                                                     else "")


@dataclass
class PointCell:
    v: SweepVariantPoint

    @property
    def p50(self) -> float | None:
        return self.v.timing.p50_s if self.v.status == "ok" and self.v.timing else None

    def rounds(self) -> list[float]:
        return call_round_medians(self.v)


def _sweep(r: Report) -> Sweep:
    assert r.sweep is not None  # facts.kind: every report here is a sweep
    return r.sweep


def sweep_table(labelled: list[tuple[str, Report]]) -> Table:
    reports = [r for _, r in labelled]
    sweeps = [_sweep(r) for r in reports]
    a = sweeps[0]
    pairs = [match(list(a.variants), a.baseline, list(s.variants), s.baseline) if i else {}
             for i, s in enumerate(sweeps)]
    points = [{point_key(p.shape): p for p in s.points} for s in sweeps]
    many = len(sweeps) > 1
    cols = key_columns(Column("point"), Column("variant"), many=many)
    for i in range(len(sweeps)):
        x = letter(i)
        cols += [Column(f"{x} p50 ms", True), Column(f"{x} kernel TOPS", True)]
        if i:
            cols += against_a(x)
    thresholds = [cross_threshold(reports[0], r) for r in reports]
    table = Table(cols, [], NOTES if many else [])
    for key in dict.fromkeys(k for ps in points for k in ps):
        shape = next(ps[key].shape for ps in points if key in ps)
        table.lines += point_lines(table, [ps.get(key) for ps in points], pairs,
                                   point_label(shape), thresholds)
    table.refusals = [f"{letter(i)} ({label}) has no point of A's shapes"
                      for i, (label, _) in enumerate(labelled) if i
                      and not set(points[0]) & set(points[i])]
    return table


def point_lines(table: Table, at: list[SweepPoint | None],
                pairs: list[dict[str, tuple[str, str]]], where: str,
                thresholds: list[Threshold], tops: bool = True) -> list[Line]:
    """A line per variant at one point (`at`: each report's, or None), its variants matched
    with A's by `pairs` (match.py); its cells point_cells'."""
    many = len(at) > 1
    # per report: A's name of each variant at this point -> its cell, and how it matched
    cells: list[dict[str, tuple[PointCell, str]]] = []
    for i, p in enumerate(at):
        cells.append({})
        for v in p.variants if p else []:
            to, how = pairs[i].get(v.name, (v.name, "-")) if i else (v.name, "")
            cells[i][to] = (PointCell(v), how)
    lines = []
    for name in dict.fromkeys(n for each in cells for n in each):
        mine = [each[name][0] if name in each else None for each in cells]
        row = [where, one_line(" / ".join(dict.fromkeys(c.v.name for c in mine if c)))]
        if many:
            hows = [each[name][1] for each in cells[1:] if name in each]
            row.append(next((h for h in hows if h != "name"), "name")
                       if hows and mine[0] else "-")
        lines.append(Line(row + point_cells(table, mine, where, thresholds, tops)))
    return lines


def point_cells(table: Table, mine: list[PointCell | None], where: str,
                thresholds: list[Threshold], tops: bool = True) -> list[str]:
    """One variant's cells at one point, in every report (its kernel TOPS unless `tops` is
    False); B, C, ... against A's (deltas)."""
    first = mine[0]
    out: list[str] = []
    for i, c in enumerate(mine):
        out.append("failed" if c and c.v.status != "ok" else fmt.ms(c.p50 if c else None))
        if tops:
            out.append(fmt.tops(c.v.kernel_tops if c else None))
        if not i:
            continue
        faster = speedup_or_none(first.p50 if first else None, c.p50 if c else None)
        verdict = None
        if faster is not None and first and c and first.rounds() and c.rounds():
            verdict = unpaired_speedup(first.rounds(), c.rounds(),
                                       threshold_percent=thresholds[i].percent)
        out += [fmt.pct(faster), verdict_cell(verdict)]
        if faster is not None and c:
            table.deltas.append(Delta(letter(i), f"{one_line(c.v.name)} at {where}", faster,
                                      verdict))
        diff = build_difference(first.v.provenance if first else None,
                                c.v.provenance if c else None)
        line = f"{letter(i)} {one_line(c.v.name)}: another build ({diff})" if c and diff \
            else None
        if line and line not in table.builds:  # said once, not at every point
            table.builds.append(line)
    return out
