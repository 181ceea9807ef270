"""The Log tab: a LogLine (core/eventlog.py) as text, with its time and its detail lines."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import RichLog

from sagetui.core.eventlog import LogLine, fault_line
from sagetui.tui.source import Source

STYLES = {"error": "bold red", "warning": "yellow", "information": ""}


def write_line(log: RichLog, line: LogLine) -> None:
    text = Text(time.strftime("%H:%M:%S "), style="dim")
    text.append(line.text, style=STYLES.get(line.severity, ""))
    log.write(text)
    for detail in line.detail:
        log.write(Text("    " + detail, style="dim"))


def opened_lines(data: Source) -> list[LogLine]:
    """The Log's lines for a report just opened: what it holds, and each of its faults."""
    n = len(data.variants)
    lines = [LogLine(f"opened {data.path}: {data.kind()}, {n} variant{'s' * (n != 1)}, "
                     f"{data.rounds_done} rounds, {len(data.model.tail_rows)} tail rows")]
    for f in data.model.faults:
        lines.append(fault_line(f.kind, f.message,
                                {"variant": f.variant, "phase": f.phase, "round": f.round},
                                list(f.stderr_tail)))
    return lines
