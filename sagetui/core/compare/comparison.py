"""Reports side by side, whatever their kind: the one entry `sagetui compare` and the console's
Compare tab call. It says what it can (the table, how to read it) and what stands in the way
(facts.py's rule: `refusals`); refusing is the caller's (the command line exits 2, the console
warns)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sagetui.core.compare import facts
from sagetui.core.compare.match import legend, letter
from sagetui.core.compare.profiles import profile_table
from sagetui.core.compare.runs import run_table
from sagetui.core.compare.swaps import swap_table
from sagetui.core.compare.sweeps import sweep_table
from sagetui.core.compare.table import Column, Delta, Line
from sagetui.core.compare.workloads import workload_table
from sagetui.core.report.io import one_line
from sagetui.core.report.model import Report


@dataclass
class Comparison:
    kind: str  # "run", "sweep", "workload", "profile" or "swap"
    labels: list[str]
    columns: list[Column]
    lines: list[Line]
    notes: list[str] = field(default_factory=list)  # the legend first, then how to read it
    deltas: list[Delta] = field(default_factory=list)  # what a gate looks at
    refusals: list[str] = field(default_factory=list)  # facts.py's rule: one per report
    differences: list[str] = field(default_factory=list)  # what differs that does not refuse

    def refusal_line(self) -> str:
        return "; ".join(self.refusals)


def compare_reports(labelled: list[tuple[str, Report]]) -> Comparison:
    """The comparison of reports B, C, ... with A (the first); NotComparable when their kinds
    differ."""
    labels = [one_line(label) for label, _ in labelled]
    if not labelled:
        return Comparison("run", [], [], [])
    kinds = [facts.kind(r) for _, r in labelled]
    if len(set(kinds)) > 1:
        raise facts.NotComparable(facts.kinds_line(labels, kinds))
    report_facts = [facts.facts(r) for _, r in labelled]
    refusals, differences = [], []
    for i in range(1, len(labelled)):
        refuse, said = facts.differences(report_facts[0], report_facts[i])
        who = f"{letter(i)} ({labels[i]})"
        if refuse:
            refusals.append(f"{who} differs from A ({labels[0]}) in {', '.join(refuse)}")
        differences += [f"{letter(i)}: {s}" for s in said]
    table = TABLES[kinds[0]]([(labels[i], r) for i, (_, r) in enumerate(labelled)])
    return Comparison(kinds[0], labels, table.columns, table.lines,
                      [legend(labels), *table.notes], table.deltas,
                      refusals + table.refusals, differences + table.builds)


TABLES = {"run": run_table, "sweep": sweep_table, "profile": profile_table,
          "workload": workload_table, "swap": swap_table}
