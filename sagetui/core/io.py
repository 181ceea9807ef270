"""Reading and writing reports: one clear line for every way a file can be wrong, and writes
that never leave a half-written file behind.

Opening a report never runs code: it is JSON parsed by the standard library and validated by
the report model; nothing in it is imported, unpickled, evaluated or loaded.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .report import Report

MAX_REPORT_BYTES = 512 * 1024 * 1024  # raw samples of long runs fit; a runaway file does not


class ReportError(Exception):
    """A report that cannot be read; str() is the one line to show."""

    def __init__(self, path: str | os.PathLike, where: str, problem: str) -> None:
        self.path, self.where, self.problem = str(path), where, problem
        super().__init__(f"{path}: {where}: {problem}" if where else f"{path}: {problem}")


def json_path(loc: tuple[Any, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_report(data: Any, path: str | os.PathLike = "<report>") -> Report:
    try:
        return Report.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
        extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "missing field"
        raise ReportError(path, json_path(loc), msg + extra) from None


def load_report(path: str | os.PathLike) -> Report:
    p = Path(path)
    try:
        size = p.stat().st_size
        if p.is_dir():
            raise ReportError(p, "", "is a directory, not a report file")
        if size > MAX_REPORT_BYTES:
            raise ReportError(p, "", f"{size} bytes is over the {MAX_REPORT_BYTES} byte limit")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ReportError(p, "", "no such file") from None
    except PermissionError:
        raise ReportError(p, "", "permission denied") from None
    except OSError as exc:
        raise ReportError(p, "", exc.strerror or str(exc)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportError(p, f"byte {exc.start}", "not UTF-8 text (a binary file?)") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ReportError(p, f"line {exc.lineno} column {exc.colno}",
                          f"not valid JSON ({exc.msg})") from None
    except ValueError as exc:  # NaN / Infinity tokens
        raise ReportError(p, "", str(exc)) from None
    except RecursionError:
        raise ReportError(p, "", "nested too deeply") from None
    if not isinstance(data, dict):
        raise ReportError(p, "$", f"expected a JSON object, got {type(data).__name__}")
    return parse_report(data, p)


def dumps_report(report: Report) -> str:
    return json.dumps(report.to_json_dict(), indent=2, allow_nan=False) + "\n"


def atomic_write_text(path: str | os.PathLike, text: str, *, overwrite: bool = False) -> Path:
    """Write to a temporary file in the same directory, fsync, then rename over the target.

    A full disk or a read-only directory raises OSError and leaves any old file intact.
    With overwrite=False an existing file is an error (FileExistsError): the caller asks first.
    """
    p = Path(path)
    if p.exists() and not overwrite:
        raise FileExistsError(f"{p} exists")
    directory = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


def save_report(report: Report, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    return atomic_write_text(path, dumps_report(report), overwrite=overwrite)


def check_writable(path: str | os.PathLike) -> str | None:
    """None if `path` can be written (its directory exists and is writable), else why not."""
    p = Path(path)
    d = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        return f"{p} is a directory"
    if not d.is_dir():
        return f"directory {d} does not exist"
    if not os.access(d, os.W_OK):
        return f"directory {d} is not writable"
    if p.exists() and not os.access(p, os.W_OK):
        return f"{p} is not writable"
    return None
