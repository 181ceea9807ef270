"""Turning a variant on or off and choosing the baseline, in what is shown and in a running
session (which applies both from its next round)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sagetui.core import events as ev
from sagetui.core.eventlog import LogLine
from sagetui.core.run.fold import apply

if TYPE_CHECKING:
    from sagetui.session.session import Session

from sagetui.tui.source import Source


def toggle_variant(data: Source, name: str, session: Session | None) -> LogLine:
    """Flip `name` on or off; the line to log."""
    on = data.enabled[name] = not data.is_enabled(name)
    state = "on" if on else "off"
    data.touch()
    if data.live and session is not None:
        session.set_enabled(name, on)
        return LogLine(f"variant {name} {state}: from the next round")
    return LogLine(f"variant {name} {state}" + (
        " (shown)" if not data.live and on else " (hidden)" if not data.live else ""))


def set_baseline(data: Source, name: str, session: Session | None) -> LogLine:
    """Make `name` the baseline (the caller recomputes what depends on it); the line to log.
    A running session takes it at its next round (its `baseline` event tells the model); the
    panels show it at once."""
    apply(data.model, ev.BaselineChanged(baseline=name))
    data.touch()
    if data.live and session is not None:
        session.set_baseline(name)
        return LogLine(f"baseline: {name} (verdicts from the next round)")
    return LogLine(f"baseline: {name}; speedups and verdicts recomputed")
