"""Reading and writing reports: one clear line for every way a file can be wrong, and writes
that never leave a half-written file behind (core/file_writes.py).

Opening a report never runs code: it is JSON parsed by the standard library and validated by
the report model; nothing in it is imported, unpickled, evaluated or loaded.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sagetui.core.file_writes import atomic_write_text
from sagetui.core.report.document import iter_json_document
from sagetui.core.report.foreign import capture_hint, foreign_kind
from sagetui.core.report.model import Report

MAX_REPORT_BYTES = 512 * 1024 * 1024  # raw samples of long runs fit; a runaway file does not


class ReportError(Exception):
    """A report that cannot be read; str() is the one line to show."""

    def __init__(self, path: str | os.PathLike, where: str, problem: str) -> None:
        self.path, self.where, self.problem = str(path), where, problem
        line = f"{path}: {where}: {problem}" if where else f"{path}: {problem}"
        super().__init__(one_line(line))


def one_line(text: str) -> str:
    """Newlines and terminal control characters escaped: the message stays one safe line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def json_path(loc: tuple[Any, ...]) -> str:
    """`$.variants[0].timing.p50_s`; a key that is not a plain name is quoted as JSON (ASCII,
    control characters escaped), so that a crafted key can neither break the one-line message
    nor send escape sequences to the terminal."""
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and _PLAIN_KEY.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part)[:80])}]"
    return out


class _Bad:
    """A number JSON does not allow (NaN, Infinity) or Python cannot hold as a finite float,
    left in the parsed tree so that its JSON path can be named."""

    def __init__(self, what: str) -> None:
        self.what = what


def _parse_float(text: str) -> float | _Bad:
    x = float(text)
    return x if math.isfinite(x) else _Bad(f"{text[:40]} overflows a 64-bit float")


def _parse_int(text: str) -> int | _Bad:
    try:
        return int(text)
    except ValueError:  # over Python's 4300-digit limit
        return _Bad(f"an integer of {len(text)} digits is too long")


def _find_bad(data: Any) -> tuple[str, str] | None:
    """(JSON path, what) of the first _Bad, or non-finite float, in document order; iterative
    (no recursion)."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while stack:
        loc, node = stack.pop()
        if isinstance(node, _Bad):
            return json_path(loc), node.what
        if isinstance(node, float) and not math.isfinite(node):
            return json_path(loc), f"{node} is not a number JSON allows"
        if isinstance(node, dict):
            stack.extend((loc + (k,), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((loc + (i,), v) for i, v in reversed(list(enumerate(node))))
    return None


def loads_strict(text: str) -> Any:
    """json.loads that refuses what JSON does not allow: NaN and Infinity tokens, numbers that
    overflow a float, integers too long to convert. Raises ValueError naming the JSON path."""
    bad: list[bool] = []

    def constant(name: str) -> _Bad:
        bad.append(True)
        return _Bad(f"{name} is not a number JSON allows")

    def flt(t: str) -> float | _Bad:
        x = _parse_float(t)
        if isinstance(x, _Bad):
            bad.append(True)
        return x

    def num(t: str) -> int | _Bad:
        x = _parse_int(t)
        if isinstance(x, _Bad):
            bad.append(True)
        return x

    data = json.loads(text, parse_constant=constant, parse_float=flt, parse_int=num)
    if bad:
        where, what = _find_bad(data) or ("", "a number JSON does not allow")
        raise _BadNumber(where, what)
    return data


def key_given_twice(text: str) -> str | None:
    """The first key given twice in one JSON object (None: none is, or the text is no JSON,
    which the parse after says). Each object is dropped once its keys are counted."""
    twice: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for k, _ in items:
            if k in seen and not twice:
                twice.append(k)
            seen.add(k)
        return {}

    try:
        json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None
    return twice[0] if twice else None


class _BadNumber(ValueError):
    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}" if where else what)
        self.where, self.what = where, what


def _data_loc(data: Any, loc: tuple[Any, ...], missing: bool) -> tuple[Any, ...]:
    """The parts of a validation error's location that index the data; the others are the
    validator's own tags (union members, `function-after[...]`), whatever a key looks like."""
    out: list[Any] = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            out.append(part)
            node = node[part]
        elif missing and i == len(loc) - 1:
            out.append(part)  # the missing field itself
    return tuple(out)


def parse_report(data: Any, path: str | os.PathLike = "<report>", *,
                 text: str | None = None) -> Report:
    """Validate `data` (the parsed `text`, when given: then strictly, as JSON, so that
    `"count": true` or `"p50_s": "0.2"` is a wrong type rather than silently converted)."""
    try:
        if text is not None:
            return Report.model_validate_json(text, strict=True)
        return Report.model_validate(data)
    except ValidationError as exc:
        raise ReportError(path, *validation_problem(exc, data)) from None


def validation_line(exc: ValidationError) -> str:
    """`head_dim: Input should be ...`: a model's first validation error, of a model built
    from Python values (validation_problem names the JSON path in a parsed document)."""
    err = exc.errors(include_url=False)[0]
    where = ".".join(map(str, err["loc"]))
    return one_line((f"{where}: " if where else "") + err["msg"].removeprefix("Value error, "))


def validation_problem(exc: ValidationError, data: Any) -> tuple[str, str]:
    """(JSON path, problem) of a model's first validation error on parsed JSON `data`."""
    err = exc.errors(include_url=False)[0]
    loc = _data_loc(data, err["loc"], err["type"] == "missing")
    extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    elif err["type"] == "missing":
        msg = "missing field"
    return json_path(loc), msg + extra


def load_report(path: str | os.PathLike) -> Report:
    p = Path(path)
    try:
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            if (p / "manifest.json").is_file():
                raise ReportError(p, "", f"is a capture, not a report: {capture_hint(str(p))}")
            raise ReportError(p, "", "is a directory, not a report file")
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            raise ReportError(p, "", "is a device, not a report file")
        if st.st_size > MAX_REPORT_BYTES:
            raise ReportError(p, "", f"{st.st_size} bytes is over the {MAX_REPORT_BYTES} byte "
                                     "limit")
        with p.open("rb") as fh:  # bounded: a pipe has no size to check first
            raw = fh.read(MAX_REPORT_BYTES + 1)
        if len(raw) > MAX_REPORT_BYTES:
            raise ReportError(p, "", f"over the {MAX_REPORT_BYTES} byte limit")
    except FileNotFoundError:
        raise ReportError(p, "", "no such file") from None
    except PermissionError:
        raise ReportError(p, "", "permission denied") from None
    except OSError as exc:
        raise ReportError(p, "", exc.strerror or str(exc)) from None
    if not raw or raw.isspace():  # (no copy of a big file)
        raise ReportError(p, "", "empty file, not a report")
    if raw.startswith(b"\xef\xbb\xbf"):
        raise ReportError(p, "byte 0", "starts with a UTF-8 byte order mark, which JSON "
                                       "reports must not have (save it without one)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportError(p, f"byte {exc.start}", "not UTF-8 text (a binary file?)") from None
    del raw  # the text is all that is needed now (a big report's bytes are hundreds of MB)
    # A good report (the usual case) is parsed once, by pydantic's own JSON reader: parsing it
    # with json first as well took 7 s and 1.5 GB for 10^6 iterations' samples, not 1 s and
    # 1 GB. That reader lets NaN, Infinity and overflowing numbers into the free-form fields,
    # so they are looked at; anything wrong goes the careful way below, which names it.
    try:
        report = Report.model_validate_json(text, strict=True)
        if _find_bad([report.environment, report.config, report.metadata]) is None:
            _refuse_twice(p, text)
            return report
    except ValidationError:
        pass
    try:
        data = loads_strict(text)
    except json.JSONDecodeError as exc:
        start = text.lstrip()[:32]  # not JSON from the first byte: say what it is instead
        hint = f"; it starts with {start!r}" if exc.pos <= len(text) - len(text.lstrip()) else ""
        raise ReportError(p, f"line {exc.lineno} column {exc.colno}",
                          f"not valid JSON ({exc.msg}){hint}") from None
    except _BadNumber as exc:  # NaN / Infinity tokens, overflowing numbers
        raise ReportError(p, exc.where, exc.what) from None
    except RecursionError:
        raise ReportError(p, "", "nested too deeply") from None
    if not isinstance(data, dict):
        raise ReportError(p, "$", f"expected a JSON object, got {_json_type(data)}")
    foreign = foreign_kind(data, set(Report.model_fields), str(p.parent))
    if foreign:
        raise ReportError(p, "", foreign)
    _refuse_twice(p, text)
    return parse_report(data, p, text=text)


def _refuse_twice(p: Path, text: str) -> None:
    twice = key_given_twice(text)
    if twice is not None:
        raise ReportError(p, "", f"the key {json.dumps(twice[:80])} is given twice in one object "
                          "(one reader takes the first, another the last)")


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def iter_report_json(report: Report) -> Iterator[str]:
    """The report as indented JSON, in pieces; the raw samples last, each round's list on one
    line and encoded a round at a time: millions of samples never exist as Python floats or as
    one string at once, and no single call holds the GIL for long."""
    return iter_json_document(report_head_json(report), report.samples)


def report_head_json(report: Report) -> str:
    """Everything but the raw samples, as indented JSON (small: summaries, not samples)."""
    return json.dumps(report.to_json_dict(samples=False), indent=2, allow_nan=False)


def save_report(report: Report, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    return atomic_write_text(path, iter_report_json(report), overwrite=overwrite)
