"""Turning a variant on or off and choosing the baseline, in what is shown and in a running
session (which applies both from its next round)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sagetui.core.eventlog import LogLine

if TYPE_CHECKING:
    from sagetui.session.session import Session

from sagetui.tui.run_data import RunData


def toggle_variant(data: RunData, name: str, session: Session | None) -> LogLine:
    """Flip `name` on or off; the line to log."""
    v = data.variants[name]
    v.enabled = not v.enabled
    state = "on" if v.enabled else "off"
    data.touch()
    if data.live and session is not None:
        session.set_enabled(name, v.enabled)
        return LogLine(f"variant {name} {state}: from the next round")
    return LogLine(f"variant {name} {state}" + (
        " (shown)" if not data.live and v.enabled else " (hidden)" if not data.live else ""))


def set_baseline(data: RunData, name: str, session: Session | None) -> LogLine:
    """Make `name` the baseline (the caller recomputes what depends on it); the line to log."""
    data.baseline = name
    data.touch()
    if data.live and session is not None:
        session.set_baseline(name)
        return LogLine(f"baseline: {name} (verdicts from the next round)")
    return LogLine(f"baseline: {name}; speedups and verdicts recomputed")
