"""The gates a CI job exits on (`sagetui compare --fail-if-slower PCT --fail-if-faster PCT`).

Each matched variant of B, C, ... against A's (and each variant at each matched sweep point)
is a Delta: its `faster %` (A p50 / p50 - 1, + = faster) and, where both runs have two rounds
or more, the unpaired verdict's 95 % interval (statistics/unpaired.py). A gate trips when:

    --fail-if-slower P    the whole interval lies below -P      (hi < -P)
    --fail-if-faster P    the whole interval lies above +P      (lo > +P)

so a difference must be larger than P with 95 % confidence, not merely look so in one run; a
noisy comparison whose interval reaches back within P does not trip. Without an interval (a
side with fewer than two rounds, or summaries without rounds) the p50s alone decide:
faster % < -P, or > +P. P is in the table's own unit, `faster %`: B taking twice as long as A
is -50 %.
"""

from __future__ import annotations

from collections.abc import Sequence

from sagetui.core.compare.table import Delta


def tripped(deltas: Sequence[Delta], *, slower: float | None = None,
            faster: float | None = None) -> list[str]:
    """One line per delta beyond a gate (none: every gate holds)."""
    out = []
    for d in deltas:
        iv = d.interval()
        if slower is not None and (iv[1] < -slower if iv else
                                   d.faster is not None and d.faster < -slower):
            out.append(f"slower than A by more than {slower:g} %: {d.describe()}")
        if faster is not None and (iv[0] > faster if iv else
                                   d.faster is not None and d.faster > faster):
            out.append(f"faster than A by more than {faster:g} %: {d.describe()}")
    return out
