"""`nvdisasm -c -g -gi CUBIN`: per function, each instruction's offset, text and inline chain.

A block of `//## File "F", line L inlined at "G", line M` comments (one per frame, innermost
first, the last without "inlined at") states the source of the instructions after it, until the
next block. Functions start at `.text.NAME:` labels (or the `//----- .text.NAME -----` rulers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FRAME_LINE = re.compile(r"^\s*//##\s*File\s")
_FRAME = re.compile(r'"([^"]*)",\s*line\s+(\d+)')
_INSN = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
_FUNC = re.compile(r"^\s*(?://-+\s+)?\.text\.([^\s:]+)(?::|\s+-+)\s*$")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int


@dataclass(frozen=True)
class Instruction:
    offset: int
    text: str
    chain: tuple[Frame, ...]  # innermost first; empty without line information

    @property
    def outermost(self) -> Frame | None:
        return self.chain[-1] if self.chain else None


@dataclass
class Function:
    name: str  # as nvdisasm prints it (mangled)
    instructions: list[Instruction] = field(default_factory=list)

    @property
    def has_line_info(self) -> bool:
        return any(i.chain for i in self.instructions)


def parse_listing(text: str, only: str | None = None) -> dict[str, Function]:
    """Every function, or only the one named `only` (a module's listing runs to tens of MB)."""
    funcs: dict[str, Function] = {}
    cur: Function | None = None
    chain: list[Frame] = []
    block_done = False  # an instruction followed the last comment block: the next one restarts
    for line in text.splitlines():
        f = _FUNC.match(line)
        if f:
            keep = only is None or f.group(1) == only
            cur = funcs.setdefault(f.group(1), Function(f.group(1))) if keep else None
            chain, block_done = [], False
            continue
        if cur is None:
            continue
        if _FRAME_LINE.match(line):
            if block_done:
                chain, block_done = [], False
            # one hop per line in nvdisasm's output ("A inlined at B", then "B inlined at C");
            # several hops on one line are read alike: consecutive repeats are merged
            for file, num in _FRAME.findall(line):
                frame = Frame(file, int(num))
                if not chain or chain[-1] != frame:
                    chain.append(frame)
            continue
        i = _INSN.match(line)
        if i:
            if cur.instructions and int(i.group(1), 16) <= cur.instructions[-1].offset:
                continue  # nvdisasm repeats nothing, but a second pass over a section would
            cur.instructions.append(Instruction(int(i.group(1), 16), i.group(2), tuple(chain)))
            block_done = True
    return {n: f for n, f in funcs.items() if f.instructions}
