"""Which variant of one report pairs with which of another: by name, then baseline with
baseline, then the rest in order. One rule for run reports, a sweep's points and profiles, and
each pair says how it was made (the `matched` column)."""

from __future__ import annotations

from collections.abc import Sequence

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def letter(i: int) -> str:
    """Report i's letter: A is the first, the one every other is compared with."""
    return LETTERS[i % 26]


def legend(labels: Sequence[str]) -> str:
    return "  ".join(f"{letter(i)} = {name}" for i, name in enumerate(labels))


def match(a: Sequence[str], a_base: str | None, b: Sequence[str],
          b_base: str | None) -> dict[str, tuple[str, str]]:
    """b's name -> (a's name it pairs with, how: "name", "baseline" or "position")."""
    out = {n: (n, "name") for n in b if n in a}
    free_a = [n for n in a if n not in out]
    free_b = [n for n in b if n not in out]
    if a_base is not None and b_base is not None and a_base in free_a and b_base in free_b:
        out[b_base] = (a_base, "baseline")
        free_a.remove(a_base)
        free_b.remove(b_base)
    for x, y in zip(free_b, free_a, strict=False):
        out[x] = (y, "position")
    return out
