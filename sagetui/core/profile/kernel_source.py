"""A kernel source file as statements: which statement a recorded line falls in, and where a
kernel's body begins and ends. Attribution reads function names from here, not line numbers,
so a source whose lines moved keeps its breakdown."""

from __future__ import annotations

import bisect
import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Statement:
    first: int  # 1-based lines
    last: int
    text: str  # comments removed, whitespace collapsed


def strip_comments(text: str) -> str:
    """Comments, string literals and preprocessor lines blanked; line breaks kept."""
    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith(("//", "/*")):
            return re.sub(r"[^\n]", " ", s)
        return '""' + "\n" * s.count("\n") if s.startswith('"') else s
    text = re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.S)
    return re.sub(r"(?m)^[ \t]*#[^\n]*", "", text)


class SourceIndex:
    def __init__(self, text: str) -> None:
        self.code = strip_comments(text)
        self.statements = _split(self.code)
        self._lasts = [s.last for s in self.statements]

    def statement_at(self, line: int) -> Statement | None:
        i = bisect.bisect_left(self._lasts, line)
        if i < len(self.statements) and self.statements[i].first <= line:
            return self.statements[i]
        return None

    def function_body(self, name: str) -> tuple[int, int] | None:
        """Lines of the body of the `__global__` function `name` (its braces), or None."""
        m = re.search(r"__global__[^;{]*?\b" + re.escape(name) + r"\s*\(", self.code)
        if not m:
            return None
        i = _match(self.code, m.end() - 1, "(", ")")
        if i is None:
            return None
        brace = self.code.find("{", i)
        end = _match(self.code, brace, "{", "}") if brace >= 0 else None
        if end is None:
            return None
        return self.code.count("\n", 0, brace) + 1, self.code.count("\n", 0, end) + 1

    def first_line(self, pattern: re.Pattern[str], span: tuple[int, int]) -> int | None:
        """The first line of the first statement inside `span` whose text matches."""
        return next((s.first for s in self.statements
                     if span[0] <= s.first <= span[1] and pattern.search(s.text)), None)


_KEYWORDS = {"for", "if", "while", "switch", "return", "sizeof", "static_cast",
             "reinterpret_cast", "else"}


def called_name(text: str) -> str | None:
    """The first function a statement calls (`compute_int_qk` of `compute_int_qk<...>(...)`),
    or a loop's or branch's keyword: a report names lines by this, never by their text."""
    head = re.match(r"\s*(for|if|while|else)\b", text)
    if head:
        return head.group(1)
    for m in re.finditer(r"([A-Za-z_][\w:]*)\s*(?:<[^;(){}]*>)?\s*\(", text):
        if m.group(1).split("::")[-1] not in _KEYWORDS:
            return m.group(1)
    return None


def code_keys(statements: list[Statement]) -> dict[int, str]:
    """Each statement's code key by its first line: the first 12 hex digits of the sha256 of
    its text, with `#k` for the k-th statement of the same text (two `__syncthreads();`). A
    build whose lines moved keeps its keys; a report holds the key, never the text."""
    seen: Counter[str] = Counter()
    out: dict[int, str] = {}
    for s in statements:
        digest = hashlib.sha256(s.text.encode()).hexdigest()[:12]
        seen[digest] += 1
        out[s.first] = digest if seen[digest] == 1 else f"{digest}#{seen[digest]}"
    return out


def _match(code: str, start: int, open_: str, close: str) -> int | None:
    depth = 0
    for i in range(start, len(code)):
        c = code[i]
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
    return None


def _split(code: str) -> list[Statement]:
    """Statements end at `;`, `{` or `}` outside parentheses and brackets; a `for (...)`
    header or an `if (...)` condition before its `{` is one statement."""
    out: list[Statement] = []
    line, depth, first = 1, 0, 0
    buf: list[str] = []
    for c in code:
        if c == "\n":
            line += 1
        if c in "([":
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
        if not buf and c.isspace():
            continue
        if not buf:
            first = line
        buf.append(c)
        if depth == 0 and c in ";{}":
            text = " ".join("".join(buf).split())
            if text not in ("{", "}"):
                out.append(Statement(first, line, text))
            buf = []
    return out


def resolve_source(recorded: str, source_dirs: list[str]) -> Path | None:
    """The file -lineinfo recorded, where it is, or under one of `source_dirs`: first by the
    longest tail of its path (csrc/qattn/x.cuh), then by its name anywhere below."""
    p = Path(recorded)
    if p.is_file():
        return p
    parts = p.parts[1:] if p.is_absolute() else p.parts
    for d in map(Path, source_dirs):
        for i in range(len(parts)):
            cand = d.joinpath(*parts[i:])
            if cand.is_file():
                return cand
        found = sorted(d.rglob(p.name)) if d.is_dir() else []
        if found:
            return found[0]
    return None
