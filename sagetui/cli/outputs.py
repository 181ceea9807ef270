"""A command's output files (run, sweep, run --workload, calibrate, profile, merge, node-check):
never lost, never replaced unasked.

Before anything runs (`check_outputs`): each path writable, no two outputs naming one file
(one line, exit 2), and a file already at a path kept unless --force (or the user said yes at
the prompt). At the end (`write_files`): each file written atomically by the one helper,
core.file_writes.atomic_write_text, and created only where no file is (the check and the creation
one step); a file that appeared at an output's path during the run is kept and the output goes
beside it (report.1.json), one line saying where, exit status 1 (`Written.kept_all`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from sagetui.cli.errors import UsageError
from sagetui.core.file_writes import atomic_write_text, check_writable

# every output option of a command, in the order its lines name them
OUTPUT_OPTIONS = ("json", "csv", "markdown", "kernel_facts_csv", "record_events", "svg")
REPLACEABLE = "_outputs_replaceable"  # args' set of the paths a file may be replaced at


def say(console: Console, *objects: Any, **kw: Any) -> None:
    """Print, unless the terminal is gone (after a hangup writes fail with EIO): the run and
    its files matter more than its progress lines."""
    try:
        console.print(*objects, **kw)
    except OSError:
        pass


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def _same_file_key(path: str) -> tuple[Any, ...]:
    """Two paths with one key name one file: the same inode where a file is (hard and
    symbolic links), else the same resolved path."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        return ("path", os.path.realpath(path))


def check_outputs(args: argparse.Namespace, names: Iterable[str] = OUTPUT_OPTIONS) -> None:
    """Every output path writable, no two naming one file, and nothing overwritten without
    asking; the paths whose file may be replaced (--force, or a yes at the prompt) are noted
    on `args` for write_files."""
    given = [(name, path) for name in names if (path := getattr(args, name, None))]
    seen: dict[tuple[Any, ...], tuple[str, str]] = {}
    for name, path in given:
        key = _same_file_key(path)
        if key in seen:
            first, first_path = seen[key]
            same = path if path == first_path else f"{first_path} and {path}"
            raise UsageError(f"{_flag(first)} and {_flag(name)} name one file ({same}): give "
                             "each output its own path")
        seen[key] = (name, path)
    replaceable: set[str] = set()
    for name, path in given:
        why = check_writable(path)
        if why:
            raise UsageError(f"{_flag(name)} {path}: {why}")
        if os.path.lexists(path):
            if not args.force and not confirm_overwrite(path):
                raise UsageError(f"{_flag(name)} {path} exists; pass --force to overwrite it")
            replaceable.add(os.path.realpath(path))
    setattr(args, REPLACEABLE, replaceable)


def confirm_overwrite(path: str) -> bool:
    if not sys.stdin.isatty():
        return False
    answer = input(f"{path} exists. Overwrite it? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def may_replace(args: argparse.Namespace, path: str) -> bool:
    """A file at `path` may be replaced: --force, or it was there at the start and the user
    said yes."""
    return bool(getattr(args, "force", False)) or \
        os.path.realpath(path) in getattr(args, REPLACEABLE, set())


MakeText = Callable[[], str | Iterator[str]]


@dataclass
class Written:
    """What became of a command's outputs."""

    failed: list[str] = field(default_factory=list)  # "PATH: why", each not written
    beside: list[Path] = field(default_factory=list)  # written beside a file that appeared

    @property
    def kept_all(self) -> bool:
        """Every output written, each at its own path (else the command exits 1)."""
        return not self.failed and not self.beside


def write_files(outputs: Iterable[tuple[str, MakeText]], args: argparse.Namespace,
                console: Console) -> Written:
    """Each (path, text) written atomically, a line for each: `wrote PATH`, or where it went
    instead of a file that appeared at PATH during the run; the ones that failed, with why."""
    written = Written()
    for path, text in outputs:
        try:
            at = atomic_write_text(path, text(), overwrite=may_replace(args, path), beside=True)
        except OSError as exc:
            written.failed.append(f"{path}: {exc.strerror or exc}")
            continue
        if at == Path(path):
            say(console, f"wrote {escape(str(path))}")
        else:
            written.beside.append(at)
            say(console, f"[yellow]{escape(str(path))} appeared during the run and is kept[/]; "
                         f"wrote {escape(str(at))} beside it")
    return written
