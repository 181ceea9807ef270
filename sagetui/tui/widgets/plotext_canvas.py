"""plotext's canvas writer (`matrix_class.set_canvas`, plotext 5.3), the same text in a
fraction of its time: plotext appends to a string cell by cell and builds a list of colours
three times for each of a 120x40 frame's 4,800 cells; here each row's runs of one colour are
written at once. Every redraw of every plot writes a canvas (about a third of plotext's build).
`install` puts it in place of plotext's own; tests/tui/test_plot_canvas.py holds the two to
the same text."""

from __future__ import annotations

from itertools import groupby
from typing import Any

import plotext._utility as ut
from plotext._matrix import matrix_class

PLOTEXT_SET_CANVAS = matrix_class.set_canvas


def _colours(cell: tuple[Any, Any, Any, str]) -> tuple[Any, Any, Any]:
    return cell[:3]


def set_canvas(self: Any) -> str:
    """Each row from the top: per run of cells of one (foreground, style, background), its
    ANSI, its characters and the reset, as plotext writes them."""
    out: list[str] = []
    for row in self.Rows[::-1]:
        cells = zip(self.fullground[row], self.style[row], self.background[row],
                    self.marker[row], strict=True)
        for colours, run in groupby(cells, key=_colours):
            out.append(ut.colors_to_ansi(*colours))
            out.append("".join(cell[3] for cell in run))
            out.append(ut.ansi_end)
        out.append("\n")
    self.canvas = "".join(out)
    return self.canvas


def install() -> None:
    matrix_class.set_canvas = set_canvas
