"""The Sweep tab's part of the app: which sweep the current source shows (a saved report's, or
the live SweepSession's points as they finish), and the session a run starts (a SweepSession
when the console was opened by `sagetui sweep --console`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sagetui.core.sweep import Axes
from sagetui.core.sweep_model import SweepPoint
from sagetui.session.session import Session

from .sweep_view import SweepView
from .widgets.sweep_plot import SweepPlot
from .widgets.sweep_table import SweepTable

if TYPE_CHECKING:
    from .app import SageTUI
    from .run_data import RunData
    from .view_context import ViewContext


class SweepTab:
    sweep_axes: Axes | None = None  # set: the console's runs are sweeps over these axes
    _live_sweep: SweepView | None = None
    _saved_sweeps: dict[int, tuple[Any, SweepView | None]] | None = None

    def make_session(self: SageTUI, config: Any, **kw: Any) -> Session:
        if self.sweep_axes is None:
            return Session(config, **kw)
        from sagetui.session.sweep import SweepSession

        self._live_sweep = SweepView(x_axis=self.sweep_axes.x_axis,
                                     variants=[v.name for v in config.variants])
        return SweepSession(config, self.sweep_axes, **kw)

    def sweep_of(self: SageTUI, data: RunData) -> SweepView | None:
        if data is self.live and self._live_sweep is not None and data.report is None:
            return self._live_sweep
        cache = self._saved_sweeps = self._saved_sweeps or {}
        hit = cache.get(id(data))
        if hit is None or hit[0] is not data.report:  # a live run's final report replaces it
            hit = (data.report, SweepView.from_report(data.report))
            cache[id(data)] = hit
        return hit[1] or (self._live_sweep if data is self.live else None)

    def on_sweep_point(self: SageTUI, d: dict[str, Any]) -> None:
        point: SweepPoint = d["point"]
        if self._live_sweep is not None:
            self._live_sweep.add(point, d.get("total"))
        state = point.status if point.status != "failed" else f"failed: {point.error}"
        self.log_line(f"sweep point {d['index'] + 1}/{d.get('total')}: "
                      f"{point.shape.describe()} {state}",
                      "information" if point.status == "ok" else "error")

    def _sync_sweep(self: SageTUI, ctx: ViewContext) -> None:
        view = self.sweep_of(self.data)
        self.query_one(SweepTable).sync(view)
        if view is not None:
            self.query_one(SweepPlot).sync(view, ctx)
