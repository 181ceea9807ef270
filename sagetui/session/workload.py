"""A captured workload replayed (`sagetui run --workload DIR`): a sweep whose points are the
capture's runnable calls, each measured at its own shape on its own tensors (the RunConfig's
inputs_path is the call's file), variants interleaved in rounds as at any point
(session/points.py), with its late figures (accuracy, per head). The report's block is the
workload's (core/workload/tally.py) instead of a sweep's.

The calls are taken in turn, a round at a time: round r of every call before round r + 1 of
any, each call's set-up kept in the runner between its turns (Setup.keep). Measured on an H100,
the host's own pace moved 1.5-fold over seconds (docs/h200-results.md); a call measured whole in
two seconds carried one moment's pace into the totals, so three replays' back-to-back totals
did not agree. Taken in turn, every call's rounds sample the whole replay's pace, and the
totals' intervals, paired by round, hold it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sagetui.core import events as ev
from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.capture.loaded import LoadedCapture, WorkloadCall
from sagetui.core.config import RunConfig, Shape
from sagetui.core.report.model import Fault, Report
from sagetui.core.sweep import collect
from sagetui.core.sweep.plan import Axes
from sagetui.core.workload import tally
from sagetui.session.points import Turns, take_turn
from sagetui.session.sweep import SweepSession

ORDER = "round by round"  # the workload block's `order`: the calls taken in turn


class WorkloadSession(SweepSession):
    def __init__(self, config: RunConfig, capture: LoadedCapture, calls: Sequence[WorkloadCall], *,
                 selection: str | None = None, **kw: Any) -> None:
        # the points are the calls: no axes to plan from (x is each call's q_len)
        super().__init__(config, Axes(q_lens=[], head_dims=[], causal=[]), **kw)
        self.capture, self.selection = capture, selection
        self.calls = tally.replayed_calls(capture, calls)
        self.runnable = [c for c in calls if c.shape is not None]
        self.shapes = [c.shape for c in self.runnable if c.shape is not None]
        self._calls: list[tuple[int, Shape, Turns]] = []  # each call's turns so far
        self._turn_round = 0  # the round the calls are taking their turns in

    def _point_config(self, index: int, shape: Shape) -> RunConfig:
        return self.base.model_copy(update={"shape": shape,
                                            "inputs_path": str(self.runnable[index].file)})

    UNIT = "calls"

    def _measure(self) -> None:
        self._spawn()
        self.base = self.config  # resolved against what the runner found
        calls = [(i, shape, Turns(self._point_config(i, shape))) for i, shape in self._work()]
        self._calls, self._keep = calls, True
        try:
            r = 0
            while not self.cancelled and (due := [c for c in calls if not c[2].done]):
                self._turn_round = r
                for i, shape, turns in due:
                    if self.cancelled:
                        break
                    self.emit(ev.PointStarted(index=i, total=len(self.shapes),
                                              shape=shape.describe(), call=self._call(i),
                                              round=r))
                    take_turn(self, turns, r)
                    if turns.done:
                        self._keep_point(i, shape, turns.run(self))
                r += 1
            if self.cancelled:  # each call measured so far is kept, with the rounds it made
                for i, shape, turns in self._reached():
                    if not turns.done:
                        self._keep_point(i, shape, turns.run(self))
        finally:
            self._keep = False
        # every call's last round in: a stop after it cut nothing short
        self._done = all(turns.done for _, _, turns in calls)

    def _reached(self) -> list[tuple[int, Shape, Turns]]:
        """The calls with a round measured so far."""
        return [c for c in self._calls if c[2].model and c[2].model.completed_rounds]

    def measured_so_far(self) -> str:
        return (f"{len(self._reached())} of {len(self.shapes)} calls with rounds measured so "
                f"far, in round {self._turn_round + 1}")

    def _in_progress(self) -> list[SweepPoint]:
        kept = {p.index for p in self.points}
        return [self._point_of(i, shape, turns.run(self))[0]
                for i, shape, turns in self._reached() if i not in kept]

    def _status(self) -> tuple[str, list[str]]:
        """As a sweep's, but a replay stopped between its rounds keeps every call it reached,
        each with the rounds it made: the detail says so. Before its end (a recovery file)
        it is partial once a call has a round."""
        if self._done:
            return collect.points_status(self.points, len(self.shapes)), []
        if not self.cancelled:
            return ("partial" if self.points or self._reached() else "failed"), []
        kept = len(self.points)
        why = (f"stopped by {self.stopped_by or 'the user'} in round {self._turn_round + 1}: "
               f"{kept} of {len(self.shapes)} calls kept, with the rounds each made")
        return collect.points_status(self.points, len(self.shapes), stopped=True), [why]

    def _group(self, index: int) -> str | None:
        return tally.call_label(self.runnable[index])

    def _call(self, index: int) -> str | None:
        return tally.call_label(self.runnable[index], "#")

    def _points_report(self, base: RunConfig, points: list[SweepPoint], *,
                       environment: dict[str, Any], status: str, faults: list[Fault],
                       detail: list[str]) -> Report:
        block = tally.workload_block(base, self.capture, self.calls, points, self.selection,
                                     order=ORDER)
        return tally.workload_report(base, block, environment=environment,
                                  created=self.created_utc, status=status, faults=faults,
                                  detail=detail)
