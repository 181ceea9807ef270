"""`python -m sagetui.recorder DIR SETTINGS PROGRAM...`: the process `sagetui capture` starts.

It wraps the attention functions and runs PROGRAM as `python PROGRAM...` would: `SCRIPT ARGS`
or `-m MODULE ARGS`, as __main__ with its own sys.argv. When the program ends well it writes
the manifest into DIR, the staging directory that the CLI checks and publishes (or, where the
capture itself failed, the line saying why, core/capture/outcome.FAILED). SETTINGS is the
manifest's Settings as JSON. Its exit status is the program's.

It ends with the process that started it (`sagetui capture`): a parent gone, killed even,
leaves no program running on as an orphan (Linux: the parent-death signal), nor a process the
program forked (each one ends with its own parent in turn).
"""

from __future__ import annotations

import ctypes
import os
import runpy
import signal
import sys
import traceback
from pathlib import Path

from sagetui.core.capture.manifest import Settings
from sagetui.core.capture.outcome import FAILED, CaptureError
from sagetui.recorder.install import Installed
from sagetui.recorder.recording import Recording


def run_program(program: list[str]) -> int:
    """Run it as the interpreter would; its exit status."""
    try:
        if program[0] == "-m":
            sys.argv = program[1:]  # run_module puts the module's file in argv[0]
            runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(program)
            sys.path[0] = os.path.dirname(os.path.abspath(program[0]))
            runpy.run_path(program[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C, sent on by sagetui capture, which says so in a line
        return 130
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def end_with_parent() -> None:
    """SIGKILL when the parent (sagetui capture) dies; at once if it has already."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: an orphan is possible
        return
    if os.getppid() != parent:
        os._exit(128 + signal.SIGKILL)


def main(argv: list[str]) -> int:
    directory, settings, program = Path(argv[0]), Settings.model_validate_json(argv[1]), argv[2:]
    end_with_parent()
    os.register_at_fork(after_in_child=end_with_parent)
    recording = Recording(directory, settings)
    installed = Installed(recording)
    try:
        status = run_program(program)
    finally:
        installed.remove()
    if status != 0 or recording.forked:  # a forked copy of the program: its parent finishes
        return status
    try:
        recording.finish(program)
    except CaptureError as exc:
        failed(recording.directory, str(exc))
    except Exception as exc:  # the program succeeded: the capture's failure is said as such
        failed(recording.directory, f"the capture failed at its end: {type(exc).__name__}: "
                                    f"{exc}")
    return status


def failed(directory: Path, line: str) -> None:
    try:
        (directory / FAILED).write_text(line + "\n", encoding="utf-8")
    except OSError:
        print(f"sagetui capture: {line}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
