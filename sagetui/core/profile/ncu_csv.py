"""`ncu -i REPORT --page source --csv --print-source sass`: one row per SASS instruction.

Columns read: `Address` (absolute; the first row is offset 0 of the function), `Source` (the
instruction's text), `Warp Stall Sampling (All Samples)`, `Instructions Executed`, and every
`stall_*` column (samples per stall reason). Numbers may carry thousands separators.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
ADDRESS = "Address"
SOURCE = "Source"


class CsvFormatError(ValueError):
    """The text is not ncu's source page with SASS rows."""


@dataclass(frozen=True)
class SassRow:
    offset: int  # bytes from the function's first instruction
    text: str
    samples: int
    executed: int
    stalls: dict[str, int] = field(default_factory=dict)  # reason (no "stall_") -> samples


def _number(cell: str) -> int:
    cell = cell.strip().replace(",", "")
    if not cell:
        return 0
    value = float(cell)
    if value < 0 or value != value:
        raise CsvFormatError(f"not a count: {cell!r}")
    return int(round(value))


def parse_source_csv(text: str) -> list[SassRow]:
    """The rows in address order. Lines before the header (ncu's `==PROF==` chatter) are
    skipped; a table without the needed columns is refused with their names."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next((i for i, r in enumerate(rows) if ADDRESS in r and SOURCE in r), None)
    if start is None:
        raise CsvFormatError(f"no header with {ADDRESS!r} and {SOURCE!r}: not ncu's source page")
    header = rows[start]
    missing = [c for c in (SAMPLES, EXECUTED) if c not in header]
    if missing:
        raise CsvFormatError(f"ncu's source page lacks {', '.join(map(repr, missing))}: profile "
                             "with --section SourceCounters --section WarpStateStats")
    col = {name: i for i, name in enumerate(header)}
    # "stall_X (Not Issued)" counts a subset of "stall_X": only the latter is summed
    stall_cols = {name.removeprefix("stall_"): i for name, i in col.items()
                  if name.startswith("stall_") and "(" not in name}
    out: list[SassRow] = []
    base: int | None = None
    for r in rows[start + 1:]:
        if len(r) < len(header) or not r[col[ADDRESS]].strip():
            continue
        try:
            addr = int(r[col[ADDRESS]].strip(), 16)
        except ValueError:
            continue  # a second table's header or a units row
        base = addr if base is None else base
        out.append(SassRow(offset=addr - base, text=r[col[SOURCE]].strip(),
                           samples=_number(r[col[SAMPLES]]), executed=_number(r[col[EXECUTED]]),
                           stalls={k: n for k, i in stall_cols.items()
                                   if (n := _number(r[i]))}))
    if not out:
        raise CsvFormatError("ncu's source page has a header but no SASS rows")
    return out
