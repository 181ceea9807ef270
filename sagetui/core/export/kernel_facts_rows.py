"""The variants' kernel facts (core/kernel_facts.py) side by side, as text: the Scheduler tab's
table and the Markdown export read the same rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sagetui.core.format import DASH, count, fraction_pct
from sagetui.core.kernel_facts import KernelFacts

DIFFERS = "≠"  # marks a fact the variants do not share


@dataclass(frozen=True)
class FactRow:
    key: str  # the CSV column
    label: str
    cells: list[str]  # one per variant, in order
    differs: bool  # the variants with facts do not all read alike


def _cells(kf: KernelFacts) -> dict[str, str]:
    k, o = kf.kernel, kf.occupancy
    return {
        "function": kf.function or DASH,
        "arch": kf.arch or DASH,
        "registers": count(k.registers if k else None),
        "local_bytes": count(k.local_bytes if k else None),
        "stack_bytes": count(k.stack_bytes if k else None),
        "static_shared_bytes": count(k.static_shared_bytes if k else None),
        "dynamic_shared_bytes": count(kf.dynamic_shared_bytes),
        "threads_per_cta": count(kf.threads_per_cta),
        "ctas_per_sm": count(o.ctas_per_sm if o else None),
        "theoretical_occupancy": f"{fraction_pct(o.theoretical_occupancy, 1)} %" if o else DASH,
        "limited_by": ", ".join(o.limited_by) if o else DASH,
        "module_sha256": (kf.module_sha256 or DASH)[:12],
        "cuobjdump": kf.cuobjdump or DASH,
    }


ROWS: tuple[tuple[str, str], ...] = (
    ("function", "function"), ("arch", "architecture"), ("registers", "registers / thread"),
    ("local_bytes", "local (spills) B / thread"), ("stack_bytes", "stack B / thread"),
    ("static_shared_bytes", "static shared B / CTA (SHARED)"),
    ("dynamic_shared_bytes", "dynamic shared B / CTA"), ("threads_per_cta", "threads / CTA"),
    ("ctas_per_sm", "CTAs / SM"), ("theoretical_occupancy", "theoretical occupancy"),
    ("limited_by", "limited by"), ("module_sha256", "module sha256"),
    ("cuobjdump", "cuobjdump"),
)


def comparison_rows(facts: Sequence[KernelFacts | None]) -> list[FactRow]:
    """One row per fact, one cell per variant (in `facts`' order); a variant without facts
    reads as a dash, one whose facts could not be read says why in its first row. Empty when
    no variant has the block."""
    if not any(f is not None for f in facts):
        return []
    cells = [_cells(f) if f is not None else {} for f in facts]
    rows = []
    for key, label in ROWS:
        row = [c.get(key, DASH) for c in cells]
        if key == "function":  # the first row says why a variant has no figures
            row = [f.unavailable if f is not None and f.unavailable else cell
                   for f, cell in zip(facts, row, strict=True)]
        known = {cell for f, cell in zip(facts, row, strict=True)
                 if f is not None and f.unavailable is None}
        rows.append(FactRow(key, label, row, len(known) > 1))
    return rows
