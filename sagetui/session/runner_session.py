"""The runner conversation of a run, from spawn to report: the Session (session.py) less its
post-run checks; a sweep (sweep.py) and the tail study (points.py) drive it point by point.

It spawns the runner, sets it up, warms every variant up, runs rounds in ABBA/BAAB order,
writes the recovery file (autosave.py), and survives a runner that dies or hangs: the fault is
recorded with the variant and phase that were running and the runner's last stderr lines, the
completed rounds are kept, and a new runner goes on without the failed variant (the others
keep every round they were asked for: a failed variant never shortens the run).

Everything it learns becomes an event (core/events.py), and `emit` is the one door: the event
is folded into the session's own run model (core/run/fold.py) and then handed to the display
(`on_event`), which folds it into its own. The report is built from the model
(core/run/assemble.py). docs/architecture.md draws the flow.

`run()` blocks; call it from a worker thread. Given a WarmRunner (warm.py), a run takes its
runner from it and gives it back at the end, for the console's next run. The controls
(`cancel`, `kill`, `set_enabled`, `set_baseline`, `set_until_ci`) are thread-safe and never
wait for an autosave (controls.py); they take effect between iterations (cancel), at once
(kill) or at the next round.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar, cast

from sagetui.core import events as ev
from sagetui.core.build_facts import LeftOut
from sagetui.core.config import RunConfig, resolve_auto
from sagetui.core.environment import host_facts
from sagetui.core.report.envelope import created_now
from sagetui.core.report.model import Fault, Report
from sagetui.core.run import figures
from sagetui.core.run.assemble import build_report, with_left_out
from sagetui.core.run.fold import apply, new_model
from sagetui.core.run.model import RunModel
from sagetui.core.run.status import final_status
from sagetui.core.statistics.threshold import resolve_threshold
from sagetui.session.autosave import Autosaver
from sagetui.session.calibration import stored_threshold
from sagetui.session.controls import Controls
from sagetui.session.errors import NotRunnable, SetupFailed, refuse_unrunnable
from sagetui.session.faults import error_fault, gone_fault, nonfinite_fault
from sagetui.session.heap import HeapTrimmer
from sagetui.session.late import late_figures
from sagetui.session.runner_client import RunnerClient, RunnerFault, RunnerGone
from sagetui.session.schedule import more_rounds, round_order
from sagetui.session.spawn import Spawned
from sagetui.session.warm import RunnerSource, WarmRunner

SETUP_TIMEOUT_S = 600.0  # loading a cold CUDA context and building 3 x 1.6 GB inputs
DRIFT_EVERY_S = 0.5  # an analysis carries drift at most this often (scipy's Theil-Sen)
PASSED_ON = (ev.FaultRaised, ev.LogMessage)  # what a sweep point's run hands to the main run

OnEvent = Callable[[ev.Event], None]
E = TypeVar("E", bound=ev.RunnerEvent)


def _warm_imports() -> None:
    with contextlib.suppress(ImportError):
        import scipy.special  # noqa: F401


class RunnerSession:
    def __init__(self, config: RunConfig, *, on_event: OnEvent | None = None,
                 recovery_path: str | Path | None = None, python: str | None = None,
                 runner_argv: list[str] | None = None,
                 runner_env: dict[str, str] | None = None,
                 warm: WarmRunner | None = None, prestarted: Spawned | None = None,
                 left_out: Mapping[str, LeftOut] | None = None) -> None:
        self.controls = Controls(config)
        self.left_out = dict(left_out or {})  # source variants whose build failed: never ran
        self._runners = RunnerSource(python, runner_argv, runner_env, warm, prestarted)
        self.on_event: OnEvent = on_event or (lambda e: None)
        self.recovery_path = Path(recovery_path) if recovery_path else None
        self.model: RunModel = new_model(config)
        self._main: RunModel | None = None  # while a point is measured: the run's own model
        self.hello: ev.Hello | None = None
        # the model's: this thread writes, report() reads (an autosave's for seconds)
        self._data = threading.Lock()
        self._cancel = threading.Event()
        self.stopped_by: str | None = None  # who stopped the run early, for its status
        self._warm: set[str] = set()
        self.client: RunnerClient | None = None
        self.round = -1
        self._last_drift = 0.0
        self._resumed = False
        self._heap = HeapTrimmer()
        self._keep = False  # set-ups the runner keeps to resume (a workload's calls in turn)
        self._resumed_setup = False  # the runner resumed a kept set-up: its variants are warm
        self.created_utc = created_now()
        self._autosaver = self._new_autosaver()

    def _new_autosaver(self) -> Autosaver:
        return Autosaver(self.recovery_path, self.report, self._log)

    # -- thread-safe controls and reads -------------------------------------------------------
    def cancel(self, by: str = "the user") -> None:
        self.stopped_by = self.stopped_by or by
        self._cancel.set()
        client = self.client
        if client is not None:
            client.send(ev.Cancel())

    def kill(self) -> None:
        """Kill the runner now (a runner that does not stop when asked); the run ends with
        what was measured."""
        client = self.client
        if client is not None:
            client.kill()

    @property
    def config(self) -> RunConfig:
        """The run's configuration: resolved for this machine once the runner said hello."""
        return self.controls.config

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def runner_pid(self) -> int | None:
        """The runner's process id; None while none runs."""
        client = self.client
        return client.pid if client is not None else None

    def pending_events(self) -> int:
        """Events the runner sent that this session has not taken yet (a diagnostic)."""
        client = self.client
        return client.pending() if client is not None else 0

    @property
    def rounds_completed(self) -> int:
        return len((self._main or self.model).completed_rounds)

    def measured_so_far(self) -> str:
        """What the run has measured so far, in words (the console's quit prompt)."""
        n = self.rounds_completed
        return f"{n} round{'s' if n != 1 else ''} measured so far"

    @property
    def recovery_error(self) -> str | None:
        """Why the last recovery write failed (None: the file holds the latest report)."""
        return self._autosaver.error

    def set_enabled(self, variant: str, enabled: bool) -> None:
        self.controls.set_enabled(variant, enabled)

    def enabled(self) -> dict[str, bool]:
        return self.controls.enabled()

    def set_baseline(self, variant: str) -> None:
        self.controls.set_baseline(variant)

    @property
    def baseline(self) -> str | None:
        """The baseline verdicts are computed against from the next round on."""
        m = self._main or self.model
        chosen = self.controls.chosen_baseline()
        return chosen if chosen in m.variants else m.baseline

    def set_until_ci(self, target_percent: float | None) -> None:
        """Adaptive stopping from now on (None: back to the fixed number of rounds)."""
        self.controls.set_until_ci(target_percent)

    def report(self) -> Report:
        with self._data:
            return build_report(self._main or self.model)

    def save_recovery(self) -> Report:
        """Write the recovery file now with what was measured (after a session that failed);
        the report it holds."""
        report = self.report()
        self._autosaver.save(report)
        return report

    # -- the one door: every event is folded into the model, then shown ----------------------
    def emit(self, event: ev.Event) -> None:
        with self._data:
            apply(self.model, event)
            if self._main is not None and isinstance(event, PASSED_ON):
                apply(self._main, event)
        if self._main is not None and not isinstance(event, PASSED_ON):
            return  # a point's own progress stays in the session (sweep.py reports points)
        if isinstance(event, ev.RoundDone):  # the display's model adopts these arrays
            event = dataclasses.replace(event, samples=self._round_samples(event.completed))
        try:
            self.on_event(event)
        except Exception as exc:  # a display that fails must not lose the measurements
            with self._data:
                if not any(f.kind == "display" for f in self.model.faults):
                    # the one fault the display cannot hear of: it is the display's own
                    apply(self.model, ev.FaultRaised(fault=Fault(
                        kind="display", message=f"the event handler failed on a {event.NAME} "
                                                f"event: {type(exc).__name__}: {exc}"[:500])))

    def _round_samples(self, names: list[str]) -> dict[str, dict[str, object]]:
        """Views of the completed rounds of these variants (they never change once written)."""
        with self._data:
            return {n: {p: (s.series(), list(s.rounds))
                        for p, s in self.model.variants[n].samples.items() if s.rounds}
                    for n in names if n in self.model.variants}

    def _apply_controls(self) -> None:
        """The baseline the user chose, taken into the measurements (this thread only)."""
        chosen = self.controls.take_baseline()
        if chosen is not None and chosen in self.model.variants and chosen != self.model.baseline:
            self.emit(ev.BaselineChanged(baseline=chosen))

    def run(self) -> Report:
        # scipy (the verdicts' t quantiles, drift) takes most of a second to import: load it
        # while the runner starts rather than between the first rounds
        threading.Thread(target=_warm_imports, name="sagetui-imports", daemon=True).start()
        if not self._resumed:
            self.emit(ev.RunStarted(config=self.config, host=host_facts(),
                                     created_utc=self.created_utc))
        clean, error = False, None
        try:
            self._measure()
            clean = True
        except NotRunnable:
            raise  # nothing was measured: no report, no recovery file (finally stops the runner)
        except RunnerFault as f:
            error = f.gone.message
            self._record(gone_fault(f.gone, None, None))
        except Exception as exc:  # never lose what was measured
            error = f"{type(exc).__name__}: {exc}"
            self._record(Fault(kind="session", message=error))
        finally:  # the runner is kept warm for the next run, or stopped
            self._runners.discard()  # one started early that this run never took
            client, self.client = self.client, None
            if client is not None:  # a clean run's stop overlaps its report (warm.py)
                self._runners.release(client, self.hello, self._loaded_files(), clean,
                                      self._log, background=clean)
            self._autosaver.drain()  # the last round's autosave lands before the final one
        self._apply_controls()  # a baseline chosen in the last round is the report's
        with self._data:
            ending = final_status(self.model, stopped_by=self.stopped_by if self.cancelled
                                  else None, error=error, rounds_planned=self._planned())
        # a source variant whose build failed is in it as never run (a sweep's too)
        report = with_left_out(self._final_report(ending), self.left_out)
        self._autosaver.save(report)
        self._heap.now()
        self.emit(ev.Finished(status=report.status or ending[0],
                               detail=list(report.status_detail or []), report=report))
        return report

    def _final_report(self, ending: tuple[str, list[str]]) -> Report:
        with self._data:
            return build_report(self.model, ending)

    def _planned(self) -> int | None:
        """The rounds the run meant to make: --rounds, or under --until-ci as many as it made
        (it stops itself when its intervals are narrow enough, or at its limit)."""
        cfg = self.config
        return cfg.rounds if cfg.until_ci_percent is None else None

    def _loaded_files(self) -> list[dict[str, object]]:
        """The libraries the run's variants loaded (a warm runner is not reused once one of
        them changed on disk)."""
        m = self._main or self.model
        return [f.model_dump(exclude_none=True) for v in m.variants.values()
                if v.status == "ok" and v.facts.provenance for f in v.facts.provenance.files]

    def _log(self, message: str) -> None:
        self.emit(ev.LogMessage(message=message))

    def _measure(self) -> None:
        """Everything between the runner's start and the report (a sweep measures points)."""
        self._start_runner()
        self._run_rounds()
        if not self._cancel.is_set() and self.model.active():
            self._post_run()

    def _run_rounds(self) -> None:
        r = max(self.model.completed_rounds, default=-1) + 1  # a resumed run's next
        while not self._cancel.is_set() and self._more_rounds(r):
            if not self._run_round(r):
                break
            r += 1

    def _post_run(self) -> None:
        """After the timed rounds: the late figures (Session adds the decomposition check and
        the tail study)."""
        late_figures(self, decompose=None)

    def _more_rounds(self, r: int) -> bool:
        def verdicts():  # type: ignore[no-untyped-def]
            with self._data:
                return list(figures.analysis(self.model, drift=False,
                                             outliers=False).verdicts().values())
        return bool(self.model.active()) and more_rounds(self.controls.config, r, verdicts)

    def _start_runner(self, exclude: set[str] | None = None) -> None:
        self._spawn()
        if exclude is None:
            refuse_unrunnable(self.config, self.hello)
        self._setup(exclude)

    def _spawn(self) -> None:
        self.client, warm_hello = self._runners.start(self._log)
        hello = warm_hello or self._expect(ev.Hello, SETUP_TIMEOUT_S)
        self.hello = hello
        self.emit(hello)
        if self.config.auto or self.config.auto_shape:  # now we know what this machine has
            self.controls.reset(resolve_auto(self.config, hello.device, hello.backends))
            self.emit(ev.ConfigResolved(config=self.config))

    def _setup(self, exclude: set[str] | None = None, reference: bool = True) -> None:
        """Set the runner up for self.config (a runner set up before drops its inputs first),
        its fp32 reference started where the late figures will ask for accuracy (`reference`);
        SetupFailed when the runner refuses (out of memory building inputs, a bad shape)."""
        m = self.model
        assert self.client is not None
        variants = [v for v in self.config.variants if v.name not in (exclude or set())
                    and m.variants[v.name].status in ("pending", "ok")]
        cfg = self.config.model_copy(update={"variants": variants}) if variants else self.config
        self.client.send(ev.Setup(config=cfg.model_dump(mode="json"), reference=reference,
                                  keep=self._keep))
        self._warm.clear()
        while True:
            # one of the kinds asked for (mypy joins them to RunnerEvent): the match is whole
            e = cast(ev.VariantLoaded | ev.Ready | ev.RunnerError, self._expect(
                (ev.VariantLoaded, ev.Ready, ev.RunnerError), SETUP_TIMEOUT_S))
            match e:
                case ev.VariantLoaded():
                    self.emit(e)
                case ev.Ready():
                    self.emit(e)
                    self._resolve_threshold(e)
                    self._resumed_setup = self._keep and e.reused_inputs
                    return
                case ev.RunnerError():
                    raise SetupFailed(e)
                case _:
                    ev.unexpected(e)

    def _resolve_threshold(self, ready: ev.Ready) -> None:
        """--threshold, this machine's calibration, --noise-floor or the default
        (statistics/threshold.py); a calibration is kept per GPU, known from `ready`."""
        cfg = self.config
        stored = stored_threshold(cfg, ready.gpu, ready.device
                                  or (self.hello.device if self.hello else None))
        t = resolve_threshold(cfg.threshold_percent, cfg.noise_floor_percent, stored)
        self.emit(ev.ThresholdResolved(threshold=t.fields()))

    def _expect(self, kinds: type[E] | tuple[type[E], ...], timeout: float) -> E:
        assert self.client is not None
        deadline = time.monotonic() + timeout
        while True:
            e = self.client.take(max(0.0, deadline - time.monotonic()))
            if isinstance(e, kinds):
                return e
            if isinstance(e, ev.RunnerError):
                self._log(e.message)

    def _run_round(self, r: int) -> bool:
        """Run round r; True to go on. A variant that fails (its warm-up, a block, its runner)
        leaves the round to the others: they are measured in full."""
        self._apply_controls()
        self.round = r
        enabled = self.controls.enabled()
        names = [n for n in self.model.active() if enabled.get(n, True)]
        if not names:
            self._log("no variant is enabled: pausing the run")
            self.stopped_by = self.stopped_by or "every variant turned off"
            self._cancel.set()
            return False
        for name in names:
            if name not in self._warm and not self._warmup(name):
                if self._cancel.is_set():
                    return False
        names = [n for n in names if self.model.variants[n].status == "ok"]
        if not names:
            return bool(self.model.active())
        self.emit(ev.RoundStarted(round=r, variants=names))
        failed: set[str] = set()
        for name, half, n in round_order(names, r, self.config.iterations):
            if self._cancel.is_set():
                return False
            if name in failed or self.model.variants[name].status != "ok":
                continue
            if name not in self._warm and not self._warmup(name):  # after a runner restart
                failed.add(name)
                continue
            ok = self._block(name, r, half, n)
            if ok is None:
                return False  # cancelled
            if not ok:
                failed.add(name)
        completed = [n for n in names if n not in failed
                     and self.model.variants[n].status == "ok"]
        self.emit(ev.RoundDone(round=r, completed=completed))
        # drift and speedups (scipy's Theil-Sen, every sample's p50) at most every
        # DRIFT_EVERY_S: rounds of milliseconds do not wait on them
        due = time.monotonic() - self._last_drift >= DRIFT_EVERY_S
        with self._data:
            an = figures.analysis(self.model, drift=due, outliers=False)
        if due:
            self._last_drift = time.monotonic()
        self.emit(ev.AnalysisDone(round=r, verdicts=an.verdict_dicts(),
                                   drift=an.drift_dicts() if due else {},
                                   speedups=an.speedups() if due else {}))
        self._autosaver.after_round()
        self._heap.maybe()  # the round's transient objects' memory, back to the system
        return True

    def _warmup(self, name: str) -> bool:
        assert self.client is not None
        # a resumed set-up's variants ran their warm-up at its first turn: one call each now,
        # for the first-call costs of the switch (its gate measured again), not the whole
        calls = min(1, self.config.warmup) if self._resumed_setup else self.config.warmup
        self.client.send(ev.Warmup(variant=name, calls=calls))
        try:
            e = self._wait_for(name, ev.WarmupDone, self.config.watchdog_s
                               + self.config.warmup * self.config.watchdog_s)
        except RunnerFault as f:
            self._runner_failed(f.gone, name, self.round)
            return False
        if e is None:
            return False
        self._warm.add(name)
        self.emit(e)
        return True

    def _block(self, name: str, r: int, half: int, n: int) -> bool | None:
        assert self.client is not None
        self.client.send(ev.Block(variant=name, round=r, half=half, iterations=n))
        try:
            e = self._wait_for(name, ev.BlockDone, self.config.watchdog_s)
        except RunnerFault as f:
            self._runner_failed(f.gone, name, r)
            return False
        if e is None:
            return False
        if e.cancelled:
            return None
        return True

    def _wait_for(self, name: str, kinds: type[E] | tuple[type[E], ...], watchdog: float, *,
                  shown: tuple[type[ev.RunnerEvent], ...] = (ev.Iterations, ev.BlockDone),
                  fail: bool = True) -> E | None:
        """Stream events (those `shown` go to the display) until one of `kinds`; None after an
        error event, which fails the variant `name` (and restarts a runner that exits with it)
        unless `fail` is off. The watchdog restarts with every event, so a long block that
        streams is never hung."""
        assert self.client is not None
        while True:
            e = self.client.take(watchdog)
            if e.nonfinite:
                self._nonfinite(e)
            if isinstance(e, shown):
                self.emit(e)
            elif isinstance(e, ev.RunnerError):
                self._variant_error(e, fail)
                if fail and e.fatal:
                    self.client.proc.wait(timeout=10)
                    self._restart(exclude={e.variant or name})
                return None
            if isinstance(e, kinds):
                return e

    def _nonfinite(self, e: ev.RunnerEvent) -> None:
        fault = nonfinite_fault(e, self.model.faults)
        if fault is not None:
            self._record(fault)

    def _variant_error(self, e: ev.RunnerError, fail: bool = True) -> None:
        """Keep the runner's error as a fault; `fail`: its variant measures no more."""
        self._record(error_fault(e, self.round if self.round >= 0 else None),
                     fail=e.variant if fail else None)

    def _runner_failed(self, gone: RunnerGone, name: str, r: int | None) -> None:
        if self._cancel.is_set():  # stopped by the user (a second Ctrl-C kills the runner):
            return                 # no fault of the variant's
        self._record(gone_fault(gone, name, r if r is not None and r >= 0 else None),
                     fail=name)
        if not self._cancel.is_set() and self.model.active():
            self._restart(exclude={name})

    def _record(self, fault: Fault, fail: str | None = None) -> None:
        """Keep a fault (the variant `fail` failed with it), and show it."""
        self.emit(ev.FaultRaised(fault=fault, failed=fail if fail in self.model.variants
                                  else None))

    def _restart(self, exclude: set[str]) -> None:
        if self.client:
            self.client.stop(timeout=0.5)
        self._log(f"restarting the runner without {', '.join(sorted(exclude))}")
        self._start_runner(exclude=exclude)

    # -- a sweep's point: its own model, the run's kept aside ---------------------------------
    @contextlib.contextmanager
    def point_model(self, config: RunConfig, model: RunModel | None = None) -> Iterator[RunModel]:
        """Measure with a fresh model of `config` (a sweep's point, a tail-study shape), or
        with `model` again (a workload's call in its next turn): its events fold into it alone,
        but faults and log lines reach the run's model and the display too. The run's model and
        configuration come back after."""
        main_model, main_cfg, main_enabled = self.model, self.config, self.enabled()
        point = model if model is not None else new_model(config, runner=main_model.runner)
        with self._data:
            self.controls.swap(config)
            self._main, self.model = main_model, point
        self.round = -1
        try:
            yield point
        finally:
            with self._data:
                self.controls.swap(main_cfg, main_enabled)
                self.model, self._main = main_model, None
