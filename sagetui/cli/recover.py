"""`sagetui view --recover [N|list]`: the runs the recovery folder can reopen.

`list` prints them, newest first (file, when, status, rounds, variants); N opens the N-th of
that list; no N opens the newest that is not complete (an interrupted, failed or partial run:
a complete one was most likely exported already). Only files that load as reports are listed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from sagetui.cli.errors import UsageError, stdout_console
from sagetui.cli.run_options import recovery_dir
from sagetui.core.report.io import ReportError, load_report
from sagetui.core.report.model import Report

LIST = "list"
NEWEST = "newest"  # --recover without a value


@dataclass(frozen=True)
class Recoverable:
    path: Path
    mtime: float
    report: Report

    @property
    def complete(self) -> bool:
        return self.report.status == "complete"


def recoverable(folder: Path) -> tuple[list[Recoverable], int]:
    """(the reports in `folder`, newest first; how many JSON files there did not load)."""
    try:
        files = [p for p in folder.glob("*.json") if p.is_file()]
    except OSError:
        files = []
    out, bad = [], 0
    for p in files:
        try:
            out.append(Recoverable(p, p.stat().st_mtime, load_report(p)))
        except (ReportError, OSError):
            bad += 1
    out.sort(key=lambda r: r.mtime, reverse=True)
    return out, bad


def table(runs: list[Recoverable]) -> Table:
    t = Table(title="runs that `sagetui view --recover N` reopens", title_justify="left")
    for col in ("#", "file", "when", "status", "rounds", "variants"):  # a name folds, never cut
        t.add_column(col, justify="right" if col in ("#", "rounds") else "left",
                     overflow="fold" if col in ("file", "variants") else "ellipsis")
    for i, r in enumerate(runs, 1):
        when = _dt.datetime.fromtimestamp(r.mtime).strftime("%Y-%m-%d %H:%M:%S")
        names = ", ".join(v.name for v in r.report.variants or [])
        t.add_row(str(i), escape(r.path.name), when, r.report.status or "-",
                  str(r.report.rounds if r.report.rounds is not None else "-"), escape(names))
    return t


def print_list(args: argparse.Namespace) -> int:
    folder = recovery_dir(args)
    runs, bad = recoverable(folder)
    console = stdout_console()  # a pipe's is wide enough for the names
    if not runs:
        console.print(f"no recovery file in {escape(str(folder))}")
    else:
        console.print(table(runs))
        console.print(f"in {escape(str(folder))}" + (
            f"; {bad} JSON file{'s' * (bad != 1)} there could not be read as a report"
            if bad else ""))
    return 0


def chosen(args: argparse.Namespace) -> str:
    """The recovery file that `--recover [N]` opens, or a one-line usage error."""
    folder = recovery_dir(args)
    runs, _ = recoverable(folder)
    if not runs:
        raise UsageError(f"no recovery file in {folder}")
    if args.recover == NEWEST:
        open_ = next((r for r in runs if not r.complete), None)
        if open_ is None:
            raise UsageError(f"every run in {folder} is complete: `sagetui view --recover "
                             "list` lists them, `--recover N` opens one")
        return str(open_.path)
    try:
        n = int(args.recover)
    except ValueError:
        raise UsageError(f"--recover takes a number from `sagetui view --recover list` or "
                         f"'list', not {args.recover!r}") from None
    if not 1 <= n <= len(runs):
        raise UsageError(f"--recover {n}: there {'is' if len(runs) == 1 else 'are'} "
                         f"{len(runs)} run{'s' * (len(runs) != 1)} to reopen (1 is the newest)")
    return str(runs[n - 1].path)
