"""Measuring one point of a sweep: the session's runner set up again at one RunConfig (the same
process: its `setup` drops the last point's inputs before making these), then rounds in ABBA /
BAAB order through the session's own round machinery, into a run model of the point's own
(conversation.point_model). A sweep and the tail study both measure their points here: one
mechanism.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sagetui.core import events as ev
from sagetui.core import scheduler
from sagetui.core.config import RunConfig, Shape
from sagetui.core.run import figures
from sagetui.core.run.model import RunModel
from sagetui.core.run.status import final_status
from sagetui.core.sweep.plan import kernel_phase
from sagetui.session.errors import SetupFailed
from sagetui.session.faults import gone_fault
from sagetui.session.late import late_figures
from sagetui.session.runner_client import RunnerFault

if TYPE_CHECKING:
    from sagetui.session.runner_session import RunnerSession


@dataclass
class PointRun:
    model: RunModel
    setup_error: ev.RunnerError | None  # why setup failed (the runner's error, or its death)
    elapsed_s: float
    ending: tuple[str, list[str]]  # its status and why (build_report's `ending`)


def measure_point(session: RunnerSession, config: RunConfig, *,
                  late: bool = True) -> PointRun:
    """Set the session's runner up at `config` and run its rounds into a model of its own,
    then its late figures (each point's accuracy, its inputs' sha256) unless `late` is off."""
    with session.point_model(config) as point:
        main = session._main or point
        session.emit(ev.RunStarted(config=config, created_utc=main.created_utc or "",
                                    host=dict(main.host)))
        t0 = time.monotonic()
        err: ev.RunnerError | None = None
        try:
            if session.client is None:  # the last point's runner died
                session._spawn()
            session._setup(reference=late)
            session._run_rounds()
            if late and not session.cancelled and point.active():
                late_figures(session, decompose=None)
        except SetupFailed as exc:
            err = exc.event
        except RunnerFault as f:  # died outside a block (setup): this point is lost, the rest not
            session._record(gone_fault(f.gone, None, None))
            if session.client:
                session.client.stop(timeout=0.5)
            session.client = None
            err = ev.RunnerError(kind=f.gone.kind, message=f.gone.message)
        status, detail = final_status(point, error=err.message if err else None,
                                      stopped_by="the user" if session.cancelled else None,
                                      rounds_planned=config.rounds)
        return PointRun(point, err, time.monotonic() - t0, (status, detail))


def tail_study(session: RunnerSession, base: str) -> None:
    """The phase-breakdown report's tail study as a sweep of the baseline variant over the tail
    plan's shapes (synthetic inputs from the run's seed at each shape), each a point of one round of
    `tail_iterations` calls; every row becomes a `tail` event and a `tail_study` row."""
    main_cfg, m = session.config, session.model
    spec = next(v for v in main_cfg.variants if v.name == base)
    s = main_cfg.shape
    kernel = figures.kernel(m, m.variants[base]) or scheduler.FALLBACK_KERNEL
    for sweep, q_len, kv_len in scheduler.tail_plan(kernel, s.q_len, s.n_kv_len):
        if session.cancelled:
            break
        shape = Shape(**{**s.model_dump(), "q_len": q_len, "kv_len": kv_len})
        cfg = main_cfg.model_copy(update=dict(
            shape=shape, variants=[spec], baseline=None, rounds=1, warmup=1,
            iterations=main_cfg.tail_iterations, tail_study=False, inputs_path=None,
            until_ci_percent=None, max_rounds=None))
        run = measure_point(session, cfg, late=False)  # its rows need no accuracy
        row = _tail_row(run.model, base, sweep, q_len, kv_len)
        if row is not None:
            session.emit(row)


def _tail_row(point: RunModel, base: str, sweep: str, q_len: int,
              kv_len: int) -> ev.TailRow | None:
    v = point.variants[base]
    if v.status != "ok" or not v.completed_rounds:
        return None
    phase = kernel_phase([n for n, _ in v.phases])
    series = v.samples.get(phase)
    if series is None or series.rounds != v.completed_rounds:
        return None
    last = v.last_block()
    return ev.TailRow(variant=base, sweep=sweep, q_len=q_len, kv_len=kv_len,
                      mainloop=series.values.tolist(), phase=phase,
                      checksum=(last.checksum if last else None) or 0.0)
