"""What a capture saves, from the command line: `--calls` (which of the program's attention
calls), `--max-bytes` (how many bytes at most).

`--calls` is a comma list whose parts add up (a union): call indices and ranges (`0,3,5-9`,
counting every call the program makes from 0), every Nth call (`every:4`: 0, 4, 8 ...) and a
module-path glob (`module:blocks.*.attn`, fnmatch's: `*` also matches dots). Each parse error
is a ValueError whose text names the part and the forms, the one line the CLI prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import translate

FORMS = "indices and ranges (0,3,5-9), every:N, module:GLOB, joined by commas"
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)(I?B)?$")


@dataclass(frozen=True)
class Selection:
    text: str | None  # as given; None: every call
    ranges: tuple[tuple[int, int], ...] = ()  # inclusive
    every: tuple[int, ...] = ()
    globs: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> Selection:
        if text is None:
            return cls(None)
        ranges: list[tuple[int, int]] = []
        every: list[int] = []
        globs: list[re.Pattern[str]] = []
        if not text.strip():
            raise ValueError(f"--calls {text!r} is empty: give {FORMS}")
        for part in (p.strip() for p in text.split(",")):
            kind, colon, arg = part.partition(":")
            if colon and kind == "every":
                if not arg.isdigit() or int(arg) < 1:
                    raise ValueError(f"--calls {part!r}: every:N takes a whole number >= 1")
                every.append(int(arg))
            elif colon and kind == "module":
                if not arg:
                    raise ValueError(f"--calls {part!r}: module:GLOB needs a glob "
                                     "(module:blocks.*.attn)")
                globs.append(re.compile(translate(arg)))
            elif m := _RANGE.match(part):
                lo, hi = int(m[1]), int(m[2] or m[1])
                if lo > hi:
                    raise ValueError(f"--calls {part!r}: the range runs down from {lo} to {hi}")
                ranges.append((lo, hi))
            else:
                raise ValueError(f"--calls {part!r} is not a selection: give {FORMS}")
        return cls(text, tuple(ranges), tuple(every), tuple(globs))

    def matches(self, index: int, module: str | None) -> bool:
        """Whether call `index`, made in `module` (None: outside every module), is selected."""
        return self.matches_index(index) or self.matches_module(module)

    def matches_index(self, index: int) -> bool:
        """Whether call `index` is selected by its index (every call, a range, every:N)."""
        if self.text is None:
            return True
        for lo, hi in self.ranges:  # loops, not any(): this runs at every call of a program
            if lo <= index <= hi:
                return True
        for n in self.every:
            if index % n == 0:
                return True
        return False

    def matches_module(self, module: str | None) -> bool:
        """Whether a call made in `module` is selected by a module:GLOB."""
        if module is not None:
            for glob in self.globs:
                if glob.match(module):
                    return True
        return False


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """`--max-bytes`: 1000000, 500M, 2G, 1.5GiB (K, M, G, T: powers of 1024); at least 1."""
    m = _SIZE.match(text.strip().upper())
    if not m:
        raise ValueError(f"{text!r} is not a size (use e.g. 500M, 2G, 1000000)")
    n = int(float(m[1]) * _UNITS[m[2]])
    if n < 1:
        raise ValueError(f"{text!r}: a size is at least one byte")
    return n
