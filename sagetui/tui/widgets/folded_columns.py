"""A DataTable's columns folded into bands where they do not fit its width side by side.

A table too wide for its terminal would scroll sideways: the columns past the edge, their
headers included, out of sight. Folded, the key columns (the leading ones that name a row)
stay as they are and the others are dealt into bands, one under another: each row and the
header take a line per band, and a column of the table shows band 0's column on its first
line, band 1's on its second... Every header and every cell is whole, and a row stays one
row (its cursor, its selection), which a second table beside it would not keep.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

PADDING = 2  # a DataTable cell's padding, one either side
SCROLLBAR = 1  # the room its vertical scrollbar takes (app.tcss)


@dataclass(frozen=True)
class Folded:
    headers: list[Text]
    rows: list[list[Text]]
    heights: list[int]  # each row's lines
    header_height: int


def _text(cell: str | Text) -> Text:
    return Text(cell) if isinstance(cell, str) else cell


def _cell_width(cell: Text) -> int:
    return max((len(line) for line in cell.plain.split("\n")), default=0)


def _lines(cell: Text) -> int:
    return cell.plain.count("\n") + 1


def _wrapped(cell: Text, width: int) -> Text:
    """`cell` in lines of at most `width`: broken between its parts (" · "), a part too
    long for a line at its spaces (a word, a number, is never broken)."""
    if _cell_width(cell) <= width:
        return cell
    lines: list[Text] = []
    for part in cell.split(SEPARATOR):
        if lines and len(lines[-1]) + len(SEPARATOR) + len(part) <= width:
            lines[-1] = Text.assemble(lines[-1], SEPARATOR, part)
        else:
            lines += _at_spaces(part, width)
    return Text("\n").join(lines)


def _at_spaces(part: Text, width: int) -> list[Text]:
    """`part` broken at its spaces into lines of at most `width` (a longer word whole)."""
    lines: list[Text] = []
    start = 0
    for line in textwrap.wrap(part.plain, max(width, 1), break_long_words=False,
                              break_on_hyphens=False):
        start = part.plain.index(line, start)
        lines.append(part[start:start + len(line)])
        start += len(line)
    return lines or [part]


SEPARATOR = " · "  # between a text cell's parts (core/format's)


def _plan(widths: Sequence[int], keys: int, room: int) -> tuple[list[list[int]], bool]:
    """The non-key columns' bands: the fewest that fit `room`, each a run of the columns in
    their order, cut where the table comes narrowest (a wide column alone in its place, not
    under another wide one), and whether they fit."""
    rest = list(range(keys, len(widths)))
    fixed = sum(widths[i] + PADDING for i in range(keys))

    def width(bands: list[list[int]]) -> int:
        return fixed + sum(max(widths[b[j]] for b in bands if j < len(b)) + PADDING
                           for j in range(max(map(len, bands))))

    narrowest: list[list[int]] = [rest]
    for n in range(1, len(rest) + 1):
        cuts = itertools.combinations(range(1, len(rest)), n - 1)
        best = min(([rest[a:b] for a, b in zip((0, *c), (*c, len(rest)), strict=True)]
                    for c in cuts), key=width)
        if width(best) <= room:
            return best, True
        if width(best) < width(narrowest):
            narrowest = best
    return narrowest, False  # none fits: the narrowest, in the fewest bands


def fold(headers: Sequence[str | Text], rows: Sequence[Sequence[str | Text]], width: int,
         keys: int = 1) -> Folded:
    """The table's headers and rows, folded into as few bands as fit `width` (the table's
    own, its scrollbar included); one band where they fit, or where `width` is not known
    yet (0). A text cell too wide to fit beside the key columns even alone (a workload's
    accuracy) is wrapped between its parts."""
    head = [_text(h) for h in headers]
    body = [[_text(c) for c in r] for r in rows]
    keys = min(keys, len(head))

    w = [max([_cell_width(head[i]), *(_cell_width(r[i]) for r in body)])
         for i in range(len(head))]
    room = width - SCROLLBAR
    if width <= 0 or sum(x + PADDING for x in w) <= room:
        return Folded(head, body, [max(map(_lines, r), default=1) for r in body], 1)
    # a text cell too wide for the room beside the keys is wrapped to it; where the bands
    # then fit nowhere (a workload's accuracy takes that whole room), to half of it
    beside = room - sum(w[i] + PADDING for i in range(keys))
    for most in (beside - PADDING, beside // 2 - PADDING):
        wrapped = [[_wrapped(c, most) if i >= keys else c for i, c in enumerate(r)]
                   for r in body]
        widths = [max([_cell_width(head[i]), *(_cell_width(r[i]) for r in wrapped)])
                  for i in range(len(head))]
        bands, fits = _plan(widths, keys, room)
        if fits:
            break
    body = wrapped

    def folded(cells: list[Text]) -> tuple[list[Text], int]:
        """The row's cells, each band's lines under the last band's, and its height."""
        tall = [max(_lines(cells[i]) for i in band) for band in bands]
        out = [cells[i] for i in range(keys)]
        for j in range(max(map(len, bands))):
            # each band's lines under the last band's (the last band needs no padding)
            parts = [Text("\n" * (h - 1)) if j >= len(b) else
                     cells[b[j]] + "\n" * (h - _lines(cells[b[j]]))
                     for b, h in zip(bands[:-1], tall, strict=False)]
            last = bands[-1]
            out.append(Text("\n").join([*parts, cells[last[j]] if j < len(last) else Text()]))
        return out, sum(tall)

    header, header_height = folded(head)
    done = [folded(r) for r in body]
    return Folded(header, [r for r, _ in done], [h for _, h in done], header_height)
