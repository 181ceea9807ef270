"""The builder's failures: bad input found before a compiler runs (one line, exit 2), a build
that failed (the compiler's error lines, exit 1) and a build a signal stopped (one line, the
signal's exit status)."""

import signal


class BuildInputError(Exception):
    """Not a SageAttention tree, a backend it does not build, a missing tool: one line."""


class BuildFailed(Exception):
    """The build ran and failed; `block` holds the compiler's first error and its context."""

    def __init__(self, summary: str, block: list[str]) -> None:
        super().__init__(summary)
        self.block = block


class BuildInterrupted(Exception):
    """A signal stopped the build (build/stop.py): its group has ended and its staging is
    removed; the command ends with one line and `status` (130 for SIGINT, 128+N otherwise)."""

    def __init__(self, signum: int, what: str) -> None:
        self.signum, self.what = signum, what
        self.status = 128 + signum
        super().__init__(f"{signal.Signals(signum).name}: stopped {what}")
