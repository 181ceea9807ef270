"""The Log tab: a LogLine (core/eventlog.py) as text, with its time and its detail lines."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import RichLog

from sagetui.core.eventlog import LogLine

STYLES = {"error": "bold red", "warning": "yellow", "information": ""}


def write_line(log: RichLog, line: LogLine) -> None:
    text = Text(time.strftime("%H:%M:%S "), style="dim")
    text.append(line.text, style=STYLES.get(line.severity, ""))
    log.write(text)
    for detail in line.detail:
        log.write(Text("    " + detail, style="dim"))
