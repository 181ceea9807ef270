"""Sweep axes from the command line: `1k..32k` (powers of two), `128,256,1000`, `1k` = 1024.

Every parse error is a ValueError whose text names the value and what was expected, so the
command line can print it as its one line.
"""

from __future__ import annotations

import re

MAX_POINTS = 64  # values per axis: a typo such as 1..1m would otherwise plan 21 points
_LEN = re.compile(r"^(?P<n>\d+)(?P<unit>[kKmM]?)$")
_UNITS = {"": 1, "k": 1024, "m": 1024 * 1024}


def parse_length(text: str) -> int:
    """`4096`, `4k` (4096) or `1m` (1048576); positive."""
    m = _LEN.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a length (use e.g. 1024, 1k, 32k)")
    n = int(m["n"]) * _UNITS[m["unit"].lower()]
    if n < 1:
        raise ValueError(f"{text!r}: a length is at least 1")
    return n


def parse_axis(text: str) -> list[int]:
    """A range `LO..HI` (LO, 2 LO, 4 LO ... up to HI) or a comma list; ascending, unique."""
    text = text.strip()
    if ".." in text:
        lo_s, _, hi_s = text.partition("..")
        lo, hi = parse_length(lo_s), parse_length(hi_s)
        if lo > hi:
            raise ValueError(f"{text!r}: the range runs from {lo} down to {hi}")
        values = []
        n = lo
        while n <= hi:
            values.append(n)
            n *= 2
        if values[-1] != hi:
            raise ValueError(f"{text!r}: {hi} is not {lo} times a power of two "
                             f"(the range doubles from {lo}: ... {values[-1]}, {values[-1] * 2})")
    else:
        items = [s for s in text.split(",")]
        if not text or any(not s.strip() for s in items):
            raise ValueError(f"{text!r}: expected a comma list of lengths or LO..HI")
        values = sorted({parse_length(s) for s in items})
    if len(values) > MAX_POINTS:
        raise ValueError(f"{text!r}: {len(values)} values, at most {MAX_POINTS}")
    return values


def parse_causal(text: str) -> list[bool]:
    """`off` (default), `on`, or `both` (off first)."""
    choices = {"off": [False], "on": [True], "both": [False, True]}
    if text not in choices:
        raise ValueError(f"{text!r}: use off, on or both")
    return choices[text]
