"""Reports side by side, as rows: what the Compare tab and `sagetui compare` both show.

Per variant and phase, each report's p50 and p90, how much faster it is than report A (the
first), its speedup over its own baseline and its verdict. One sign convention throughout:
positive means faster (`faster %` = (A p50 / X p50 - 1) x 100, the formula of
`speedup_vs_baseline_percent` with A in the baseline's place).

Rows match across reports by variant name; variants left over are then paired baseline with
baseline, then in order, and each total row says how it was matched. A report's phase
breakdown (reference 000's top-level phase_timings, or a sagetui report's baseline phases) goes
under "(phases)", so that a new run of the same kernel lines up phase by phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sagetui.core import format as fmt
from sagetui.tui.analysis_worker import analyse_now
from sagetui.tui.source import Source

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
PHASES_GROUP = "(phases)"
SIGN_NOTE = "faster %: + = faster than A (A p50 / p50 - 1)"
MATCH_NOTE = ("p50 speedup %: vs its own baseline from the p50s, + = faster; verdict: the "
              "paired estimate on round medians [95 % CI] · rows match by variant name, else "
              "baseline with baseline, else in order (matched)")


@dataclass
class Cell:
    p50: float | None
    p90: float | None
    speedup: float | None = None
    verdict: str = ""
    name: str = ""  # the variant's own name in this report
    cos: str = ""  # cosine similarity against fp32 attention


@dataclass
class Row:
    group: str  # a variant (A's name when matched) or PHASES_GROUP
    phase: str
    cells: list[Cell | None] = field(default_factory=list)
    matched: str = ""  # how the variants of a total row were paired: name, baseline, position

    @property
    def total(self) -> bool:
        return self.phase == "total"

    def label(self) -> str:
        """The variant, and its other names where reports call it differently."""
        names = list(dict.fromkeys(c.name for c in self.cells if c is not None and c.name))
        return " / ".join(names) if self.total and names else self.group


def letter(i: int) -> str:
    return LETTERS[i % 26]


def faster_percent(a_p50: float | None, p50: float | None) -> float | None:
    return (a_p50 / p50 - 1) * 100 if a_p50 and p50 else None


def with_verdicts(data: Source) -> Source:
    """Drift, verdicts and speedups a report did not record, computed here and now (the
    console computes the same in a worker thread; `sagetui compare` calls this)."""
    analyse_now(data)
    return data


def _cells(data: Source) -> dict[tuple[str, str], Cell]:
    """(variant, phase) -> cell; 'total' rows carry the speedup and the verdict."""
    out: dict[tuple[str, str], Cell] = {}
    base = data.baseline if data.baseline in data.variants else None
    for name, v in data.variants.items():
        q = data.quantiles(v)
        if q is None:
            continue
        vd = v.verdict
        # the verdict's own paired estimate and interval; * marks one sagetui computed
        verdict = "baseline" if name == base else (
            fmt.verdict(vd, computed=v.verdict_computed))
        acc = v.facts.accuracy
        out[(name, "total")] = Cell(q[0], q[1], v.speedup_percent, verdict, name,
                                    fmt.accuracy(acc.model_dump())["cos"] if acc else "")
    names: list[str | None] = [*data.variants] or [None]
    for who in names:
        whose, rows = data.phase_rows(who)
        if who is not None and whose != who:
            continue  # no phases of its own: listed under (phases) or nowhere
        group = PHASES_GROUP if who is None or who == base else who
        for r in rows:
            if r.p50_s is not None:
                out[(group, r.name)] = Cell(r.p50_s, r.p90_s)
    if not any(k[0] == PHASES_GROUP for k in out):
        for r in data.phase_rows(None)[1]:
            if r.p50_s is not None:
                out.setdefault((PHASES_GROUP, r.name), Cell(r.p50_s, r.p90_s))
    return out


def match(a: Source, b: Source) -> dict[str, tuple[str, str]]:
    """b's variant -> (a's variant it pairs with, how): by name, then baseline with baseline,
    then the rest in order."""
    a_names = [n for n, v in a.variants.items() if a.p50_s(v) is not None]
    b_names = [n for n, v in b.variants.items() if b.p50_s(v) is not None]
    out = {n: (n, "name") for n in b_names if n in a_names}
    free_a = [n for n in a_names if n not in out]
    free_b = [n for n in b_names if n not in out]
    ab, bb = a.baseline, b.baseline
    if ab is not None and bb is not None and ab in free_a and bb in free_b:
        out[bb] = (ab, "baseline")
        free_a.remove(ab)
        free_b.remove(bb)
    for x, y in zip(free_b, free_a, strict=False):
        out[x] = (y, "position")
    return out


def compare_rows(sources: list[Source]) -> list[Row]:
    tables = [_cells(s) for s in sources]
    keyed: list[dict[tuple[str, str], Cell]] = []
    how: dict[str, str] = {}
    for i, t in enumerate(tables):
        pairs = match(sources[0], sources[i]) if i else {}
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
    rows = []
    for group, phase in keys:
        row = Row(group, phase, [t.get((group, phase)) for t in keyed])
        if row.total and len(sources) > 1:
            row.matched = how.get(group, "-") if row.cells[0] is not None else "-"
        rows.append(row)
    return rows


def faster_than_a(row: Row, i: int) -> float | None:
    first, cell = row.cells[0], row.cells[i]
    return faster_percent(first.p50 if first else None, cell.p50 if cell else None)


def legend(labels: list[str]) -> str:
    return "  ".join(f"{letter(i)} = {name}" for i, name in enumerate(labels))
