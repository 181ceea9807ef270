"""Swap reports side by side: each arm (matched by name) with its step, its step's change
against its own baseline and verdict, and for B, C, ... the step against A's same arm."""

from __future__ import annotations

from sagetui.core import format as fmt
from sagetui.core.compare.match import letter
from sagetui.core.compare.table import Column, Line, Table
from sagetui.core.derived import speedup_or_none
from sagetui.core.report.io import one_line
from sagetui.core.report.model import Report
from sagetui.core.swap.view import step_faster, verdict_word

NOTES = ["faster %: + = faster; X step faster %: each report's own, against its baseline arm, "
         "paired by round; X faster than A %: the median steps of the same arm (A's step / "
         "this step - 1)"]


def swap_table(labelled: list[tuple[str, Report]]) -> Table:
    swaps = [r.swap for _, r in labelled]
    cols = [Column("arm")]
    for i in range(len(swaps)):
        x = letter(i)
        cols += [Column(f"{x} step ms", True), Column(f"{x} step faster % [95% CI]", True)]
        if i:
            cols.append(Column(f"{x} faster than A %", True))
    table = Table(cols, [], list(NOTES))
    arms = dict.fromkeys(f.arm for s in swaps if s for f in s.figures)
    for arm in arms:
        mine = [next((f for f in s.figures if f.arm == arm), None) if s else None
                for s in swaps]
        row = [one_line(arm)]
        for i, f in enumerate(mine):
            s = swaps[i]
            faster, low, high = step_faster(f) if f else (None, None, None)
            row += [fmt.ms(f.step_s) if f else "",
                    (f"{fmt.pct(faster, 1)} {fmt.ci(low, high, 1)} "
                     f"{verdict_word(f, s.baseline if s else '')}") if f else ""]
            if i:
                a = mine[0]
                row.append(fmt.pct(speedup_or_none(a.step_s if a else None,
                                                   f.step_s if f else None), 1))
        table.lines.append(Line(row, total=True))
    programs = {" ".join(s.argv[1:]) for s in swaps if s}
    if len(programs) > 1:
        table.notes.append("the programs differ: " + " | ".join(sorted(programs)))
    return table
