"""A tiny shared status record: what the runner is doing right now.

The runner writes "variant, phase, round, iteration" into a memory-mapped file at the start of
every leaf phase (a memcpy, no system call). If the runner dies by a signal or hangs, the session
still reads which variant and phase were running. The file path comes from the session through
the SAGETUI_STATUS_FILE environment variable.
"""

from __future__ import annotations

import mmap
import os

SIZE = 512
ENV = "SAGETUI_STATUS_FILE"


class StatusBoard:
    def __init__(self, path: str | None) -> None:
        self._mm: mmap.mmap | None = None
        if path:
            try:
                fd = os.open(path, os.O_RDWR)
                try:
                    os.ftruncate(fd, SIZE)
                    self._mm = mmap.mmap(fd, SIZE)
                finally:
                    os.close(fd)
            except OSError:
                self._mm = None  # diagnostics only: never a reason to fail a run
        self.variant = ""
        self.phase = ""
        self.round = -1
        self.iteration = -1

    def set(self, phase: str) -> None:
        self.phase = phase
        if self._mm is None:
            return
        data = f"{self.variant}\t{phase}\t{self.round}\t{self.iteration}".encode()[: SIZE - 1]
        self._mm[:SIZE] = data.ljust(SIZE, b"\0")


def read_status(path: str) -> dict[str, str | int] | None:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(SIZE).rstrip(b"\0").decode(errors="replace")
    except OSError:
        return None
    parts = raw.split("\t")
    if len(parts) != 4 or not parts[0]:
        return None
    return {"variant": parts[0], "phase": parts[1], "round": int(parts[2]),
            "iteration": int(parts[3])}
