"""`sagetui check`, `compare` and `schema`: reports on disk, never any code from them."""

from __future__ import annotations

import argparse
import json
import sys

from rich.table import Table
from rich.text import Text

from sagetui.core.check import check_report
from sagetui.core.export import paired_text, threshold_text
from sagetui.core.io import ReportError, load_report, one_line
from sagetui.core.report import Report

from .errors import stdout_console


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
    """Per report, variant and phase: p50, p90, speedup, verdict."""
    t = Table(title="sagetui compare")
    for col in ("report", "variant", "phase", "p50 ms", "p90 ms", "p50 speedup %",
                "verdict: paired % [95% CI]", "SAME threshold"):
        t.add_column(col, justify="right" if col.endswith(("ms", "%")) else "left")
    for path, r in reports:
        label = _plain(path.rsplit("/", 1)[-1])
        for v in r.variants or []:
            vd = v.verdict.model_dump() if v.verdict else None
            verdict = paired_text(vd)
            name = _plain(v.name)
            if v.timing:
                t.add_row(label, name, "total", f"{v.timing.p50_s * 1e3:.3f}",
                          f"{v.timing.p90_s * 1e3:.3f}",
                          "-" if v.speedup_vs_baseline_percent is None
                          else f"{v.speedup_vs_baseline_percent:+.3f}", verdict,
                          _plain(threshold_text(vd)) if vd else "")
            for phase, s in (v.phase_timings or {}).items():
                t.add_row(label, name, _plain(phase), f"{s.p50_s * 1e3:.3f}",
                          f"{s.p90_s * 1e3:.3f}", "", "", "")
        if not r.variants or not any(v.phase_timings for v in r.variants):
            for phase, s in (r.phase_timings or {}).items():
                t.add_row(label, "-", _plain(phase), f"{s.p50_s * 1e3:.3f}",
                          f"{s.p90_s * 1e3:.3f}", "", "", "")
        t.add_section()
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
