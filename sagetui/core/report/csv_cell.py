"""Text from a report in a CSV cell (export.py, sweep_export.py)."""

from __future__ import annotations


def inert_cell(text: str) -> str:
    """A name from a report, made inert for spreadsheets: a leading =, +, - or @ would be read
    as a formula (CSV injection), so it gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text
