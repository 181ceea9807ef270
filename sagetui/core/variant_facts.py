"""Per-variant facts, each declared once (nvbench's summaries): its key (the report Variant's
field), label, unit, how its cell is written and where it is shown. The console's variant table,
`sagetui run`'s table, the Markdown export, the sweep and workload CSVs and `sagetui compare`
iterate over FACTS; adding a fact is its measurement, its field in the report model and one
entry here.

Where: TABLE (the console's variant table and `run`'s table), MARKDOWN, CSV (a sweep's or a
workload's rows; a run's CSV holds raw samples only), COMPARE.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sagetui.core import format as fmt

TABLE, MARKDOWN, CSV, COMPARE = "table", "markdown", "csv", "compare"
EVERYWHERE = frozenset({TABLE, MARKDOWN, CSV, COMPARE})


def _bound(host_bound: Any) -> str:
    """Which time bounds a call: "HOST" (marked: the host's time to issue it exceeds its GPU
    time) or "GPU"."""
    return fmt.DASH if host_bound is None else "HOST" if host_bound else "GPU"


def _seconds_raw(x: Any) -> str:
    return "" if x is None else f"{x:.9g}"


@dataclass(frozen=True)
class Fact:
    key: str  # the field of core/report/model.Variant (and of figures.host_figures' dict)
    label: str
    unit: str
    cell: Callable[[Any], str]  # the value as a table cell
    shown: frozenset[str] = EVERYWHERE
    raw: Callable[[Any], str] = _seconds_raw  # the value as a CSV cell

    def header(self) -> str:
        return f"{self.label} {self.unit}".strip()


FACTS: tuple[Fact, ...] = (
    Fact("host_s", "host", "ms", fmt.ms),
    Fact("back_to_back_s", "b2b", "ms", fmt.ms),
    Fact("host_bound", "bound", "", _bound, raw=lambda x: "" if x is None else str(bool(x))),
    Fact("redone_blocks", "redone", "blocks", lambda x: fmt.DASH if x is None else str(x),
         frozenset({MARKDOWN, CSV}), raw=lambda x: "" if x is None else str(x)),
    # kept drained after every redo: its GPU time is the host's pace (never silently)
    Fact("drained_blocks", "drained", "blocks", lambda x: fmt.DASH if x is None else str(x),
         frozenset({MARKDOWN, CSV}), raw=lambda x: "" if x is None else str(x)),
)


def measured(variants: Any) -> bool:
    """Whether any of these variants (report Variants) has a host time: on the CPU's clock
    none has, and the tables keep their columns for timing."""
    return any(getattr(v, "host_s", None) is not None for v in variants or ())


def shown_in(where: str) -> list[Fact]:
    return [f for f in FACTS if where in f.shown]


def headers(where: str) -> list[str]:
    return [f.header() for f in shown_in(where)]


def cells(values: Mapping[str, Any] | Any, where: str) -> list[str]:
    """The facts' cells of one variant (a report Variant, or a mapping of the same keys)."""
    get = values.get if isinstance(values, Mapping) else (lambda k: getattr(values, k, None))
    return [f.cell(get(f.key)) for f in shown_in(where)]


def raw_cells(values: Mapping[str, Any] | Any, where: str = CSV) -> list[str]:
    get = values.get if isinstance(values, Mapping) else (lambda k: getattr(values, k, None))
    return [f.raw(get(f.key)) for f in shown_in(where)]


def clock_notes(report: Any) -> list[str]:
    """The verdict lines' notes on clocks (core/statistics/clocks.py) of a report's variants:
    each whose SM clocks differed from the baseline's by more than its time estimate's
    half-width."""
    return [v.clocks.note for v in report.variants or []
            if v.clocks is not None and v.clocks.note]
