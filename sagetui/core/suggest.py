""""Did you mean" for a name the user typed: the closest known names (difflib), as a clause
to end a one-line refusal with."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_names(word: str, known: Iterable[str], n: int = 2) -> list[str]:
    """The known names closest to `word` (difflib's ratio, cutoff 0.6), the closest first;
    compared without case, so `Reference` finds `reference`."""
    names = list(known)
    by_lower = {k.lower(): k for k in names}
    low = word.lower()
    # a part of one name (`sm89` for `sage2-sm89`) is as good a hint as a near spelling
    parts = [k for k in names if len(low) >= 3 and low in k.lower()] if low else []
    close = [by_lower[m] for m in difflib.get_close_matches(low, by_lower, n=n, cutoff=0.6)]
    if len(close) > 1:  # a runner-up far below the best is noise (--varient: not --affinity)
        best = _ratio(low, close[0])
        close = [c for c in close if _ratio(low, c) >= best - RUNNER_UP]
    return list(dict.fromkeys(parts + close))[:n]


RUNNER_UP = 0.15  # how far below the closest name's ratio a second one may be offered


def _ratio(word: str, name: str) -> float:
    return difflib.SequenceMatcher(None, word, name.lower()).ratio()


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """'did you mean sage2-sm90?' (or 'sage2-sm90 or sage2-sm80?'), or '' when nothing is
    close."""
    found = close_names(word, known)
    return f"did you mean {' or '.join(found)}?" if found else ""
