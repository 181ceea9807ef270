"""`sagetui check`, `compare` and `schema`: reports on disk, never any code from them."""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Group
from rich.text import Text

from sagetui.cli.errors import stdout_console
from sagetui.core.check.report import Audit, audit
from sagetui.core.compare.comparison import Comparison, compare_reports
from sagetui.core.compare.facts import NotComparable
from sagetui.core.compare.gate import tripped
from sagetui.core.report.io import ReportError, load_report, one_line
from sagetui.core.report.model import Report
from sagetui.tui.fitted_tables import comparison_table


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
        a = audit(report)
        if a.mismatches:
            for m in a.mismatches:
                print(one_line(f"{path}: {m}"))
            worst = max(worst, 1)
        else:
            print(f"{path}: ok: {audit_counts(a)}")
        if args.recorded:
            for r in a.recorded:
                print(one_line(f"{path}: taken as recorded: {r.path} ({r.why})"))
    return worst


def audit_counts(a: Audit) -> str:
    """"1,234 figures recomputed from 5,678 raw samples, 56 taken as recorded"."""
    raw = f" from {a.raw_samples:,} raw samples" if a.raw_samples else ""
    return f"{a.recomputed:,} figures recomputed{raw}, {len(a.recorded):,} taken as recorded"


def load_all(paths: list[str]) -> list[tuple[str, Report]] | None:
    out = []
    for p in paths:
        try:
            out.append((p, load_report(p)))
        except ReportError as exc:
            print(f"{exc}", file=sys.stderr)
            return None
    return out


def comparison(reports: list[tuple[str, Report]]) -> Comparison:
    """core/compare's comparison of reports read from these paths (NotComparable: of
    different kinds)."""
    return compare_reports([(path.rsplit("/", 1)[-1], r) for path, r in reports])


def compare_table(reports: list[tuple[str, Report]], width: int | None = None) -> Group:
    """The console's Compare tab on stdout: the same columns and cells (core/compare), each
    report's p50, p90, how much faster than A and its verdict against A, speedup over its own
    baseline and verdict (derived from its round medians when it recorded none, marked *)."""
    return comparison_table(comparison(reports), width)


def print_profile_diffs(reports: list[tuple[str, Report]]) -> None:
    """Each profile of B, C, ... against A's (core/compare/profiles.py): the stall reasons that
    changed and the hot lines, matched by their code, as `sagetui profile` prints them."""
    from sagetui.core.compare.profiles import profile_diffs
    from sagetui.core.profile.diff_view import bar_line, sections, text_lines

    diffs = profile_diffs(reports)
    if not diffs:
        return
    print(f"profile diff ({bar_line()})")  # the diff's own bar: its defaults
    for d in diffs:
        for s in sections(d)[1:]:  # its phases are the table's above
            print("\n".join(text_lines(s)))


def cmd_compare(args: argparse.Namespace) -> int:
    """0: compared (and every --fail-if gate holds); 1: a gate tripped (core/compare/gate.py);
    2: a file is not a readable report, the reports are not comparable (core/compare/facts.py's
    rule; --force compares what the rule refuses, but never reports of different kinds), or a
    gate has nothing to look at."""
    reports = load_all(args.files)
    if reports is None:
        return 2
    try:
        c = comparison(reports)
    except NotComparable as exc:
        print(one_line(f"sagetui compare: {exc}"), file=sys.stderr)
        return 2
    if c.refusals and not args.force:
        print(one_line(f"sagetui compare: not comparable: {c.refusal_line()} (--force "
                       "compares them anyway)"), file=sys.stderr)
        return 2
    if c.refusals:
        print(one_line(f"sagetui compare: --force: comparing although {c.refusal_line()}"),
              file=sys.stderr)
    gates = {"slower": args.fail_if_slower, "faster": args.fail_if_faster}
    asked = [f"--fail-if-{k}" for k, v in gates.items() if v is not None]
    if asked and not c.deltas:
        print(f"sagetui compare: {' and '.join(asked)}: nothing to gate on "
              f"({NOTHING_TO_GATE[c.kind]})", file=sys.stderr)
        return 2
    console = stdout_console()
    console.print(comparison_table(c, console.width))
    if c.kind == "profile":  # and the matched diff the Compare tab shows: lines, stalls
        print_profile_diffs(reports)
    for line in c.differences:  # what differs and was compared: each on a line of its own
        print(one_line(f"differs: {line}"))
    failed = tripped(c.deltas, **gates)
    for line in failed:
        print(one_line(f"sagetui compare: {line}"), file=sys.stderr)
    return 1 if failed else 0


NOTHING_TO_GATE = {
    "run": "no variant of B, C, ... has a p50 matched with one of A's",
    "sweep": "no variant at any point of B, C, ... is matched with one of A's",
    "workload": "no variant of B, C, ... has a total over every call (as A's) matched with "
                "one of A's",
    "profile": "profiles hold shares of sampled warp time, not latencies",
    "swap": "a swap's steps are compared arm by arm; no gate reads them yet"}


def cmd_schema(args: argparse.Namespace) -> int:
    """`sagetui schema [report|capture]`: the JSON Schema kept beside each model (schema.json
    in core/report/ and core/capture/; a test checks each is the generated one)."""
    if getattr(args, "what", "report") == "capture":
        from sagetui.core.capture.manifest import Manifest

        print(json.dumps(Manifest.model_json_schema(), indent=2))
    else:
        print(json.dumps(Report.model_json_schema(), indent=2))
    return 0
