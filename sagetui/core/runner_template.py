"""The runner template's wire: what the session sends a runner template (runner/template.py)
to have a runner forked, and what it answers.

A runner template is a process that imported torch and the runner once and forks a runner for
each request (a fork server): a runner started so costs a fork, where `python -m
sagetui.runner` costs Python's start and torch's import (about 2.5 s of CPU on a small machine,
more on a busy one). Set `SAGETUI_RUNNER_TEMPLATE` to its socket and sagetui's runners are forked
from it (session/spawn.py); without it, or when the template does not answer, each runner is
started as its own process.

One request per connection (a SOCK_SEQPACKET socket, so a message is never split): the JSON
below and, beside it (SCM_RIGHTS), four descriptors: the runner's stdin, stdout and stderr,
and the write end of a pipe on which the template writes the runner's exit code (as
`subprocess` gives it: negative for a signal) once it has reaped it. The answer is the runner's
process id, or an error line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ENV = "SAGETUI_RUNNER_TEMPLATE"
FDS = 4  # stdin, stdout, stderr, exit
MAX_MESSAGE = 1 << 20


@dataclass(frozen=True)
class Request:
    """A runner to fork: its environment, its working directory, the process it serves (the
    runner ends when that one does, as a runner started by it dies with it), and its
    arguments, as `python -m sagetui.runner ARGS` takes them (none: a runner; `--doctor`)."""

    env: dict[str, str]
    cwd: str
    requester: int
    args: tuple[str, ...] = ()

    def encode(self) -> bytes:
        return json.dumps({"env": self.env, "cwd": self.cwd, "requester": self.requester,
                           "args": list(self.args)}).encode()

    @classmethod
    def decode(cls, data: bytes) -> Request:
        d = json.loads(data)
        args = tuple(str(a) for a in d.get("args", []))
        if "--template" in args:
            raise ValueError("a template forks runners, not templates")
        return cls(env={str(k): str(v) for k, v in d["env"].items()}, cwd=str(d["cwd"]),
                   requester=int(d["requester"]), args=args)
