"""Drift, verdicts and speedups a report did not record, or that a new baseline changes:
derive.py's analysis run in a thread worker (scipy stays off the UI thread), folded in on the
UI thread when its message comes back."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.app import App

from sagetui.tui.derive import Derived, apply_derived, derive, derive_inputs
from sagetui.tui.messages import DerivedReady
from sagetui.tui.run_data import RunData


class DeriveFlow:
    def __init__(self, app: App[int]) -> None:
        self.app = app

    def start(self, data: RunData, recompute: bool) -> None:
        """Fill in drift and verdicts (recompute: all, for a new baseline) off the UI thread."""
        args = derive_inputs(data, recompute)
        if args is not None:
            job = partial(self._thread, id(data), args, recompute)
            self.app.run_worker(job, group="derive", thread=True, exit_on_error=False)

    def _thread(self, source_id: int, args: dict[str, Any], recompute: bool) -> None:
        d = derive(**args)
        self.app.post_message(DerivedReady(source_id, d.drift, d.verdicts, d.speedups,
                                           recompute))


def apply_message(data: RunData, message: DerivedReady) -> None:
    apply_derived(data, Derived(message.drift, message.verdicts, message.speedups),
                  message.recompute)
