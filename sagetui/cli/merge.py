"""`sagetui merge A.json B.json ... --json out.json`: one sweep report from its parts."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from sagetui.cli.errors import UsageError
from sagetui.cli.outputs import check_outputs, write_files
from sagetui.cli.reports import load_all
from sagetui.core.check.report import check_report
from sagetui.core.report.io import iter_report_json
from sagetui.core.sweep.merge import MergeError, merge


def cmd_merge(args: argparse.Namespace) -> int:
    """0: merged and every derived number checks; 1: merged with failed points or a check
    mismatch, or the report not written at --json (a file appeared there: beside it); 2: the
    files are not parts of one sweep."""
    check_outputs(args, ("json",))
    loaded = load_all(args.files)
    if loaded is None:
        return 2
    try:
        report = merge(loaded)
    except MergeError as exc:
        raise UsageError(f"merge: {exc}") from None
    written = write_files([(args.json, lambda: iter_report_json(report))], args,
                          Console(stderr=True, soft_wrap=True))
    for why in written.failed:
        print(f"sagetui merge: could not write {why}", file=sys.stderr)
    assert report.sweep is not None
    bad = check_report(report)
    for m in bad:
        print(f"{args.json}: {m}", file=sys.stderr)
    print(f"merged {len(report.sweep.points)} points from {len(loaded)} reports, "
          f"{report.status}")
    return 0 if report.status == "complete" and not bad and written.kept_all else 1
