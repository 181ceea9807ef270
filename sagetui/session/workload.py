"""A captured workload replayed (`sagetui run --workload DIR`): a sweep whose points are the
capture's runnable calls, each measured at its own shape on its own tensors (the RunConfig's
inputs_path is the call's file), variants interleaved in rounds as at any point
(session/points.py), with its late figures (accuracy, per head). The report's block is the
workload's (core/workload/tally.py) instead of a sweep's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.capture.loaded import LoadedCapture, WorkloadCall
from sagetui.core.config import RunConfig, Shape
from sagetui.core.report.model import Fault, Report
from sagetui.core.sweep.plan import Axes
from sagetui.core.workload import tally
from sagetui.session.sweep import SweepSession


class WorkloadSession(SweepSession):
    def __init__(self, config: RunConfig, capture: LoadedCapture, calls: Sequence[WorkloadCall], *,
                 selection: str | None = None, **kw: Any) -> None:
        # the points are the calls: no axes to plan from (x is each call's q_len)
        super().__init__(config, Axes(q_lens=[], head_dims=[], causal=[]), **kw)
        self.capture, self.selection = capture, selection
        self.calls = tally.replayed_calls(capture, calls)
        self.runnable = [c for c in calls if c.shape is not None]
        self.shapes = [c.shape for c in self.runnable if c.shape is not None]

    def _point_config(self, index: int, shape: Shape) -> RunConfig:
        return self.base.model_copy(update={"shape": shape,
                                            "inputs_path": str(self.runnable[index].file)})

    UNIT = "calls"

    def _group(self, index: int) -> str | None:
        return tally.call_label(self.runnable[index])

    def _call(self, index: int) -> str | None:
        return tally.call_label(self.runnable[index], "#")

    def _points_report(self, base: RunConfig, points: list[SweepPoint], *,
                       environment: dict[str, Any], status: str, faults: list[Fault],
                       detail: list[str]) -> Report:
        block = tally.workload_block(base, self.capture, self.calls, points, self.selection)
        return tally.workload_report(base, block, environment=environment,
                                  created=self.created_utc, status=status, faults=faults,
                                  detail=detail)
