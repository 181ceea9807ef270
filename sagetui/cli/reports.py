"""`sagetui check`, `compare` and `schema`: reports on disk, never any code from them."""

from __future__ import annotations

import argparse
import json
import sys

from rich.table import Table
from rich.text import Text

from sagetui.cli.errors import stdout_console
from sagetui.core.format import ms, pct
from sagetui.core.report.check import check_report
from sagetui.core.report.io import ReportError, load_report, one_line
from sagetui.core.report.model import Report
from sagetui.tui.compare_rows import (
    MATCH_NOTE,
    SIGN_NOTE,
    compare_rows,
    faster_than_a,
    legend,
    letter,
    with_verdicts,
)
from sagetui.tui.source import saved_source


def _plain(text: str) -> Text:
    """A string from a report, shown as it is: no markup, no terminal control characters."""
    return Text(one_line(text))


def cmd_check(args: argparse.Namespace) -> int:
    """0: all pass; 1: a derived number disagrees; 2: a file is not a readable report."""
    worst = 0
    for path in args.files:
        try:
            report = load_report(path)
        except ReportError as exc:
            print(f"{exc}", file=sys.stderr)
            worst = 2
            continue
        mismatches = check_report(report)
        if mismatches:
            for m in mismatches:
                print(one_line(f"{path}: {m}"))
            worst = max(worst, 1)
        else:
            print(f"{path}: ok")
    return worst


def load_all(paths: list[str]) -> list[tuple[str, Report]] | None:
    out = []
    for p in paths:
        try:
            out.append((p, load_report(p)))
        except ReportError as exc:
            print(f"{exc}", file=sys.stderr)
            return None
    return out


def compare_table(reports: list[tuple[str, Report]]) -> Table:
    """The console's Compare tab on stdout: the same rows (tui/compare_rows.py), each report's
    p50, p90, how much faster than A, speedup over its own baseline and verdict (derived from
    its round p50s when it recorded none, marked *)."""
    sources = [with_verdicts(saved_source(r, path.rsplit("/", 1)[-1], path=path))
               for path, r in reports]
    many = len(sources) > 1
    notes = [legend([one_line(s.label) for s in sources])] + ([SIGN_NOTE, MATCH_NOTE]
                                                              if many else [])
    t = Table(title="sagetui compare", caption=" · ".join(notes))
    rows = compare_rows(sources)
    cos = any(c is not None and c.cos for r in rows for c in r.cells)  # accuracy, where kept
    cols = ["variant", "phase"] + (["matched"] if many else [])
    for i in range(len(sources)):
        x = letter(i)
        cols += [f"{x} p50 ms", f"{x} p90 ms"] + ([f"{x} faster %"] if i else []) + [
            f"{x} p50 speedup %", f"{x} verdict: paired % [95% CI]"] + (
            [f"{x} cos sim"] if cos else [])
    for col in cols:
        t.add_column(col, justify="right" if ("ms" in col or "%" in col) else "left")
    for row in rows:
        cells = [_plain(row.label()), _plain(row.phase)] + ([row.matched] if many else [])
        for i, cell in enumerate(row.cells):
            cells += [ms(cell.p50 if cell else None), ms(cell.p90 if cell else None)]
            if i:
                cells.append(pct(faster_than_a(row, i)))
            cells += [pct(cell.speedup, 3) if cell and row.total else "",
                      _plain(cell.verdict) if cell else ""] + (
                [cell.cos if cell else ""] if cos else [])
        t.add_row(*cells)
    return t


def cmd_compare(args: argparse.Namespace) -> int:
    reports = load_all(args.files)
    if reports is None:
        return 2
    stdout_console().print(compare_table(reports))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(Report.model_json_schema(), indent=2))
    return 0
