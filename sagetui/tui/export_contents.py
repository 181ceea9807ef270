"""Exports from the console: what each kind writes, where by default, and why a write failed.

Every write goes through core.file_writes.atomic_write_text (a temporary file in the same directory,
fsync, rename), so a failure (read-only directory, full disk) leaves any old file as it was,
and the data stays in memory to be written elsewhere.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sagetui.core.export.report import to_csv, to_markdown
from sagetui.core.file_writes import atomic_write_text
from sagetui.core.report.io import iter_report_json
from sagetui.core.report.model import Report


@dataclass(frozen=True)
class ExportKind:
    key: str
    what: str
    suffix: str


KINDS = {
    "json": ExportKind("json", "report JSON", ".json"),
    "csv": ExportKind("csv", "raw samples CSV", ".csv"),
    "md": ExportKind("md", "Markdown summary", ".md"),
    "svg": ExportKind("svg", "SVG screenshot", ".svg"),
}


class ReportJSON:
    """A report's JSON, encoded afresh (in pieces) each time it is written: a write that is
    asked again (the file appeared meanwhile, the disk was full) writes it whole again, and
    millions of samples are never one string."""

    def __init__(self, report: Report) -> None:
        self.report = report

    def __iter__(self) -> Iterator[str]:
        return iter_report_json(self.report)


Content = str | ReportJSON


def render(kind: str, report: Report | None, svg: str | None = None,
           title: str = "sagetui report") -> Content:
    if kind == "svg":
        if svg is None:
            raise ValueError("no screenshot taken")
        return svg
    if report is None:
        raise ValueError("nothing measured yet: start a run (r) or open a report")
    if kind == "json":
        return ReportJSON(report)
    if kind == "csv":
        return to_csv(report)
    if kind == "md":
        return to_markdown(report, title=title)
    raise ValueError(f"unknown export {kind!r}")


def default_path(directory: Path, stem: str, kind: str) -> Path:
    return directory / f"{stem}{KINDS[kind].suffix}"


def write(path: Path, text: Content, *, overwrite: bool) -> Path:
    return atomic_write_text(path, text, overwrite=overwrite)


def why(exc: OSError) -> str:
    """The reason in words a user acts on."""
    if exc.errno in (errno.EROFS,):
        return "the file system is read-only"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno == errno.ENOENT:
        return "the directory does not exist"
    if exc.errno == errno.EISDIR:
        return "that is a directory"
    return exc.strerror or str(exc)
