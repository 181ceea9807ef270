"""Mutation coverage of `sagetui check`: every derived leaf of every report in
sample_results/ changed one at a time, and every derived figure (and every member on the way to
one) deleted one at a time (core/check/mutation.py says how), and how many of those edits
`check` catches; the raw samples and the facts `check` takes as recorded
(core/check/recorded.py, the list `check --recorded` prints) are left alone.

    python benchmarks/check_mutation.py [FILES...] [--missed]

Prints, per file, per kind of report and overall: the changes and the deletions tried and how
many `check` caught (and of those, how many the report model refused at load, as `check` does:
exit 2), the share caught, and the leaves taken as recorded; --missed lists each edit that
passed. Exit 0 when every edit is caught.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from sagetui.core.check import mutation
from sagetui.core.check.report import audit
from sagetui.core.compare.facts import kind
from sagetui.core.report.model import Report

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_results").glob("*.json"))


def kind_of(report: Report) -> str:
    """The report's kind as the README counts them: a run (made elsewhere or by sagetui), a
    sweep (merged from several runners or parts, or not), a workload replay, a swap (its mode),
    a profile."""
    k = kind(report)
    if k == "run" and report.tool is None:
        return "run made elsewhere"
    if k == "sweep" and (report.environment or {}).get("runners"):
        return "merged sweep"
    if k == "swap" and report.swap is not None:
        return f"swap ({report.swap.mode})"
    if k == "profile" or (k == "run" and report.mainloop_profiles):
        return "profile"
    return k


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, default=SAMPLES)
    ap.add_argument("--missed", action="store_true", help="list every edit check missed")
    args = ap.parse_args(argv)
    # per kind: changes tried, caught; deletions tried, caught; files
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    t0 = time.monotonic()
    print(f"{'report':40} {'changes':>8} {'caught':>8} {'deletions':>9} {'caught':>8} "
          f"{'(at load)':>9} {'recorded':>8}")
    for path in args.files:
        data = json.loads(path.read_text())
        report = Report.model_validate(data)
        changed = mutation.run(data, mutation.mutations(data))
        deleted = mutation.run(data, mutation.deletions(data))
        k = per_kind[kind_of(report)]
        row = [changed.tried, changed.tried - len(changed.missed), deleted.tried,
               deleted.tried - len(deleted.missed), 1]
        for i, x in enumerate(row):
            k[i] += x
        print(f"{path.name:40} {row[0]:8,} {row[1]:8,} {row[2]:9,} {row[3]:8,} "
              f"{changed.refused + deleted.refused:9,} {len(audit(report).recorded):8,}")
        if args.missed:
            for m in changed.missed + deleted.missed:
                print(f"    missed: {m.path}: {m.old!r} -> {m.new!r}")
    print(f"\n{'kind (files)':40} {'changes':>8} {'caught':>8} {'deletions':>9} {'caught':>8} "
          f"{'share':>8}")
    total = [0, 0, 0, 0, 0]
    for name, k in sorted(per_kind.items()):
        total = [a + b for a, b in zip(total, k, strict=True)]
        print(_row(f"{name} ({k[4]})", k))
    print(_row("overall", total) + f"   ({time.monotonic() - t0:.0f} s)")
    return 0 if total[1] == total[0] and total[3] == total[2] else 1


def _row(name: str, k: list[int]) -> str:
    share = f"{(k[1] + k[3]) / (k[0] + k[2]):.2%}" if k[0] + k[2] else "-"
    return f"{name:40} {k[0]:8,} {k[1]:8,} {k[2]:9,} {k[3]:8,} {share:>8}"


if __name__ == "__main__":
    sys.exit(main())
