"""Place a line of the kernel's source in a phase, by the rules of its family (rules.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sagetui.core.profile.kernel_source import SourceIndex, Statement, code_keys
from sagetui.core.profile.rules import UNATTRIBUTED, Family, Rule


class KernelNotInSource(ValueError):
    """The family's kernel function is not defined in the given source."""


@dataclass(frozen=True)
class Placement:
    phase: str
    statement: Statement | None
    rule: str  # the rule's pattern, or why none applied
    code: str | None = None  # the statement's code key (source.code_keys), inside the body


class Placer:
    """Every statement of one kernel's body, placed once; lines are then looked up."""

    def __init__(self, family: Family, index: SourceIndex) -> None:
        body = index.function_body(family.kernel)
        if body is None:
            raise KernelNotInSource(f"no __global__ {family.kernel} in the source given for it")
        self.family, self.index, self.body = family, index, body
        loop = index.first_line(re.compile(family.loop), body)
        epilogue = index.first_line(re.compile(family.epilogue), body)
        stmts = [s for s in index.statements if body[0] <= s.first <= body[1]]
        rules = family.compiled()
        codes = code_keys(stmts)

        def region(s: Statement) -> str:
            if epilogue is not None and s.first >= epilogue:
                return "epilogue"
            return "prologue" if loop is not None and s.first < loop else "loop"

        first: list[tuple[Rule | None, str]] = []
        for s in stmts:
            r = next((r for r, pat in rules if r.region in ("any", region(s))
                      and pat.search(s.text)), None)
            first.append((r, r.phase if r else UNATTRIBUTED))
        placed: dict[int, Placement] = {}
        for i, (s, (r, phase)) in enumerate(zip(stmts, first, strict=True)):
            if r is not None and r.nearest:
                phase = _nearest(first, i, r)
            elif r is not None and r.follow:
                phase = next((ph for rr, ph in first[i + 1:] if rr is not None
                              and not rr.follow and not rr.nearest), UNATTRIBUTED)
            placed[s.first] = Placement(phase, s, r.pattern if r else "no rule matched",
                                        codes[s.first])
        self._placed = placed

    def place(self, line: int) -> Placement:
        s = self.index.statement_at(line)
        if s is None or not self.body[0] <= s.first <= self.body[1]:
            return Placement(UNATTRIBUTED, s, "outside the kernel's body")
        return self._placed.get(s.first, Placement(UNATTRIBUTED, s, "no rule matched"))


def _nearest(first: list[tuple[Rule | None, str]], i: int, rule: Rule) -> str:
    """The phase of the closest statement in the rule's direction placed by a direct rule in
    one of its `nearest` phases."""
    j = i + rule.direction
    while 0 <= j < len(first):
        r, phase = first[j]
        if r is not None and not r.nearest and not r.follow and phase in rule.nearest:
            return phase
        j += rule.direction
    return UNATTRIBUTED
