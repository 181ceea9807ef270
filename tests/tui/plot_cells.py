"""Read a plot as a user sees it: which characters, in which colour, inside its frame."""

from __future__ import annotations

from rich.text import Text

from sagetui.tui.widgets.plots import SeriesPlot


def rendered(plot: SeriesPlot) -> list[Text]:
    return plot.render().split("\n")  # type: ignore[union-attr]


def frame_rows(lines: list[Text]) -> range:
    """The rows between the plot frame's top and bottom edges."""
    top = next(i for i, t in enumerate(lines) if "┌" in t.plain)
    bottom = next(i for i, t in enumerate(lines) if "└" in t.plain)
    return range(top + 1, bottom)


def ink_by_colour(lines: list[Text], rows: range) -> dict[str, int]:
    """Characters with ink (braille, block quadrants) per foreground colour (hex), inside the
    given rows."""
    out: dict[str, int] = {}
    for i in rows:
        line = lines[i]
        for span in line.spans:
            colour = span.style.color if hasattr(span.style, "color") else None
            if colour is None:
                continue
            hexc = colour.get_truecolor().hex.upper()
            chunk = line.plain[span.start: span.end]
            n = sum(0x2800 < ord(c) <= 0x28FF or 0x2580 <= ord(c) <= 0x259F for c in chunk)
            out[hexc] = out.get(hexc, 0) + n
    return out
