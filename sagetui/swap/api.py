"""`with sagetui.region("step"):` and `sagetui.output("latents", tensor)`: what a program marks
for `sagetui swap`. Outside a swap both do nothing (a program keeps them and runs as ever).
No torch here: `import sagetui` stays light.

The swap process sets `active` once, before the program starts (inside.py): the program's code
has no other way to find the measurement it runs under.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class Marks(Protocol):
    def region_start(self, name: str) -> Any: ...

    def region_end(self, name: str, token: Any) -> None: ...

    def output(self, name: str, tensor: Any) -> None: ...


class _Active:
    marks: Marks | None = None


active = _Active()


@contextmanager
def region(name: str = "step") -> Iterator[None]:
    """Time the block as the step `name` (several blocks may share a name: their times add; a
    block nested in another of its name is part of the outer one, which alone is timed)."""
    marks = active.marks
    if marks is None:
        yield
        return
    name = str(name)
    token = marks.region_start(name)
    try:
        yield
    finally:
        marks.region_end(name, token)


def output(name: str, tensor: Any) -> None:
    """Hand over an output to compare against the unchanged program's (the last one given
    under each name counts)."""
    marks = active.marks
    if marks is not None:
        marks.output(str(name), tensor)
