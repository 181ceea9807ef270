"""Text from a report in an export's cell: CSV (export.py, sweep/export.py) and Markdown."""

from __future__ import annotations


def markdown_cell(text: str) -> str:
    """Text in a Markdown table's cell: a `|` (max |Δ|, a name) would end the cell, a line
    break the row; a backslash escapes the one, a space stands for the other."""
    return " ".join(text.replace("\\", "\\\\").replace("|", "\\|").splitlines())


def markdown_row(cells: tuple[str, ...] | list[str]) -> str:
    """A Markdown table's row of these cells, each escaped (markdown_cell)."""
    return "| " + " | ".join(markdown_cell(c) for c in cells) + " |"


def inert_cell(text: str) -> str:
    """A name from a report, made inert for spreadsheets: a leading =, +, - or @ would be read
    as a formula (CSV injection), so it gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text
