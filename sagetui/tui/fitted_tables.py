"""A table of text cells laid out for the console's width, for the commands that print one
(`compare`, `swap`) and the console's Compare tab and Swap panel: every cell whole (a column is
at least as wide as its longest word, so a number is never cut; longer cells and the headers
wrap at their spaces), and where the columns do not fit side by side, the rest go to a further
table under the first, each repeating the key columns (the leading columns that name a row)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from sagetui.core.compare.comparison import Comparison
from sagetui.core.compare.table import Column
from sagetui.core.report.model import Report
from sagetui.core.swap import view

CHROME = 3  # a column's padding either side and its border
SIDE = 1  # the table's last border


def _least(title: str, cells: Sequence[str]) -> int:
    """The narrowest the column may be with no cell cut: its longest word (a number is one
    word; a verdict and its interval wrap at their spaces), the header's too."""
    words = [w for c in cells for w in c.split()] + title.split()
    return max([len(w) for w in words] or [1])


def _natural(title: str, cells: Sequence[str]) -> int:
    return max([len(line) for c in cells for line in c.split("\n")] + [len(title)] or [1])


def fitted_tables(title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]],
                  width: int, keys: int = 1, caption: str | None = None,
                  bold_rows: Sequence[bool] = ()) -> list[Table]:
    """One table where its columns fit `width`, else several: the key columns, then as many
    of the others as fit, then the next (the caption under the last); a table still too wide
    has its widest columns wrapped at their spaces (_shrunk)."""
    cells = [[r[i] for r in rows] for i in range(len(columns))]
    least = [_least(c.title, cells[i]) for i, c in enumerate(columns)]
    natural = [max(least[i], _natural(c.title, cells[i])) for i, c in enumerate(columns)]
    keys = min(keys, len(columns))
    fixed = SIDE + sum(natural[i] + CHROME for i in range(keys))
    groups: list[list[int]] = [[]]
    used = fixed
    for i in range(keys, len(columns)):
        need = natural[i] + CHROME
        if groups[-1] and used + need > width:
            groups.append([])
            used = fixed
        groups[-1].append(i)
        used += need
    tables = []
    for n, group in enumerate(groups):
        shown = [*range(keys), *group]
        widths = _shrunk({i: natural[i] for i in shown}, least, width)
        t = Table(title=title if n == 0 else None,
                  caption=Text(caption) if caption and n == len(groups) - 1 else None)
        for i in shown:
            c = columns[i]
            t.add_column(c.title, justify="right" if c.numeric else "left", width=widths[i],
                         overflow="fold")
        for r, row in enumerate(rows):
            bold = r < len(bold_rows) and bold_rows[r]
            t.add_row(*(Text(row[i], style="bold" if bold else "") for i in shown))
        tables.append(t)
    return tables


def _shrunk(widths: dict[int, int], least: list[int], width: int) -> dict[int, int]:
    """The columns' widths, the widest narrowed a character at a time (never below its
    longest word) until the table fits `width`, or none can narrow further."""
    out = dict(widths)
    while SIDE + sum(w + CHROME for w in out.values()) > width:
        room = [i for i in out if out[i] > least[i]]
        if not room:
            break
        widest = max(room, key=lambda i: out[i] - least[i])
        out[widest] -= 1
    return out


def swap_table(report: Report, width: int | None = None) -> Group:
    """The swap's table (core/swap/view.py's cells, as the console shows them), as wide as
    `width` allows."""
    s = report.swap
    assert s is not None
    return Group(*fitted_tables(view.title(s), [Column(n, numeric)
                                                for n, numeric in view.COLUMNS],
                                view.rows(s), width or 10**6))


def comparison_table(c: Comparison, width: int | None = None,
                     title: str = "sagetui compare", legend: bool = True) -> Group:
    """The comparison's table, as wide as `width` allows (no cell cut; the columns that do not
    fit go to a further table under it, the row's names repeated): `sagetui compare` prints it,
    the console's Compare tab shows it."""
    keys = 0
    while keys < min(2, len(c.columns)) and not c.columns[keys].numeric:
        keys += 1
    return Group(*fitted_tables(
        title, c.columns,
        [line.cells for line in c.lines], width or 10**6, keys=max(keys, 1),
        caption=" · ".join(c.notes) if legend else None,
        bold_rows=[line.total for line in c.lines]))
