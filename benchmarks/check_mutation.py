"""Mutation coverage of `sagetui check`: every derived leaf of every report in
sample_results/ changed one at a time, and every derived figure (and every member on the way to
one) deleted one at a time (core/check/mutation.py says how), and how many of those edits
`check` catches; the raw samples and the facts `check` takes as recorded
(core/check/recorded.py, the list `check --recorded` prints) are left alone.

    python benchmarks/check_mutation.py [FILES...] [--missed]

Prints, per file, per kind of report and overall: edits, caught (and of those, how many the
report model refused at load, as `check` does: exit 2), the share caught, and the leaves taken
as recorded; --missed lists each edit that passed. Exit 0 when every edit is caught.
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
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # edits, caught, files
    total = caught = refused = 0
    t0 = time.monotonic()
    print(f"{'report':44} {'edits':>7} {'caught':>7} {'(at load)':>9} {'share':>8} "
          f"{'recorded':>8}")
    for path in args.files:
        data = json.loads(path.read_text())
        report = Report.model_validate(data)
        out = mutation.run(data, mutation.mutations(data) + mutation.deletions(data))
        n, got = out.tried, out.tried - len(out.missed)
        rec = len(audit(report).recorded)
        total, caught, refused = total + n, caught + got, refused + out.refused
        k = per_kind[kind_of(report)]
        k[0], k[1], k[2] = k[0] + n, k[1] + got, k[2] + 1
        share = f"{got / n:.1%}" if n else "-"
        print(f"{path.name:44} {n:7,} {got:7,} {out.refused:9,} {share:>8} {rec:8,}")
        if args.missed:
            for m in out.missed:
                print(f"    missed: {m.path}: {m.old!r} -> {m.new!r}")
    print()
    for name, (n, got, files) in sorted(per_kind.items()):
        share = f"{got / n:.2%}" if n else "-"
        print(f"{name + f' ({files} file' + ('s' if files > 1 else '') + ')':44} {n:7,} "
              f"{got:7,} {'':9} {share:>8}")
    share = f"{caught / total:.2%}" if total else "-"
    print(f"{'overall':44} {total:7,} {caught:7,} {refused:9,} {share:>8}   "
          f"({time.monotonic() - t0:.0f} s)")
    return 0 if caught == total else 1


if __name__ == "__main__":
    sys.exit(main())
