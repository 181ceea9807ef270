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
        _started(session, point, config)
        t0 = time.monotonic()
        err: ev.RunnerError | None = None
        try:
            _runner_up(session)
            session._setup(reference=late)
            session._run_rounds()
            if late and not session.cancelled and point.active():
                late_figures(session, decompose=None)
        except SetupFailed as exc:
            err = exc.event
        except RunnerFault as f:
            err = _lost_runner(session, f)
        return PointRun(point, err, time.monotonic() - t0, _ending(session, point, config, err))


@dataclass
class Turns:
    """A workload's call measured in turn with the others, a round at a time
    (session/workload.py): its model across its turns, the time they took, why its set-up
    failed, and whether its last round and late figures are in."""

    config: RunConfig
    model: RunModel | None = None
    elapsed_s: float = 0.0
    setup_error: ev.RunnerError | None = None
    done: bool = False

    def run(self, session: RunnerSession) -> PointRun:
        """What its turns measured, as a point measured whole is (its status by the same
        rules: a replay stopped before its last turn leaves it partial)."""
        assert self.model is not None
        return PointRun(self.model, self.setup_error, self.elapsed_s,
                        _ending(session, self.model, self.config, self.setup_error))


def take_turn(session: RunnerSession, turns: Turns, r: int) -> None:
    """Round `r` of the call: its set-up resumed in the runner (made, and kept there, at its
    first turn), its variants warmed up (whole at its first turn, a call each once resumed)
    and the round run; then, where it makes no more
    rounds, its late figures. A set-up that fails, or a runner that dies outside a block, ends
    the call; the other calls go on."""
    with session.point_model(turns.config, turns.model) as point:
        if turns.model is None:
            turns.model = point
            _started(session, point, turns.config)
        t0 = time.monotonic()
        try:
            _runner_up(session)
            cfg = turns.config  # its reference starts with its last planned round's set-up
            session._setup(reference=cfg.until_ci_percent is None and r + 1 >= cfg.rounds)
            if not session._run_round(r) and not session.cancelled:
                turns.done = True  # no variant left to measure
            elif not session.cancelled and not session._more_rounds(r + 1):
                if point.active():
                    late_figures(session, decompose=None)
                turns.done = not session.cancelled
        except SetupFailed as exc:
            turns.setup_error, turns.done = exc.event, True
        except RunnerFault as f:
            turns.setup_error, turns.done = _lost_runner(session, f), True
        finally:
            turns.elapsed_s += time.monotonic() - t0


def _started(session: RunnerSession, point: RunModel, config: RunConfig) -> None:
    main = session._main or point
    session.emit(ev.RunStarted(config=config, created_utc=main.created_utc or "",
                                host=dict(main.host)))


def _runner_up(session: RunnerSession) -> None:
    if session.client is None:  # the last point's runner died
        session._spawn()


def _lost_runner(session: RunnerSession, f: RunnerFault) -> ev.RunnerError:
    """The runner died outside a block (set-up): this point is lost, the rest not."""
    session._record(gone_fault(f.gone, None, None))
    if session.client:
        session.client.stop(timeout=0.5)
    session.client = None
    return ev.RunnerError(kind=f.gone.kind, message=f.gone.message)


def _ending(session: RunnerSession, point: RunModel, config: RunConfig,
            err: ev.RunnerError | None) -> tuple[str, list[str]]:
    return final_status(point, error=err.message if err else None,
                        stopped_by="the user" if session.cancelled else None,
                        rounds_planned=config.rounds)


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
