"""Mutation coverage of `sagetui check` (issue 28): every derived leaf of every report in
sample_results/ changed one at a time (core/report/mutation.py says how), and how many of
those changes `check` catches; the raw samples and the facts `check` takes as recorded
(core/check/recorded.py, the list `check --recorded` prints) are left alone.

    python benchmarks/check_mutation.py [FILES...] [--missed]

Prints, per file and overall: mutations, caught (and of those, how many the report model
refused at load, as `check` does: exit 2), the share caught, and the leaves taken as recorded;
--missed lists each change that passed. Exit 0 when every change is caught.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from sagetui.core.check import mutation
from sagetui.core.check.report import audit
from sagetui.core.report.model import Report

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_results").glob("*.json"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, default=SAMPLES)
    ap.add_argument("--missed", action="store_true", help="list every change check missed")
    args = ap.parse_args(argv)
    total = caught = refused = 0
    t0 = time.monotonic()
    print(f"{'report':44} {'mutations':>9} {'caught':>7} {'(at load)':>9} {'share':>8} "
          f"{'recorded':>8}")
    for path in args.files:
        data = json.loads(path.read_text())
        out = mutation.run(data)
        n, got = out.tried, out.tried - len(out.missed)
        rec = len(audit(Report.model_validate(data)).recorded)
        total, caught, refused = total + n, caught + got, refused + out.refused
        share = f"{got / n:.1%}" if n else "-"
        print(f"{path.name:44} {n:9,} {got:7,} {out.refused:9,} {share:>8} {rec:8,}")
        if args.missed:
            for m in out.missed:
                print(f"    missed: {m.path}: {m.old!r} -> {m.new!r}")
    share = f"{caught / total:.2%}" if total else "-"
    print(f"{'overall':44} {total:9,} {caught:7,} {refused:9,} {share:>8}   "
          f"({time.monotonic() - t0:.0f} s)")
    return 0 if caught == total else 1


if __name__ == "__main__":
    sys.exit(main())
