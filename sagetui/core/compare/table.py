"""What a comparison is, whatever the kind of report: columns, lines of cells already written
by core/format.py (so `sagetui compare` and the console's Compare tab show the same text), the
notes that say how to read them, and the differences a gate looks at."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sagetui.core import format as fmt
from sagetui.core.statistics.verdict import Verdict


@dataclass(frozen=True)
class Column:
    title: str
    numeric: bool = False  # right-aligned
    kind: str = ""  # "phase", "matched": a display may shorten or dim these


@dataclass(frozen=True)
class Line:
    cells: list[str]
    total: bool = False  # a variant's whole call (shown in bold), not one of its phases


@dataclass(frozen=True)
class Delta:
    """One matched thing of report `who` against A: a variant, or a variant at a sweep point.
    `faster` is the p50s' `faster %`; `verdict` the unpaired verdict, where both sides have
    rounds."""

    who: str  # the report's letter
    what: str
    faster: float | None
    verdict: Verdict | None = None

    def interval(self) -> tuple[float, float] | None:
        v = self.verdict
        if v is None or not (math.isfinite(v.ci_low_percent)
                             and math.isfinite(v.ci_high_percent)):
            return None
        return v.ci_low_percent, v.ci_high_percent

    def describe(self) -> str:
        iv = self.interval()
        return (f"{self.who} {self.what}: faster % {fmt.pct(self.faster)}"
                + (f", {fmt.verdict(self.verdict.to_dict())}" if iv and self.verdict else
                   " (p50s alone: no rounds to give an interval)"))


@dataclass
class Table:
    """A kind's side of a comparison (runs.py, sweeps.py, profiles.py)."""

    columns: list[Column]
    lines: list[Line]
    notes: list[str] = field(default_factory=list)
    deltas: list[Delta] = field(default_factory=list)
    builds: list[str] = field(default_factory=list)  # matched variants whose builds differ
    refusals: list[str] = field(default_factory=list)  # a kind's own (sweeps: no common point)


def key_columns(*first: Column, many: bool) -> list[Column]:
    """What a line is (a variant, a phase, a point), and how it was matched when comparing."""
    return [*first] + ([Column("matched", kind="matched")] if many else [])


def against_a(x: str) -> list[Column]:
    """Report x's columns against A: the p50s' `faster %` and the unpaired verdict."""
    return [Column(f"{x} faster %", True), Column(f"{x} vs A: verdict % [95% CI]", True)]


def verdict_cell(v: Verdict | None) -> str:
    return fmt.verdict(v.to_dict()) if v is not None else ""
