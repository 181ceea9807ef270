"""A runner forked by a runner template (runner/template.py; the wire and why:
core/runner_template.py), as the session holds it: the subset of `subprocess.Popen` the session
uses (pid, the three pipes, poll, wait, communicate, the signals), so that a forked runner and a
started one are driven and reported alike.

The runner is the template's child, not ours: its exit code comes on the exit pipe once the
template has reaped it, and signals go through a pidfd, so that one can never reach another
process that took the pid after it.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import TextIO

from sagetui.core import runner_template

# an exit pipe closed with no code on it: the template ended, and its runners with it
# (PR_SET_PDEATHSIG: SIGKILL)
GONE_WITH_TEMPLATE = -signal.SIGKILL


class ForkedRunner:
    def __init__(self, pid: int, stdin: int, stdout: int, stderr: int, exit_r: int,
                 args: Sequence[str] = ()) -> None:
        self.pid = pid
        self.args = ["sagetui.runner", *args, f"(forked by its template, pid {pid})"]
        self.returncode: int | None = None
        self.stdin: TextIO | None = open(stdin, "w", buffering=1, encoding="utf-8")
        self.stdout: TextIO | None = open(stdout, encoding="utf-8")
        self.stderr: TextIO | None = open(stderr, encoding="utf-8", errors="replace")
        # both kept open for the object's life, as Popen keeps its pid: a wait in one thread
        # and a signal or a poll in another never meet a closed (or reused) descriptor
        self._exit = exit_r
        self._read_lock = threading.Lock()  # one thread reads the code
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except OSError:
            self._pidfd = None  # gone already: its code is on the exit pipe

    def __del__(self) -> None:
        for fd in (self._exit, self._pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _ended(self, timeout: float | None) -> bool:
        """Wait up to `timeout` for the exit code; True once `returncode` is set. No lock is
        held while waiting: a kill from another thread never waits behind a wait."""
        if self.returncode is not None:
            return True
        p = select.poll()
        p.register(self._exit, select.POLLIN)
        if not p.poll(None if timeout is None else max(0, int(timeout * 1000))):
            return False
        with self._read_lock:
            if self.returncode is None:
                data = os.read(self._exit, 64).strip()
                self.returncode = int(data) if data else GONE_WITH_TEMPLATE
        return True

    def poll(self) -> int | None:
        self._ended(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """As Popen's: stdin closed, stdout and stderr read to their end, the runner waited
        for; TimeoutExpired (the runner left running) when `timeout` passes first."""
        assert self.stdin is not None and self.stdout is not None and self.stderr is not None
        self.stdin.close()
        deadline = None if timeout is None else time.monotonic() + timeout
        read: dict[int, list[bytes]] = {self.stdout.fileno(): [], self.stderr.fileno(): []}
        with selectors.DefaultSelector() as sel:
            for fd in read:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(self.args, timeout or 0)
                for key, _ in sel.select(left):
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        read[key.fd].append(chunk)
                    else:
                        sel.unregister(key.fd)
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        self.wait(left)
        out, err = (b"".join(chunks).decode("utf-8", "replace") for chunks in read.values())
        return out, err

    def send_signal(self, sig: int) -> None:
        """As Popen's: nothing once its end is known; the pidfd names this process alone."""
        if self.returncode is None and self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_runner(path: str, env: dict[str, str], args: Sequence[str] = ()) -> ForkedRunner | None:
    """A runner forked by the template listening on `path` (with `args`, as `python -m
    sagetui.runner` takes them); None when it does not answer."""
    ours: list[int] = []
    theirs: list[int] = []
    for _ in range(runner_template.FDS):
        r, w = os.pipe()
        ours.append(r)
        theirs.append(w)
    # the child reads stdin (our write end is ours[0]'s pair): swap the first pipe's ends
    ours[0], theirs[0] = theirs[0], ours[0]
    req = runner_template.Request(env=env, cwd=os.getcwd(), requester=os.getpid(),
                                  args=tuple(args))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(10.0)
            s.connect(path)
            socket.send_fds(s, [req.encode()], theirs)
            answer = s.recv(256).decode(errors="replace")
        pid = int(answer)
    except (OSError, ValueError):
        for fd in ours:
            os.close(fd)
        return None
    finally:
        for fd in theirs:
            os.close(fd)
    stdin, stdout, stderr, exit_r = ours
    return ForkedRunner(pid, stdin, stdout, stderr, exit_r, args)
