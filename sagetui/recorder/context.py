"""`with sagetui.capture(DIR, calls=..., max_calls=..., max_bytes=...) as c:` the attention
calls made inside the block, captured as `sagetui capture` captures a program's (the same
files, manifest, selection and budget), for a notebook or a script of one's own. A refusal
(nothing made or matched, DIR not empty without force=True, bad arguments) raises
CaptureError with the CLI's line and keeps nothing; an exception inside the block keeps
nothing and goes on. `c.manifest` is set once the block has ended and the capture is in DIR.
DIR is resolved when the block begins (the block may change directory). A process forked
inside the block (a DataLoader worker) counts its calls and leaves the capture to its parent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sagetui.core.capture.manifest import Manifest, Settings
from sagetui.core.capture.outcome import CaptureError, notes, refusal
from sagetui.core.capture.selection import Selection, parse_size
from sagetui.core.capture.staging import checked, discard, publish, resolve, stage, sweep
from sagetui.recorder.install import Installed
from sagetui.recorder.recording import Recording


@dataclass
class Captured:
    """What the `with` statement gives: the capture's directory, and its manifest once the
    block has ended and the capture is there."""

    directory: Path
    manifest: Manifest | None = None


def settings(calls: str | None, max_calls: int | None, max_bytes: int | str | None) -> Settings:
    """The capture's settings, checked: CaptureError with the one line for a bad one."""
    if calls is not None and not isinstance(calls, str):
        raise CaptureError(f"calls is {calls!r}: give a selection as text, as --calls takes "
                           "it ('0,3,5-9', 'every:4', 'module:blocks.*.attn')")
    try:
        Selection.parse(calls)
        if isinstance(max_bytes, str):
            max_bytes = parse_size(max_bytes)
    except ValueError as exc:
        raise CaptureError(str(exc)) from None
    for name, n in (("max_calls", max_calls), ("max_bytes", max_bytes)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise CaptureError(f"{name} is {n!r}: give a whole number >= 1 (or None)")
    return Settings(calls=calls, max_calls=max_calls, max_bytes=max_bytes)


@contextmanager
def capture(directory: str | os.PathLike[str], calls: str | None = None,
            max_calls: int | None = None, max_bytes: int | str | None = None,
            force: bool = False) -> Iterator[Captured]:
    wanted = settings(calls, max_calls, max_bytes)
    out = resolve(directory)
    swept = sweep(out)
    if swept:
        print(swept, file=sys.stderr)
    recording = Recording(stage(out, force), wanted)
    installed = Installed(recording)
    result = Captured(out)
    try:
        yield result
    except BaseException:
        installed.remove()
        if not recording.forked:
            discard(recording.directory)
        raise
    installed.remove()
    if recording.forked:  # a forked process leaving the block: the capture is its parent's
        return
    try:
        why = refusal(recording.finish(list(sys.argv)))  # before the files are read again
        if why is not None:
            raise CaptureError(why)
        manifest = checked(recording.directory)
        result.directory = publish(recording.directory, out, force)
    except OSError as exc:
        discard(recording.directory)
        raise CaptureError(f"cannot put the capture at {out}: {exc.strerror or exc}") from None
    except BaseException:
        discard(recording.directory)
        raise
    result.manifest = manifest
    if result.directory != out:  # files were put in it while the program ran: kept
        print(f"{out} appeared during the capture and is kept; wrote {result.directory} "
              "beside it", file=sys.stderr)
    for line in notes(manifest):
        print(line, file=sys.stderr)
