"""plotext's ANSI output read into rich Text, or straight into Textual's strips, quickly (a
plot redraw must stay cheap)."""

from __future__ import annotations

import functools
import re

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

_SGR = re.compile("\x1b\\[([0-9;]*)m")
_LINES: dict[tuple[Style, str], tuple[Text, Style]] = {}  # ansi_text's lines seen lately
_STRIPS: dict[tuple[Style, str, Style], tuple[Strip, Style]] = {}  # ansi_strips', likewise


@functools.lru_cache(maxsize=4096)
def _after_sgr(style: Style, codes: str) -> Style | None:
    """The style after one SGR sequence as rich's AnsiDecoder makes it, for those plotext
    writes (reset, 24-bit or 256-colour foreground and background: a grid's or a marker
    line's colour is a 256-colour one); None for any other."""
    if codes in ("", "0"):
        return Style.null()
    parts = codes.split(";")
    if parts[0] not in ("38", "48") or not all(p.isdigit() for p in parts[1:]):
        return None
    if len(parts) == 5 and parts[1] == "2":
        colour = Color.from_rgb(*(min(255, int(p)) for p in parts[2:]))
    elif len(parts) == 3 and parts[1] == "5":
        colour = Color.from_ansi(min(255, int(parts[2])))
    else:
        return None
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
    return Text("\n").join(ansi_lines(ansi))


def ansi_lines(ansi: str) -> list[Text]:
    """ansi_text's lines, one Text each (a line seen lately is the same Text again)."""
    lines, style = [], Style.null()
    for line in ansi.split("\n"):
        got = _ansi_line(style, line)
        if got is None:
            return list(Text.from_ansi(ansi).split("\n", allow_blank=True))
        text, style = got
        lines.append(text)
    return lines


def ansi_strips(ansi: str, base: Style) -> list[Strip] | None:
    """What ansi_lines' lines rendered over the widget's style `base` give, each line a Strip,
    without making a Text of it: a redraw's plotext frame goes from its ANSI to the screen's
    strips in one pass (through Text: 8 ms of CPU for the iterations plot, here 2-3). None
    where a line holds a code that ansi_text hands to Text.from_ansi."""
    strips, style = [], Style.null()
    for line in ansi.split("\n"):
        got = _ansi_strip(style, line, base)
        if got is None:
            return None
        strip, style = got
        strips.append(strip)
    return strips


def _ansi_strip(style: Style, line: str, base: Style) -> tuple[Strip, Style] | None:
    key = (style, line, base)
    hit = _STRIPS.get(key)
    if hit is not None:
        return hit
    segments, pos = [], 0
    for m in _SGR.finditer(line):
        if m.start() > pos:
            segments.append(Segment(line[pos: m.start()], base + style if style else base))
        after = _after_sgr(style, m.group(1))
        if after is None:
            return None
        style, pos = after, m.end()
    if pos < len(line):
        segments.append(Segment(line[pos:], base + style if style else base))
    plain = "".join(s.text for s in segments)
    if "\x1b" in plain or "\r" in plain:
        return None
    if len(_STRIPS) > 1024:  # as _LINES
        _STRIPS.clear()
    _STRIPS[key] = (Strip(segments), style)
    return _STRIPS[key]
