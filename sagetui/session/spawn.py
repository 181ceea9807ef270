"""Starting the runner process, with the standard library alone: `sagetui run` starts it before
it imports the rest of sagetui, so that the runner's start-up (importing torch and making a
CUDA context: the floor of a cold start) overlaps the CLI's own imports.

The runner gets a process group of its own and dies with its parent (runner_client.py says why).
Where `SAGETUI_RUNNER_TEMPLATE` names a runner template, the runner is forked from it instead
(session/forked_runner.py), set up the same way; one that does not answer is passed over.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from sagetui.core import runner_template, status_board
from sagetui.session.forked_runner import ForkedRunner, fork_runner


def _die_with_parent() -> None:
    """In the child: die if the session dies (Linux), and leave Ctrl-C to the session.

    The runner also gets a process group of its own (Popen's process_group=0), so that what the
    terminal sends to the console's group (Ctrl-C, a hangup's SIGHUP, `kill -TERM -PGID`,
    Ctrl-Z) reaches the session alone, which stops the runner and keeps what was measured,
    instead of killing the runner mid-round and blaming the variant that was running."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclass
class Spawned:
    """A runner process and the status board it writes (core/status_board.py)."""

    proc: subprocess.Popen[str] | ForkedRunner
    status_path: str

    def discard(self) -> None:
        """Kill a runner no session took (the command failed before it needed one)."""
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2.0)
        with contextlib.suppress(OSError):
            os.unlink(self.status_path)


def spawn_runner(python: str | None = None, env: dict[str, str] | None = None,
                 argv: list[str] | None = None, args: Sequence[str] = ()) -> Spawned:
    """Start `python -m sagetui.runner ARGS` (or `argv`), its pipes open for the protocol."""
    fd, status_path = tempfile.mkstemp(prefix="sagetui-status-")
    os.close(fd)
    child_env = dict(os.environ, **(env or {}))
    child_env[status_board.ENV] = status_path
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    template = child_env.get(runner_template.ENV)
    if template and argv is None and python in (None, sys.executable):
        forked = fork_runner(template, child_env, args)
        if forked is not None:
            return Spawned(forked, status_path)
    proc = subprocess.Popen(
        argv or [python or sys.executable, "-m", "sagetui.runner", *args], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env, text=True, bufsize=1,
        preexec_fn=_die_with_parent, process_group=0)
    return Spawned(proc, status_path)
