"""`sagetui capture`: run a Python program in a child process with its attention calls
recorded (`python -m sagetui.recorder`, sagetui/recorder), then check what it wrote and put it
in place; `--verify DIR`: check a capture against its files and list its calls.

The child writes into a staging directory (core/capture/staging.py); only a whole capture, its
files hashed again, is put in DIR, so that a refusal, a failing program or an interrupt leaves
nothing behind. The program runs in a process group of its own: SIGINT, SIGTERM and SIGHUP
sent to sagetui are sent on to that group, sagetui waits for it, removes the staging and ends
with one line and 128 + the signal's number (130 for Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from rich.table import Table
from rich.text import Text

from sagetui.cli.errors import UsageError, stdout_console
from sagetui.core import format as fmt
from sagetui.core.capture.loaded import LoadedCapture, WorkloadError, load_workload, read_manifest
from sagetui.core.capture.manifest import Manifest, Settings
from sagetui.core.capture.outcome import FAILED, CaptureError, notes, refusal, summary
from sagetui.core.capture.selection import Selection
from sagetui.core.capture.staging import checked, discard, publish, resolve, stage, sweep
from sagetui.core.report.io import one_line
from sagetui.core.run_argv import command_line
from sagetui.session.forwarded import Forwarded

FORMS = "python SCRIPT [ARGS], python -m MODULE [ARGS] or SCRIPT.py [ARGS]"


def cmd_capture(args: argparse.Namespace) -> int:
    if args.verify:
        if args.program or args.out is not None:
            raise UsageError("--verify DIR checks a capture: give no --out and no program")
        return _verify(Path(args.verify))
    if not args.program:
        raise UsageError("no program given: sagetui capture --out DIR -- python SCRIPT [ARGS]")
    if args.out is None:
        raise UsageError("--out DIR is required: where the capture goes")
    command = _command(args.program)
    try:
        Selection.parse(args.calls)
        settings = Settings(calls=args.calls, max_calls=args.max_calls, max_bytes=args.max_bytes)
        out = resolve(args.out)
        swept = sweep(out)
        if swept:
            print(swept, file=sys.stderr)
        staged = stage(out, args.force)
    except (ValueError, CaptureError) as exc:
        raise UsageError(str(exc)) from None
    kept = False
    try:
        with Forwarded() as forwarded:
            try:
                child = subprocess.Popen(
                    command[:1] + ["-m", "sagetui.recorder", str(staged),
                                   settings.model_dump_json()] + command[1:],
                    start_new_session=True)  # its group: what a signal to sagetui reaches
            except OSError as exc:
                raise UsageError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
            status = forwarded.wait(child)
            if forwarded.signum is not None:
                return _stopped(forwarded.signum)
            manifest = _finished(status, staged)
            try:
                at = publish(staged, out, args.force)
            except OSError as exc:
                raise UsageError(f"cannot put the capture at {args.out}: "
                                 f"{exc.strerror or exc}") from None
            kept = True
    finally:
        if not kept:
            discard(staged)
    for line in notes(manifest):
        print(line, file=sys.stderr)
    shown = args.out if at == out else _as_typed(args.out, out, at)
    if at != out:  # DIR got files (or became a file) while the program ran: kept
        print(f"{args.out} appeared during the capture and is kept; wrote {shown} beside it",
              file=sys.stderr)
    print(summary(manifest, shown))
    return 0 if at == out else 1


def _as_typed(typed: str, out: Path, at: Path) -> str:
    """`at` (DIR.1 beside DIR) written the way DIR was typed where that names it plainly
    (`cap` -> `cap.1`, `runs/cap` -> `runs/cap.1`); else its absolute path (`.`, a symlink)."""
    if at.parent == out.parent and os.path.basename(os.path.normpath(typed)) == out.name:
        return os.path.join(os.path.dirname(os.path.normpath(typed)), at.name)
    return str(at)


def _stopped(signum: int) -> int:
    name = signal.Signals(signum).name
    print(f"sagetui capture: stopped by {name}: the program was stopped and nothing was "
          "captured", file=sys.stderr)
    return 130 if signum == signal.SIGINT else 128 + signum


def _command(words: list[str]) -> list[str]:
    """[interpreter, SCRIPT, ARGS...] or [interpreter, -m, MODULE, ARGS...]. A bare `python`
    is the interpreter sagetui runs in (which has sagetui); a path, that interpreter."""
    first = words[0]
    if first.endswith(".py"):
        words = [sys.executable, *words]
    elif not os.path.basename(first).startswith("python"):
        raise UsageError(f"the program must be Python: {FORMS} (got {first!r})")
    elif os.sep not in first:
        words = [sys.executable, *words[1:]]
    rest = words[1:]
    if not rest or (rest[0] == "-m" and len(rest) < 2):
        raise UsageError(f"no script or module to run: give {FORMS}")
    if rest[0] != "-m":
        if rest[0].startswith("-"):
            raise UsageError(f"interpreter option {rest[0]!r} is not taken: give {FORMS}")
        if not os.path.isfile(rest[0]):
            raise UsageError(f"the program's script {rest[0]} does not exist")
    return words


def _finished(status: int, staged: Path) -> Manifest:
    """The child's manifest, or UsageError with why nothing is kept."""
    if status != 0:
        how = f"was killed by signal {-status}" if status < 0 else f"failed with exit status "\
              f"{status}"
        raise UsageError(f"the program {how}; nothing was captured")
    if (staged / FAILED).is_file():
        raise UsageError(one_line((staged / FAILED).read_text(encoding="utf-8").strip()))
    try:
        written = read_manifest(staged)
    except WorkloadError:
        raise UsageError("the program ended without letting the capture finish (os._exit?); "
                         "nothing was captured") from None
    why = refusal(written)  # before the files are read: a capture of no call says why
    if why is not None:
        raise UsageError(why)
    try:
        return checked(staged)
    except CaptureError as exc:
        raise UsageError(str(exc)) from None


def _verify(directory: Path) -> int:
    try:
        workload = load_workload(directory)
    except WorkloadError as exc:
        raise UsageError(str(exc)) from None
    m = workload.manifest
    print(one_line(f"{directory}: {len(m.calls)} of {m.calls_seen} calls saved, "
                   f"{fmt.size(m.bytes_saved)}, torch {m.torch}, {m.device_name or m.device}; "
                   "every file matches the manifest (shape, dtype, sha256)"))
    stdout_console().print(_table(workload))
    example = next((c for c in workload.calls if c.shape is not None), None)
    argv = example.run_argv() if example else None
    if argv:
        print(f"each call's file runs on its own at its shape, e.g. {command_line(argv)}")
    return 0


def _table(workload: LoadedCapture) -> Table:
    """A row per saved call; every cell a Text, never markup (a module path may hold `[...]`:
    a ModuleDict's key)."""
    t = Table(show_edge=False)
    for name in ("call", "function", "module", "q", "k", "dtype", "layout", "mask", "scale",
                 "gqa", "count", "as a run"):
        t.add_column(name, justify="right" if name in ("call", "count") else "left")
    for c in workload.calls:
        f = c.facts
        t.add_row(*(Text(fmt.printable(x)) for x in (
            str(f.index), f.function.rsplit(".", 1)[-1], f.module or "-",
            str(f.tensors["q"].shape), str(f.tensors["k"].shape), f.dtype, f.layout,
            f.mask, "default" if f.scale is None else f"{f.scale:g}",
            "yes" if f.gqa else "no", fmt.count(f.count),
            c.shape.describe() if c.shape else f"no: {c.unfit}")))
    return t
