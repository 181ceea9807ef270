"""Join ncu's per-instruction samples to nvdisasm's inline chains and sum them per phase.

Each instruction's samples go to the phase of its outermost frame in the kernel's own source
file (place.py); an instruction whose chain never reaches that file, or whose statement no rule
matches, is `unattributed`. Shares are of sampled warp time, never seconds.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from sagetui.core.profile.listing import Function, Instruction
from sagetui.core.profile.ncu_csv import SassRow
from sagetui.core.profile.place import Placement, Placer
from sagetui.core.profile.rules import PHASES, UNATTRIBUTED

MIN_OPCODE_AGREEMENT = 0.9  # of rows whose opcode must equal the listing's at the same offset


class ListingMismatch(ValueError):
    """The listing's function is not the instructions ncu sampled."""


def share_and_error(n: int, total: int) -> tuple[float, float]:
    """n of total as a share, with its binomial standard error sqrt(p (1 - p) / total)."""
    if total <= 0:
        return 0.0, 0.0
    p = n / total
    return p, math.sqrt(p * (1 - p) / total)


@dataclass
class PhaseCounts:
    samples: int = 0
    executed: int = 0
    stalls: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class SampledLine:
    """A source line and the warp samples placed on it (blocks/profile.HotLine is the
    report's, with shares)."""

    file: str
    line: int
    phase: str
    samples: int
    statement: str
    code: str | None = None  # source.code_keys


@dataclass
class Attribution:
    function: str
    kernel_file: str | None
    line_info: bool
    total_samples: int
    phases: dict[str, PhaseCounts]  # every phase of PHASES and UNATTRIBUTED, in that order
    lines: list[SampledLine]  # by samples, most first
    rows_without_instruction: int = 0  # CSV rows at offsets the listing lacks

    def placed_share(self) -> float:
        return share_and_error(self.total_samples - self.phases[UNATTRIBUTED].samples,
                               self.total_samples)[0]


def opcode(text: str) -> str:
    """The mnemonic without predicate and modifiers: `@!P0 IMAD.WIDE.U32 R2, ...` -> IMAD."""
    words = text.replace("{", " ").split()
    words = [w for w in words if not w.startswith("@")]
    return words[0].split(".")[0] if words else ""


def choose_function(functions: dict[str, Function], rows: list[SassRow],
                    kernel: str) -> Function:
    """The listing's function holding `kernel` whose instructions are the sampled ones (a
    module holds one function per template instantiation: opcodes tell them apart)."""
    want = [opcode(r.text) for r in rows]
    best: tuple[float, Function] | None = None
    for f in functions.values():
        if kernel not in f.name:
            continue
        at = {i.offset: opcode(i.text) for i in f.instructions}
        agree = sum(at.get(r.offset) == w for r, w in zip(rows, want, strict=True)) / len(rows)
        if best is None or agree > best[0]:
            best = (agree, f)
    if best is None:
        names = ", ".join(sorted(functions)[:5]) or "none"
        raise ListingMismatch(f"no function named like {kernel} in the listing (it has: {names})")
    if best[0] < MIN_OPCODE_AGREEMENT:
        raise ListingMismatch(f"no function of {kernel} in the listing matches the sampled "
                              f"instructions (best {best[1].name}: {best[0]:.0%} of opcodes agree)")
    return best[1]


HOT_LINES = 10  # the (line, phase) pairs with the most samples a profile lists


def kernel_frame(insn: Instruction, kernel_file: str) -> int | None:
    """The line of the outermost frame in the kernel's file (by its last path part)."""
    for frame in reversed(insn.chain):
        if os.path.basename(frame.file) == kernel_file:
            return frame.line
    return None


def attribute(rows: list[SassRow], function: Function, kernel_file: str,
              placer: Placer | Callable[[int], Placement], hot_lines: int = HOT_LINES
              ) -> Attribution:
    place = placer.place if isinstance(placer, Placer) else placer
    by_offset = {i.offset: i for i in function.instructions}
    phases = {p: PhaseCounts() for p in (*PHASES, UNATTRIBUTED)}
    line_samples: Counter[tuple[int, str]] = Counter()
    statements: dict[int, str] = {}
    codes: dict[int, str] = {}
    missing = 0
    total = 0
    for r in rows:
        total += r.samples
        insn = by_offset.get(r.offset)
        line = kernel_frame(insn, kernel_file) if insn is not None else None
        missing += insn is None
        if line is None:
            phase = UNATTRIBUTED
        else:
            pl = place(line)
            phase = pl.phase
            if pl.statement is not None:
                statements.setdefault(line, pl.statement.text)
            if pl.code is not None:
                codes.setdefault(line, pl.code)
            line_samples[(line, phase)] += r.samples
        c = phases[phase]
        c.samples += r.samples
        c.executed += r.executed
        c.stalls.update(r.stalls)
    hot = [SampledLine(kernel_file, ln, ph, n, statements.get(ln, ""), codes.get(ln))
           for (ln, ph), n in line_samples.most_common(hot_lines) if n > 0]
    return Attribution(function=function.name, kernel_file=kernel_file,
                       line_info=function.has_line_info, total_samples=total, phases=phases,
                       lines=hot, rows_without_instruction=missing)
