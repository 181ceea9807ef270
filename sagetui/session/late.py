"""The late figures of a run or a sweep's point (core/run/late.py): after its last round, the
session says `measured` (the verdicts are final: displays show them now) with the figures still
to come, asks the runner for them (`late`) and passes each on as it arrives.

A runner error or death here loses only the figures not yet in: the rounds are kept, no variant
fails, and the run's status names what was never computed (core/run/status.py).
"""

from __future__ import annotations

from typing import Protocol

from sagetui.core import events as ev
from sagetui.core.config import RunConfig
from sagetui.core.run import late
from sagetui.core.run.model import RunModel
from sagetui.session.runner_client import RunnerClient

LATE_EVENTS: tuple[type[ev.RunnerEvent], ...] = (ev.LateFacts, ev.Decomposition, ev.LateDone)


class Conversation(Protocol):
    """What of a session (runner_session.RunnerSession) the late figures use."""

    model: RunModel
    client: RunnerClient | None

    @property
    def config(self) -> RunConfig: ...

    @property
    def cancelled(self) -> bool: ...

    def emit(self, event: ev.Event) -> None: ...

    def _wait_for(self, name: str, kinds: tuple[type[ev.RunnerEvent], ...], watchdog: float,
                  *, shown: tuple[type[ev.RunnerEvent], ...] = ...,
                  fail: bool = True) -> ev.RunnerEvent | None: ...


def late_figures(session: Conversation, decompose: str | None) -> None:
    """Announce and compute the late figures: every measured variant's accuracy, the
    decomposition check of `decompose` (None: none), the inputs' sha256 unless known."""
    m = session.model
    variants = [n for n in m.active() if m.variants[n].completed_rounds]
    computing = [late.accuracy_key(n) for n in variants]
    if decompose is not None:
        computing.append(late.DECOMPOSITION)
    hash_inputs = not m.ready.get("input_sha256")
    if hash_inputs:
        computing.append(late.INPUT_SHA256)
    session.emit(ev.Measured(computing=computing))
    if not computing or session.client is None or session.cancelled:
        return
    session.client.send(ev.Late(accuracy=variants, decompose=decompose,
                                input_sha256=hash_inputs))
    if session.cancelled:  # stopped as it was asked: the runner clears a cancel sent before
        session.client.send(ev.Cancel())
    # each figure may take a while at a large shape (the reference, the public API's first
    # call): the watchdog restarts with every event. An error loses the figures not yet in;
    # no variant fails.
    while True:
        e = session._wait_for(decompose or "", LATE_EVENTS, session.config.watchdog_s * 2,
                              shown=LATE_EVENTS, fail=False)
        if e is None or isinstance(e, ev.LateDone):
            return
