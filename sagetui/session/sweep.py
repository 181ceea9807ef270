"""A sweep: a list of points, each a RunConfig at one shape, measured one after another in the
same runner process (session/points.py), variants interleaved at each point as rounds do.

A point that fails (out of memory, a shape a kernel refuses, a variant error) is kept as failed
and the sweep goes on; events: `point_start` {index, total, shape}, `point` {index, total,
point: SweepPoint}, then the session's `finished`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sagetui.core import events as ev
from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.config import RunConfig, Shape
from sagetui.core.environment import environment_block
from sagetui.core.gpus import measured_on
from sagetui.core.report.model import Fault, Report
from sagetui.core.run.assemble import build_report
from sagetui.core.sweep import collect
from sagetui.core.sweep.plan import Axes, plan
from sagetui.session.points import PointRun, measure_point
from sagetui.session.session import Session


class SweepSession(Session):
    def __init__(self, config: RunConfig, axes: Axes, **kw: Any) -> None:
        super().__init__(config, **kw)
        self.axes = axes
        self.shapes = plan(config.shape, axes)
        self.base = config
        self.points: list[SweepPoint] = []
        self._environment: dict[str, Any] = {}
        self._done = False
        self._dropped = False  # a point in progress when the sweep was stopped: not kept
        self.slot_label: str | None = None  # the --gpus slot this session's runner holds

    def _work(self) -> Iterator[tuple[int, Shape]]:
        """The points to measure, with their index in the sweep (session/pool.py's workers
        take theirs from a queue shared with the other runners)."""
        yield from enumerate(self.shapes)

    def _measure(self) -> None:
        self._spawn()
        self.base = self.config  # resolved against what the runner found
        for i, shape in self._work():
            if self.cancelled:
                break
            self.emit(ev.PointStarted(index=i, total=len(self.shapes), shape=shape.describe(),
                                       call=self._call(i)))
            run = measure_point(self, self._point_config(i, shape))
            if self.cancelled:  # stopped inside the point: its rounds are cut short, its late
                self._dropped = True  # figures not computed; the report keeps the points
                break  # measured whole
            self._keep_point(i, shape, run)
        self._done = not self.cancelled

    def _keep_point(self, i: int, shape: Shape, run: PointRun) -> None:
        """Point `i` into the sweep; `point` said."""
        pt, rep = self._point_of(i, shape, run)
        with self._data:
            self.points.append(pt)
            if rep is not None and rep.environment:
                self._environment = rep.environment
        self.emit(ev.PointDone(index=i, total=len(self.shapes), point=pt, call=self._call(i)))

    def _point_of(self, i: int, shape: Shape, run: PointRun) -> tuple[SweepPoint, Report | None]:
        """Point `i` as the sweep keeps it (its report, where it ran, its faults), and its
        report (None: its set-up failed)."""
        err = run.setup_error
        rep = None if err else build_report(run.model, run.ending)
        ready, runner = run.model.ready, run.model.runner
        pt = collect.point(i, shape, self.axes, rep,
                           error=err.message if err else None,
                           fault_kind=err.kind if err else None, elapsed_s=run.elapsed_s,
                           measured_on=measured_on(
                               self.slot_label,
                               ready.get("device") or runner.get("device"),
                               ready.get("gpu")), group=self._group(i))
        if err:
            pt = pt.model_copy(update={"faults": [Fault(
                kind=err.kind or "setup", message=err.message or "failed")]
                + list(run.model.faults)})
        return pt, rep

    def _point_config(self, index: int, shape: Shape) -> RunConfig:
        """The RunConfig point `index` is measured at."""
        return self.base.model_copy(update={"shape": shape})

    def _group(self, index: int) -> str | None:
        """Point `index`'s series where the axes do not name it (None: they do)."""
        return None

    def _call(self, index: int) -> str | None:
        """Point `index`'s replayed call, for the progress lines (None: a sweep's point)."""
        return None

    UNIT = "points"  # what the points are, in the status detail ("calls": a workload's)

    def measured_so_far(self) -> str:
        with self._data:
            n = len(self.points)
        return f"{n} of {len(self.shapes)} {self.UNIT} measured so far"

    def _status(self) -> tuple[str, list[str]]:
        """The status from the points (sweep/collect.points_status), and why it is not
        complete where it was stopped."""
        if self.cancelled:
            return (collect.points_status(self.points, len(self.shapes), stopped=True),
                    [collect.stopped_detail(self.stopped_by or "the user", len(self.points),
                                                len(self.shapes), self.UNIT, self._dropped)])
        if not self._done:
            return ("partial" if self.points else "failed"), []
        return collect.points_status(self.points, len(self.shapes)), []

    def ran_on(self) -> dict[str, Any]:
        """The report's environment block: a measured point's, else what the runner said of
        itself and its GPU (hello, ready): a sweep whose every point failed still says where
        it ran."""
        m = self.model
        return dict(self._environment) or environment_block(runner=m.runner, ready=m.ready,
                                                            host=m.host)

    def report(self) -> Report:
        with self._data:
            points = list(self.points) + self._in_progress()
            env = self.ran_on()
            faults = [f for p in points for f in p.faults or []]
            if len(points) < len(self.shapes):  # the point in progress (or cut short)
                faults += [f for f in self.model.faults if f not in faults]
            base = self.base
            status, detail = self._status()
        return self._points_report(base, points, environment=env, status=status,
                                   faults=faults, detail=detail)

    def _in_progress(self) -> list[SweepPoint]:
        """Points measured in part that are not kept yet (a workload's calls between their
        turns), as a recovery file holds them: none for a sweep, whose point in progress is
        measured whole or not kept."""
        return []

    def _points_report(self, base: RunConfig, points: list[SweepPoint], *,
                       environment: dict[str, Any], status: str, faults: list[Fault],
                       detail: list[str]) -> Report:
        return collect.sweep_report(base, self.axes, points, environment=environment,
                                        created=self.created_utc, status=status,
                                        faults=faults, detail=detail)

    def _final_report(self, ending: tuple[str, list[str]]) -> Report:
        return self.report()  # the sweep's: its points (the run's model holds none)
