"""A sweep over several runners, one per GPU (`--gpus`): each runner is a SweepSession of its
own, pinned to its device (CUDA_VISIBLE_DEVICES in its environment), taking the next point
from one queue when it is free, so a long point on one GPU does not hold the others back.

A point keeps all its variants on one runner, interleaved in ABBA/BAAB rounds there (a
comparison is never split across GPUs: two GPUs differ by more than the effects measured).
The points merge into one report whose structure is a single runner's (core/sweep/collect's
sweep_report); each point's `measured_on` names the runner, GPU and UUID. A runner that dies
is restarted by its own session, and a session that fails outright leaves its queue to the
others: one GPU's fault never stops the rest.

Events are the SweepSession's, each with `runner` (the slot's label) added; one `finished`
at the end.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sagetui.core import events as ev
from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.build_facts import LeftOut
from sagetui.core.config import RunConfig, Shape
from sagetui.core.gpus import Slot
from sagetui.core.report.io import save_report
from sagetui.core.report.model import Fault, Report
from sagetui.core.run.assemble import with_left_out
from sagetui.core.run.fold import apply
from sagetui.core.sweep import collect
from sagetui.core.sweep.plan import Axes, plan
from sagetui.session.errors import NotRunnable
from sagetui.session.runner_session import SETUP_TIMEOUT_S, OnEvent
from sagetui.session.sweep import SweepSession


class PoolWorker(SweepSession):
    """One runner's share: points from the pool's queue until it is empty."""

    def __init__(self, config: RunConfig, axes: Axes, work: queue.Queue,
                 started: threading.Barrier, **kw: Any) -> None:
        super().__init__(config, axes, **kw)
        self.work, self.all_up = work, started

    def _work(self) -> Iterator[tuple[int, Shape]]:
        # every runner up before the first point is taken: a runner that starts first would
        # otherwise take the whole queue of a short sweep
        try:
            self.all_up.wait(timeout=SETUP_TIMEOUT_S)
        except threading.BrokenBarrierError:
            pass  # a runner failed to start: the others go on without it
        while not self.cancelled:
            try:
                yield self.work.get_nowait()
            except queue.Empty:
                return


class PoolSweep:
    """The Session surface that cli.run_session and the console use: run(), report(),
    cancel(), client, recovery_error, _autosave()."""

    def __init__(self, config: RunConfig, axes: Axes, slots: list[Slot], *,
                 on_event: OnEvent | None = None,
                 recovery_path: str | Path | None = None, python: str | None = None,
                 runner_argv: list[str] | None = None,
                 runner_env: dict[str, str] | None = None,
                 indices: list[int] | None = None,
                 left_out: Mapping[str, LeftOut] | None = None) -> None:
        self.config, self.axes, self.slots = config, axes, slots
        self.left_out = dict(left_out or {})  # source variants whose build failed: never ran
        self.shapes = plan(config.shape, axes)
        self.indices = list(range(len(self.shapes))) if indices is None else indices
        self.on_event = on_event or (lambda e: None)
        self.recovery_path = Path(recovery_path) if recovery_path else None
        self.recovery_error: str | None = None
        self.work: queue.Queue = queue.Queue()
        for i in self.indices:
            self.work.put((i, self.shapes[i]))
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()
        self._cancelled = threading.Event()
        self._unrunnable: list[NotRunnable] = []
        self._started = threading.Barrier(len(slots))
        self.workers = [PoolWorker(
            config.model_copy(update={"device": slot.device}), axes, self.work, self._started,
            on_event=self._relay(slot), python=python, runner_argv=runner_argv,
            runner_env={**(runner_env or {}), **slot.runner_env()}) for slot in slots]
        for w, slot in zip(self.workers, slots, strict=True):
            w.slot_label = slot.label
        self._created = self.workers[0].created_utc

    @property
    def client(self) -> Any:
        """The first live runner (run_session kills it on a second Ctrl-C; cancel() stops
        all of them)."""
        return next((w.client for w in self.workers if w.client), None)

    def cancel(self, by: str = "the user") -> None:
        self._cancelled.set()
        for w in self.workers:
            w.cancel(by)

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def _relay(self, slot: Slot) -> OnEvent:
        def relay(e: ev.Event) -> None:
            if isinstance(e, ev.Finished):
                return  # the pool's own comes when every runner is done
            self.on_event(ev.FromRunner(runner=slot.label, event=e))
            if isinstance(e, ev.PointDone):
                self._autosave(self.report())
        return relay

    def run(self) -> Report:
        threads = [threading.Thread(target=self._run_one, args=(w,), daemon=True,
                                    name=f"sagetui-{s.label.replace(' ', '')}")
                   for w, s in zip(self.workers, self.slots, strict=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._unrunnable and len(self._unrunnable) == len(self.workers):
            raise self._unrunnable[0]  # nothing ran anywhere: no report (exit 2)
        report = with_left_out(self.report(), self.left_out)
        self._autosave(report)
        self.on_event(ev.Finished(status=report.status or "failed", report=report))
        return report

    def _run_one(self, w: PoolWorker) -> None:
        try:
            w.run()
        except NotRunnable as exc:
            self._unrunnable.append(exc)
        except Exception as exc:  # a bug in one slot: the others go on
            with w._data:
                apply(w.model, ev.FaultRaised(fault=Fault(
                    kind="session", message=f"{w.slot_label}: {type(exc).__name__}: {exc}"[:500])))
        finally:  # one that never reached the barrier (its runner did not start) frees the
            self._started.abort()  # others; after it passed, breaking it changes nothing

    def points(self) -> list[SweepPoint]:
        return sorted((p for w in self.workers for p in list(w.points)), key=lambda p: p.index)

    def report(self) -> Report:
        points = self.points()
        faults: list[Fault] = [f for p in points for f in p.faults or []]
        for w in self.workers:  # a point cut short, a runner that never came up
            with w._data:
                faults += [f for f in w.model.faults if f not in faults]
        base = next((w.base for w in self.workers if w.points), self.workers[0].base)
        planned = len(self.indices)
        status = collect.points_status(points, planned, stopped=self.cancelled)
        by = next((w.stopped_by for w in self.workers if w.stopped_by), "the user")
        dropped = any(w._dropped for w in self.workers)
        detail = [collect.stopped_detail(by, len(points), planned, dropped=dropped)] \
            if self.cancelled else []
        return collect.sweep_report(base, self.axes, points,
                                        environment=self.environment(points),
                                        created=self._created, status=status, faults=faults,
                                        detail=detail)

    def environment(self, points: list[SweepPoint]) -> dict[str, Any]:
        """The first runner's environment (one that measured a point, else one that started,
        else the host's: every point may have failed), and every runner's slot, GPU and
        points."""
        measured = [w for w in self.workers if w._environment]
        started = [w for w in self.workers if w.hello is not None]
        env = (measured or started or self.workers)[0].ran_on()
        env["runners"] = [{"runner": s.label, "cuda_visible_devices": s.visible,
                           "gpu": w.model.ready.get("gpu"),
                           "points": [p.index for p in points
                                      if p.measured_on and p.measured_on.runner == s.label]}
                          for w, s in zip(self.workers, self.slots, strict=True)]
        return env

    def _autosave(self, report: Report) -> None:
        if self.recovery_path is None:
            return
        with self._save_lock:  # several runners finish points at once
            try:
                self.recovery_path.parent.mkdir(parents=True, exist_ok=True)
                save_report(report, self.recovery_path, overwrite=True)
                self.recovery_error = None
            except OSError as exc:
                self.recovery_error = exc.strerror or str(exc)
