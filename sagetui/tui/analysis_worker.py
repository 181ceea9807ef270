"""Drift, verdicts and speedups a source did not record (the two-build report has none), or that a
new baseline or threshold changes: the one analysis (core/run/figures.analysis) run in a thread
worker (it imports scipy, which stays off the UI thread), its result folded into the source's model
as an `analysis` event when its message comes back. `sagetui compare` and tests call `analyse_now`
on their own thread."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.app import App

from sagetui.core import events as ev
from sagetui.core.run import figures
from sagetui.core.run.fold import apply
from sagetui.core.statistics.analysis import Analysis, analyse
from sagetui.tui.messages import DerivedReady
from sagetui.tui.source import Source


def inputs(data: Source, recompute: bool) -> dict[str, Any] | None:
    """analyse()'s arguments for what a source lacks (recompute: all, for a new baseline or
    threshold); None when nothing is missing."""
    m = data.model
    missing = set(m.variants) if recompute else {
        n for n, v in m.variants.items() if v.drift is None}
    need_verdicts = recompute or any(v.verdict is None and n != m.baseline
                                     for n, v in m.variants.items())
    if not m.variants or not (missing or need_verdicts):
        return None
    args = figures.analysis_inputs(m, outliers=False)
    args["drift_of"] = missing if not data.live else set()
    args["verdicts"] = args["verdicts"] and need_verdicts
    return args


def event(data: Source, an: Analysis, recompute: bool) -> ev.AnalysisDone:
    """The analysis as the event the source's model folds: what it lacked (everything, with
    `recompute`); a verdict of a saved report computed here is marked as such."""
    m = data.model
    verdicts = {n: d for n, d in an.verdict_dicts().items()
                if recompute or m.variants[n].verdict is None}
    speedups = {n: s for n, s in an.speedups().items()
                if recompute or m.variants[n].speedup_percent is None}
    return ev.AnalysisDone(round=-1, verdicts=verdicts, drift=an.drift_dicts(),
                           speedups=speedups, computed=not data.live)


def analyse_now(data: Source, recompute: bool = False) -> None:
    """Fill in what the source lacks on this thread."""
    args = inputs(data, recompute)
    if args is not None:
        apply(data.model, event(data, analyse(**args), recompute))
        data.touch()


class AnalysisWorker:
    def __init__(self, app: App[int]) -> None:
        self.app = app

    def start(self, data: Source, recompute: bool) -> None:
        """Fill in drift and verdicts (recompute: all) off the UI thread."""
        args = inputs(data, recompute)
        if args is not None:
            job = partial(self._thread, id(data), args, recompute)
            self.app.run_worker(job, group="derive", thread=True, exit_on_error=False)

    def _thread(self, source_id: int, args: dict[str, Any], recompute: bool) -> None:
        self.app.post_message(DerivedReady(source_id, analyse(**args), recompute))


def fold_message(data: Source, message: DerivedReady) -> None:
    apply(data.model, event(data, message.analysis, message.recompute))
    data.touch()
