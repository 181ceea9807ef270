"""The runner as a child process: spawn it, send commands, read events, and tell how it died."""

from __future__ import annotations

import collections
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

from sagetui.core import events as ev
from sagetui.core import protocol
from sagetui.core.status_board import read_status
from sagetui.session.spawn import Spawned, spawn_runner

STDERR_LINES = 40


@dataclass
class RunnerGone:
    """What is known about a runner that stopped answering or died."""

    kind: str  # "died", "hung", "exited"
    message: str
    returncode: int | None
    status: dict[str, Any] | None
    stderr_tail: list[str]


class RunnerFault(Exception):
    """The runner died or stopped answering (see RunnerClient.take)."""

    def __init__(self, gone: RunnerGone) -> None:
        super().__init__(gone.message)
        self.gone = gone


class RunnerClient:
    def __init__(self, python: str | None = None, env: dict[str, str] | None = None,
                 argv: list[str] | None = None, spawned: Spawned | None = None) -> None:
        """A new runner process, or `spawned`, one started earlier (spawn.py)."""
        spawned = spawned or spawn_runner(python, env, argv)
        self.proc, self.status_path = spawned.proc, spawned.status_path
        # lists of events, one per read of the pipe; None at the end of the stream
        self.events: queue.Queue[list[ev.RunnerEventT] | None] = queue.Queue()
        self._ready: collections.deque[ev.RunnerEventT] = collections.deque()  # taken, unread
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        """Decode events as they come, a pipe-full at a time: the lines of one read go to the
        session as one list (one queue hand-off wakes the session's thread once, and every
        wake-up passes the GIL between the threads the console's UI thread waits on too). A
        read returns what the pipe holds, so nothing waits for a batch to fill."""
        assert self.proc.stdout is not None
        fd, rest = self.proc.stdout.fileno(), b""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop() if chunk else b""  # an unfinished line waits for its end
            batch: list[ev.RunnerEventT] = []
            for line in lines:
                if not chunk and not line:
                    continue  # the end of a stream that ended with a newline
                try:
                    batch.append(protocol.decode_event(line))
                except protocol.ProtocolError as exc:
                    self.stderr.append(f"[sagetui] unreadable runner line: {exc}")
            if batch:
                self.events.put(batch)
            if not chunk:
                break
        self.events.put(None)  # end of stream

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    def send(self, cmd: ev.CommandT) -> bool:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(protocol.encode(cmd))
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def next_event(self, timeout: float | None) -> ev.RunnerEventT | None:
        """The next event; None when the stream ended; raises queue.Empty on timeout. (One
        thread, the session's, takes events.)"""
        if not self._ready:
            batch = self.events.get(timeout=timeout)
            if batch is None:
                return None
            self._ready.extend(batch)
        return self._ready.popleft()

    def take(self, timeout: float) -> ev.RunnerEventT:
        """The next event; raises RunnerFault when the stream ended (the runner died) or
        nothing came for `timeout` seconds (the runner hung: it is killed)."""
        try:
            e = self.next_event(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise RunnerFault(self.gone("hung")) from None
        if e is None:
            raise RunnerFault(self.gone())
        return e

    def pending(self) -> int:
        """Events decoded and not yet taken (a diagnostic: it is read without a lock)."""
        return len(self._ready) + sum(len(b) for b in list(self.events.queue) if b)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def gone(self, kind: str = "died") -> RunnerGone:
        """Describe a runner that ended (or is being ended for hanging)."""
        try:
            rc = self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            rc = None
        for t in self._threads:
            t.join(timeout=1.0)
        status = read_status(self.status_path)
        if kind == "hung":
            msg = "the runner stopped answering and was killed by the watchdog"
        elif rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            msg = f"the runner was killed by {name}"
        else:
            msg = f"the runner exited with status {rc}"
        return RunnerGone(kind, msg, rc, status, list(self.stderr))

    def stop(self, timeout: float = 1.0) -> None:
        """Ask the runner to quit; kill it if it does not within `timeout` seconds."""
        if self.alive():
            self.send(ev.Cancel())
            self.send(ev.Quit())
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
            deadline = time.monotonic() + timeout
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.02)
        if self.alive():
            self.proc.kill()
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdout, self.proc.stderr, self.proc.stdin):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        try:
            os.unlink(self.status_path)
        except OSError:
            pass

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
