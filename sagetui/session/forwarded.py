"""A child program in a process group of its own, and the stop signals sent to sagetui sent on
to that group: `sagetui capture` and `sagetui swap` run the user's program so, and a Ctrl-C,
SIGTERM (a scheduler's time limit) or SIGHUP (a dropped SSH connection) ends the program and
everything it started, while sagetui keeps what was done."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_S = 10.0  # after a signal, how long the program's group has before SIGKILL


class Forwarded:
    """SIGINT, SIGTERM and SIGHUP to this process, sent on to the child's process group while
    the block runs (the first one kept in `signum`); a second one, or GRACE_S seconds without
    the child ending, sends SIGKILL."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._kill_at: float | None = None
        self._saved: dict[int, object] = {}

    def __enter__(self) -> Forwarded:
        for s in SIGNALS:
            self._saved[s] = signal.signal(s, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, handler in self._saved.items():
            signal.signal(s, handler)  # type: ignore[arg-type]

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        again = self.signum is not None
        if not again:
            self.signum = signum
            self._kill_at = time.monotonic() + GRACE_S
        self._send(signal.SIGKILL if again else signum)

    def _send(self, signum: int) -> None:
        if self._child is not None:
            try:
                os.killpg(self._child.pid, signum)
            except OSError:  # the group is gone
                pass

    def wait(self, child: subprocess.Popen[bytes]) -> int:
        """The child's exit status; after a signal, once the child and its group are gone."""
        self._child = child
        if self.signum is not None:  # it came before the child started
            self._send(self.signum)
        while True:
            try:  # a timeout: a blocking wait resumes after a signal's handler, unwoken
                status = child.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if self._kill_at is not None and time.monotonic() > self._kill_at:
                    self._send(signal.SIGKILL)
        if self.signum is not None:  # what the program started in its group goes too
            self._send(signal.SIGKILL)
            until = time.monotonic() + 2  # a zombie (no init reaping it) counts as alive
            while _group_alive(child.pid) and time.monotonic() < until:
                time.sleep(0.01)
        return status


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    return True
