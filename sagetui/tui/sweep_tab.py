"""The Sweep tab: which sweep the current source shows (a saved report's, or the live
SweepSession's points as they finish), and the session a run starts (a SweepSession when the
console was opened by `sagetui sweep --console`, a WorkloadSession when by `sagetui --workload
DIR`: each captured call a point). A plain object the app composes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from sagetui.core import events as ev
from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.config import RunConfig
from sagetui.core.sweep.plan import Axes

if TYPE_CHECKING:
    from sagetui.core.capture.loaded import LoadedCapture, WorkloadCall
    from sagetui.core.report.model import Report
    from sagetui.session.session import Session

from sagetui.tui.source import Source
from sagetui.tui.sweep_view import SweepView
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.sweep_panel import SweepPanel
from sagetui.tui.widgets.sweep_table import NO_SWEEP


class WorkloadPlan(NamedTuple):
    """A capture the console's runs replay (cli/workload.workload_input checked it)."""

    capture: LoadedCapture
    calls: list[WorkloadCall]
    selection: str | None


class SweepTab:
    def __init__(self, axes: Axes | None, live: Source | None,
                 workload: WorkloadPlan | None = None) -> None:
        self.axes = axes  # set: the console's runs are sweeps over these axes
        self.workload = workload  # set: ... replays of this capture's calls
        self.live = live
        # the live run's report once it finished (the app's run control holds it)
        self.final_report: Callable[[], Report | None] | None = None
        self.live_sweep: SweepView | None = None
        # per saved source: the report its sweep was built from, and that sweep
        self._saved: dict[int, tuple[Any, SweepView | None]] = {}

    def make_session(self, config: RunConfig, **kw: Any) -> Session:
        if self.workload is not None:
            from sagetui.session.workload import WorkloadSession

            w = self.workload
            runnable = [c for c in w.calls if c.shape is not None]  # the points, in order
            self.live_sweep = SweepView(variants=[v.name for v in config.variants],
                                        workload=True, planned=len(runnable),
                                        calls={i: c.index for i, c in enumerate(runnable)})
            return WorkloadSession(config, w.capture, w.calls, selection=w.selection, **kw)
        if self.axes is None:
            from sagetui.session.session import Session

            return Session(config, **kw)
        from sagetui.session.sweep import SweepSession

        self.live_sweep = SweepView(x_axis=self.axes.x_axis,
                                    variants=[v.name for v in config.variants])
        return SweepSession(config, self.axes, **kw)

    def sweep_of(self, data: Source) -> SweepView | None:
        report = data.report
        if data is self.live and self.live_sweep is not None:
            final = self.final_report() if self.final_report is not None else None
            if self.workload is None or final is None or final.workload is None:
                return self.live_sweep
            report = final  # a finished workload's view has its totals: its report's
        hit = self._saved.get(id(data))
        if hit is None or hit[0] is not report:  # a live run's final report replaces it
            hit = (report, SweepView.from_report(report))
            self._saved[id(data)] = hit
        return hit[1] or (self.live_sweep if data is self.live else None)

    def on_point(self, e: ev.PointDone) -> None:
        point: SweepPoint = e.point
        if self.live_sweep is not None:
            self.live_sweep.add(point, e.total)

    def empty(self, data: Source) -> tuple[str, ...]:
        """What the tab says before its console's first sweep or replay: that r runs it (a
        user who ran `sagetui sweep --console` was once told to run that)."""
        if data is not self.live or (self.axes is None and self.workload is None):
            return NO_SWEEP
        if self.workload is not None:
            n = sum(c.shape is not None for c in self.workload.calls)
            return ("no call replayed yet:", f"r replays the capture's {n} calls in turn,",
                    "a round at a time: each shown here after its last round")
        assert self.axes is not None
        return ("no point measured yet:", f"r runs the sweep over {self.axes.x_axis},",
                "each point shown here as it finishes")

    def sync(self, data: Source, ctx: ViewContext, panel: SweepPanel) -> None:
        panel.sync(self.sweep_of(data), ctx, self.empty(data))
