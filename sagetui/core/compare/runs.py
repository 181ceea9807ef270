"""Run reports side by side: per variant and phase, each report's p50 and p90, how much faster
it is than report A (the first), its speedup over its own baseline and its verdict, and, for a
variant matched across reports, the verdict of B against A from the two runs' rounds.

One sign convention throughout: positive means faster (`faster %` = (A p50 / X p50 - 1) x 100,
core.derived.speedup_percent with A in the baseline's place).

Rows match across reports by variant name; variants left over are then paired baseline with
baseline, then in order (match.py), and each total row says how it was matched. A report's
phase breakdown (reference 000's top-level phase_timings, or a sagetui report's baseline
phases) goes under "(phases)", so that a new run of the same kernel lines up phase by phase.
A verdict a report did not record is derived from its round medians (core.statistics.analysis,
with the report's own threshold) and marked *.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sagetui.core import format as fmt
from sagetui.core import variant_facts
from sagetui.core.compare.facts import build_difference
from sagetui.core.compare.match import letter, match
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
from sagetui.core.run import figures
from sagetui.core.run.load import from_report, report_threshold
from sagetui.core.statistics.analysis import analyse
from sagetui.core.statistics.threshold import Threshold
from sagetui.core.statistics.unpaired import unpaired_speedup
from sagetui.core.statistics.verdict import Verdict

PHASES_GROUP = "(phases)"
SIGN_NOTE = "faster %: + = faster than A (A p50 / p50 - 1)"
MATCH_NOTE = ("p50 speedup %: vs its own baseline from the p50s, + = faster; verdict: the "
              "paired estimate on round medians [95 % CI], * where sagetui derived it · rows "
              "match by variant name, else baseline with baseline, else in order (matched)")
CROSS_NOTE = ("vs A: the matched variant's speedup over A's from the two runs' round medians, "
              "Welch t (rounds of two runs are not paired), judged with the larger of the two "
              "reports' SAME thresholds")

P50s = tuple[float | None, float | None]


@dataclass
class Cell:
    p50: float | None
    p90: float | None
    speedup: float | None = None
    verdict: str = ""
    name: str = ""  # the variant's own name in this report
    cos: str = ""  # cosine similarity against fp32 attention
    rounds: list[float] = field(default_factory=list)  # round medians, in round order


@dataclass
class Row:
    group: str  # a variant (A's name when matched) or PHASES_GROUP
    phase: str
    cells: list[Cell | None] = field(default_factory=list)
    matched: str = ""  # how the variants of a total row were paired: name, baseline, position
    cross: list[Verdict | None] = field(default_factory=list)  # per report: against A's

    @property
    def total(self) -> bool:
        return self.phase == "total"

    def label(self) -> str:
        """The variant, and its other names where reports call it differently."""
        names = list(dict.fromkeys(c.name for c in self.cells if c is not None and c.name))
        return " / ".join(names) if self.total and names else self.group


@dataclass
class _Read:
    """One variant of a report, as the compare table needs it."""

    p50: float | None = None
    p90: float | None = None
    phases: dict[str, P50s] = field(default_factory=dict)
    rounds: dict[int, float] = field(default_factory=dict)


def _read(report: Report) -> dict[str, _Read]:
    """Each variant's figures as a run's (core/run/figures.of on the report loaded)."""
    m = from_report(report)
    out: dict[str, _Read] = {}
    for name, v in m.variants.items():
        f = figures.of(m, v)
        r = _Read()
        r.p50, r.p90 = f.quantiles() or (None, None)
        r.phases = {p: q for p, _ in v.phases if (q := f.quantiles(p)) is not None}
        r.rounds = figures.round_medians(v)
        out[name] = r
    return out


def baseline_of(report: Report) -> str | None:
    names = [v.name for v in report.variants or []]
    base = report.baseline or (names[0] if names else None)
    return base if base in names else None


def _own(report: Report, read: dict[str, _Read], base: str | None
         ) -> tuple[dict[str, str], dict[str, float | None]]:
    """Each variant's verdict against its report's baseline (recorded, else derived: marked *)
    and its p50 speedup (recorded, else derived)."""
    recorded = {v.name: v for v in report.variants or []}
    derived: dict[str, dict] = {}
    speedups: dict[str, float | None] = {}
    if any(v.verdict is None and n != base for n, v in recorded.items()) or any(
            v.speedup_vs_baseline_percent is None for v in recorded.values()):
        an = analyse({n: r.rounds for n, r in read.items()}, {n: r.p50 for n, r in read.items()},
                     base, report_threshold(report), drift_of=set())
        derived, speedups = an.verdict_dicts(), an.speedups()
    verdicts, speeds = {}, {}
    for n, v in recorded.items():
        vd = v.verdict.model_dump() if v.verdict else derived.get(n)
        verdicts[n] = "baseline" if n == base else fmt.verdict(
            vd, computed=v.verdict is None and vd is not None)
        speeds[n] = v.speedup_vs_baseline_percent if v.speedup_vs_baseline_percent is not None \
            else speedups.get(n)
    return verdicts, speeds


def _phase_rows(report: Report, read: dict[str, _Read], who: str | None
                ) -> tuple[str, dict[str, P50s]]:
    """(whose phases, phase -> p50s): the variant's own when it has any, else the report's
    top-level phase_timings."""
    r = read.get(who) if who else None
    if r is not None and r.phases:
        return who or "", r.phases
    if report.phase_timings:
        return "report", {p: (s.p50_s, s.p90_s) for p, s in report.phase_timings.items()}
    return who or "-", {}


def cells(report: Report) -> dict[tuple[str, str], Cell]:
    """(variant, phase) -> cell; 'total' cells carry the speedup, the verdict, the rounds."""
    read = _read(report)
    base = baseline_of(report)
    verdicts, speedups = _own(report, read, base)
    out: dict[tuple[str, str], Cell] = {}
    for v in report.variants or []:
        r = read[v.name]
        if r.p50 is None:
            continue
        acc = fmt.accuracy(v.accuracy.model_dump())["cos"] if v.accuracy else ""
        out[(v.name, "total")] = Cell(r.p50, r.p90, speedups.get(v.name), verdicts[v.name],
                                      v.name, acc, [r.rounds[k] for k in sorted(r.rounds)])
    names: list[str | None] = [*read] or [None]
    for who in names:
        whose, rows = _phase_rows(report, read, who)
        if who is not None and whose != who:
            continue  # no phases of its own: listed under (phases) or nowhere
        group = PHASES_GROUP if who is None or who == base else who
        for phase, (p50, p90) in rows.items():
            if p50 is not None:
                out[(group, phase)] = Cell(p50, p90)
    if not any(k[0] == PHASES_GROUP for k in out):
        for phase, (p50, p90) in _phase_rows(report, read, None)[1].items():
            if p50 is not None:
                out.setdefault((PHASES_GROUP, phase), Cell(p50, p90))
    return out


def cross_threshold(a: Report, b: Report) -> Threshold:
    """The SAME threshold of B against A: the larger of the two reports' own (each its
    verdicts', else its configuration's, else the default): a change must clear the noise of
    the noisier run."""
    return max(report_threshold(a), report_threshold(b), key=lambda t: t.percent)


def compare_rows(reports: list[Report]) -> list[Row]:
    tables = [cells(r) for r in reports]
    keyed: list[dict[tuple[str, str], Cell]] = []
    how: dict[str, str] = {}
    timed = [[k[0] for k in t if k[1] == "total"] for t in tables]
    for i, t in enumerate(tables):
        pairs = match(timed[0], baseline_of(reports[0]), timed[i],
                      baseline_of(reports[i])) if i else {}
        renamed = {}
        for (group, phase), cell in t.items():
            to, why = pairs.get(group, (group, ""))
            renamed[(to, phase)] = cell
            if i and why:
                # a row is "name" only if every report matched it by name
                how[to] = why if how.get(to, "name") == "name" else how[to]
        keyed.append(renamed)
    keys = list(dict.fromkeys(k for t in keyed for k in t))
    keys.sort(key=lambda k: (k[0] != PHASES_GROUP, k[1] != "total"))  # stable otherwise
    thresholds = [cross_threshold(reports[0], r) for r in reports]
    rows = []
    for group, phase in keys:
        row = Row(group, phase, [t.get((group, phase)) for t in keyed])
        if row.total and len(reports) > 1:
            row.matched = how.get(group, "-") if row.cells[0] is not None else "-"
            row.cross = [_cross(row.cells[0], c, thresholds[i]) if i else None
                         for i, c in enumerate(row.cells)]
        rows.append(row)
    return rows


def _cross(a: Cell | None, x: Cell | None, threshold: Threshold) -> Verdict | None:
    if a is None or x is None or not a.rounds or not x.rounds:
        return None
    return unpaired_speedup(a.rounds, x.rounds, threshold_percent=threshold.percent)


def faster_than_a(row: Row, i: int) -> float | None:
    first, cell = row.cells[0], row.cells[i]
    return speedup_or_none(first.p50 if first else None, cell.p50 if cell else None)


def run_table(labelled: list[tuple[str, Report]]) -> Table:
    reports = [r for _, r in labelled]
    rows = compare_rows(reports)
    many = len(reports) > 1
    cos = any(c is not None and c.cos for r in rows for c in r.cells)  # accuracy, where kept
    # the variants' facts (core/variant_facts.py's COMPARE: host times, where kept)
    facts = variant_facts.columns(variant_facts.COMPARE,
                                  [v for r in reports for v in r.variants or []])
    cols = key_columns(Column("variant"), Column("phase", kind="phase"), many=many)
    for i in range(len(reports)):
        x = letter(i)
        cols += [Column(f"{x} p50 ms", True), Column(f"{x} p90 ms", True)]
        if i:
            cols += against_a(x)
        cols += [Column(f"{x} p50 speedup %", True),
                 Column(f"{x} verdict: paired % [95% CI]", True)]
        if cos:
            cols.append(Column(f"{x} cos sim", True))
        cols += [Column(f"{x} {h}", True) for h in variant_facts.headers(facts)]
    lines, deltas = [], []
    for row in rows:
        out = [one_line(row.label()), one_line(row.phase)] + (
            [row.matched] if many else [])
        for i, cell in enumerate(row.cells):
            out += [fmt.ms(cell.p50 if cell else None), fmt.ms(cell.p90 if cell else None)]
            if i:
                out += [fmt.pct(faster_than_a(row, i)),
                        verdict_cell(row.cross[i]) if row.total else ""]
                if row.total and row.cells[0] is not None and cell is not None:
                    deltas.append(Delta(letter(i), row.label(), faster_than_a(row, i),
                                        row.cross[i]))
            out += [fmt.pct(cell.speedup, 3) if cell and row.total else "",
                    one_line(cell.verdict) if cell else ""]
            if cos:
                out.append(cell.cos if cell else "")
            v = reports[i].variant(cell.name) if cell and row.total else None
            out += variant_facts.cells(v, facts) if v else [""] * len(facts)
        lines.append(Line(out, row.total))
    notes = [SIGN_NOTE, CROSS_NOTE, MATCH_NOTE] if many else []
    # each report's verdict lines that name their clocks (core/statistics/clocks.py)
    notes += [(f"{letter(i)}: " if many else "") + n for i, r in enumerate(reports)
              for n in variant_facts.clock_notes(r)]
    return Table(cols, lines, notes, deltas, _builds(labelled, rows))


def _builds(labelled: list[tuple[str, Report]], rows: list[Row]) -> list[str]:
    """Matched variants whose builds differ (their .so files' sha256)."""
    out = []
    reports = [r for _, r in labelled]
    for row in rows:
        if not row.total or row.cells[0] is None:
            continue
        a = reports[0].variant(row.cells[0].name)
        for i, cell in enumerate(row.cells[1:], start=1):
            x = reports[i].variant(cell.name) if cell else None
            diff = build_difference(a.provenance if a else None, x.provenance if x else None)
            if diff:
                out.append(f"{letter(i)} {one_line(row.label())}: another build ({diff})")
    return out
