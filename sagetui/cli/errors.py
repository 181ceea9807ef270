"""The one error type of the command line."""

from __future__ import annotations

from typing import Any


class UsageError(Exception):
    """Bad input found before anything runs: one line, exit status 2."""


def stdout_console():
    """A rich console for tables: the terminal's width, or wide enough not to cut numbers
    when the output goes to a pipe or a file."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


class ClosedPipeSafe:
    """sys.stdout for a command's process: once its reader has gone (`sagetui run ... | head`),
    what it would print goes to /dev/null, and the command goes on measuring and writing its
    files; before, the first line after the pipe closed raised BrokenPipeError, which stopped
    the run's outputs (issue 43, item 5)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed_pipe = False

    def _gone(self) -> None:
        import os

        self.closed_pipe = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())  # the interpreter's own flush at exit too
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
