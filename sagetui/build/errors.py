"""The builder's two failures: bad input found before a compiler runs (one line, exit 2)
and a build that failed (the compiler's error lines, exit 1)."""


class BuildInputError(Exception):
    """Not a SageAttention tree, a backend it does not build, a missing tool: one line."""


class BuildFailed(Exception):
    """The build ran and failed; `block` holds the compiler's first error and its context."""

    def __init__(self, summary: str, block: list[str]) -> None:
        super().__init__(summary)
        self.block = block
