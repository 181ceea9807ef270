"""`sagetui merge A.json B.json ... --json out.json`: one sweep report from its parts."""

from __future__ import annotations

import argparse
import sys

from sagetui.cli.errors import UsageError
from sagetui.cli.options import check_outputs
from sagetui.cli.reports import load_all
from sagetui.core.report.check import check_report
from sagetui.core.report.io import save_report
from sagetui.core.sweep.merge import MergeError, merge


def cmd_merge(args: argparse.Namespace) -> int:
    """0: merged and every derived number checks; 1: merged with failed points or a check
    mismatch; 2: the files are not parts of one sweep."""
    check_outputs(args, ("json",))
    loaded = load_all(args.files)
    if loaded is None:
        return 2
    try:
        report = merge(loaded)
    except MergeError as exc:
        raise UsageError(f"merge: {exc}") from None
    save_report(report, args.json, overwrite=True)
    assert report.sweep is not None
    bad = check_report(report)
    for m in bad:
        print(f"{args.json}: {m}", file=sys.stderr)
    print(f"wrote {args.json}: {len(report.sweep.points)} points from {len(loaded)} reports, "
          f"{report.status}")
    return 0 if report.status == "complete" and not bad else 1
