"""`python -m sagetui.recorder DIR SETTINGS PROGRAM...`: the process `sagetui capture` starts.

It wraps the attention functions and runs PROGRAM as `python PROGRAM...` would: `SCRIPT ARGS`
or `-m MODULE ARGS`, as __main__ with its own sys.argv. When the program ends well it writes
the manifest into DIR, the staging directory that the CLI checks and publishes (or, where the
capture itself failed, the line saying why, core/capture/outcome.FAILED). SETTINGS is the
manifest's Settings as JSON. Its exit status is the program's.
"""

from __future__ import annotations

import os
import runpy
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
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def main(argv: list[str]) -> int:
    directory, settings, program = Path(argv[0]), Settings.model_validate_json(argv[1]), argv[2:]
    recording = Recording(directory, settings)
    installed = Installed(recording)
    try:
        status = run_program(program)
    finally:
        installed.remove()
    if status == 0:
        try:
            recording.finish(program)
        except CaptureError as exc:
            (directory / FAILED).write_text(str(exc) + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
