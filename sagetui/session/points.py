"""Measuring one point of a sweep: the session's runner set up again at one RunConfig (the same
process: its `setup` drops the last point's inputs before making these), then rounds in ABBA /
BAAB order through the session's own round machinery. A sweep and the tail study both measure
their points here: one mechanism.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sagetui.core import events as ev
from sagetui.core import scheduler as geo
from sagetui.core.config import RunConfig, Shape
from sagetui.core.samples import RoundSeries
from sagetui.session.collect import Collector
from sagetui.session.errors import SetupFailed
from sagetui.session.faults import gone_fault
from sagetui.session.runner_client import RunnerFault

if TYPE_CHECKING:
    from sagetui.session.conversation import RunnerSession

PASSED_ON = (ev.FaultRaised, ev.LogMessage)  # a point's own progress stays in the session


@dataclass
class PointRun:
    collector: Collector
    setup_error: ev.RunnerError | None  # why setup failed (the runner's error, or its death)
    elapsed_s: float


def measure_point(session: RunnerSession, config: RunConfig) -> PointRun:
    """Set the session's runner up at `config` and run its rounds; the session's collector is
    the point's from here on (the caller restores its own if it has one)."""

    c = Collector(config)
    c.hello = session.collector.hello
    with session._data:
        session.controls.swap(config)
        session.collector = c
    session.round = -1
    t0 = time.monotonic()
    on_event = session.on_event
    session.on_event = lambda e: on_event(e) if isinstance(e, PASSED_ON) else None
    try:
        if session.client is None:  # the last point's runner died
            session._spawn()
        session._setup()
        session._run_rounds()
    except SetupFailed as exc:
        c.status = "failed"
        return PointRun(c, exc.event, time.monotonic() - t0)
    except RunnerFault as f:  # died outside any block (setup): this point is lost, not the rest
        session._record(gone_fault(f.gone, None, None))
        if session.client:
            session.client.stop(timeout=0.5)
        session.client = None
        c.status = "failed"
        return PointRun(c, ev.RunnerError(kind=f.gone.kind, message=f.gone.message),
                        time.monotonic() - t0)
    finally:
        session.on_event = on_event
    c.status = "cancelled" if session.cancelled else (
        "complete" if c.completed_rounds else "failed")
    return PointRun(c, None, time.monotonic() - t0)


def kernel_series(c: Collector, variant: str) -> tuple[str, RoundSeries | None]:
    """The variant's kernel phase (the main loop where it has one, else the whole call) and
    its samples."""
    from sagetui.core.sweep.plan import kernel_phase

    v = c.variants[variant]
    phase = kernel_phase([n for n, _ in v.phases])
    return phase, v.series(phase)


def tail_study(session: RunnerSession, base: str) -> None:
    """Report 000's tail study as a sweep of the baseline variant over the tail plan's shapes
    (synthetic inputs from the run's seed at each shape), each a point of one round of
    `tail_iterations` calls; every row becomes a `tail` event and a `tail_study` row."""
    main_cfg, main_c, main_enabled = session.config, session.collector, session.enabled()
    spec = next(v for v in main_cfg.variants if v.name == base)
    s = main_cfg.shape
    kernel = main_c.variants[base].kernel or "sm89"
    try:
        for sweep, q_len, kv_len in geo.tail_plan(kernel, s.q_len, s.n_kv_len):
            if session.cancelled:
                break
            shape = Shape(**{**s.model_dump(), "q_len": q_len, "kv_len": kv_len})
            cfg = main_cfg.model_copy(update=dict(
                shape=shape, variants=[spec], baseline=None, rounds=1, warmup=1,
                iterations=main_cfg.tail_iterations, tail_study=False, inputs_path=None,
                until_ci_percent=None, max_rounds=None))
            run = measure_point(session, cfg)
            main_c.faults.extend(run.collector.faults)
            row = _tail_row(run.collector, base, sweep, q_len, kv_len)
            if row is not None:
                with session._data:
                    main_c.on_tail_row(row)
                session._emit(row)
    finally:
        with session._data:
            session.controls.swap(main_cfg, main_enabled)
            session.collector = main_c


def _tail_row(c: Collector, base: str, sweep: str, q_len: int,
              kv_len: int) -> ev.TailRow | None:
    v = c.variants[base]
    if v.status != "ok" or not v.rounds:
        return None
    phase, series = kernel_series(c, base)
    if series is None:
        return None
    last = v.blocks[max(v.blocks)]
    return ev.TailRow(variant=base, sweep=sweep, q_len=q_len, kv_len=kv_len,
                      mainloop=series.values.tolist(), phase=phase,
                      checksum=last.checksum or 0.0)
