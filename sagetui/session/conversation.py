"""The runner conversation of a run, from spawn to report: the Session (session.py) less its
post-run checks; a sweep (sweep.py) and the tail study (points.py) drive it point by point.

It spawns the runner, sets it up, warms every variant up, runs rounds in ABBA/BAAB order,
collects every event, updates verdicts after each round, writes the recovery file (autosave.py),
and survives a runner that dies or hangs: the fault is recorded with the variant and phase that
were running and the runner's last stderr lines, the completed rounds are kept, and a new
runner goes on without the failed variant. Its display (`on_event`) gets typed events
(core/events.py): each runner event it takes in, under its own name, and its own.

`run()` blocks; call it from a worker thread. Given a WarmRunner (warm.py), a run takes its
runner from it and gives it back at the end, for the console's next run. The controls
(`cancel`, `kill`, `set_enabled`, `set_baseline`, `set_until_ci`) are thread-safe and never
wait for an autosave (controls.py); they take effect between iterations (cancel), at once
(kill) or at the next round.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sagetui.core import events as ev
from sagetui.core.config import RunConfig, resolve_auto
from sagetui.core.report.model import Fault, Report
from sagetui.session.autosave import Autosaver
from sagetui.session.collect import Collector
from sagetui.session.controls import Controls
from sagetui.session.errors import NotRunnable, SetupFailed, refuse_unrunnable
from sagetui.session.faults import error_fault, gone_fault, nonfinite_fault
from sagetui.session.runner_client import RunnerClient, RunnerFault, RunnerGone
from sagetui.session.schedule import more_rounds, round_order
from sagetui.session.warm import RunnerSource, WarmRunner

SETUP_TIMEOUT_S = 600.0  # loading a cold CUDA context and building 3 x 1.6 GB inputs
DRIFT_EVERY_S = 0.5  # a round_done carries drift at most this often (scipy's Theil-Sen)

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
                 warm: WarmRunner | None = None) -> None:
        self.controls = Controls(config)
        self._runners = RunnerSource(python, runner_argv, runner_env, warm)
        self.on_event: OnEvent = on_event or (lambda e: None)
        self.recovery_path = Path(recovery_path) if recovery_path else None
        self.collector = Collector(config)
        # the collector's: this thread writes, report() reads (an autosave's for seconds)
        self._data = threading.Lock()
        self._cancel = threading.Event()
        self._warm: set[str] = set()
        self.client: RunnerClient | None = None
        self.round = -1
        self._last_drift = 0.0
        self._autosaver = self._new_autosaver()

    def _new_autosaver(self) -> Autosaver:
        return Autosaver(self.recovery_path, self.report, self._log)

    # -- thread-safe controls and reads -------------------------------------------------------
    def cancel(self) -> None:
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
        return len(self.collector.completed_rounds)

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
    def baseline(self) -> str:
        """The baseline verdicts are computed against from the next round on."""
        chosen = self.controls.chosen_baseline()
        return chosen if chosen in self.collector.variants else self.collector.baseline

    def set_until_ci(self, target_percent: float | None) -> None:
        """Adaptive stopping from now on (None: back to the fixed number of rounds)."""
        self.controls.set_until_ci(target_percent)

    def report(self) -> Report:
        with self._data:
            return self.collector.report()

    def save_recovery(self) -> Report:
        """Write the recovery file now with what was measured (after a session that failed);
        the report it holds."""
        report = self.report()
        self._autosaver.save(report)
        return report

    # -- the run --------------------------------------------------------------------------------
    def _emit(self, event: ev.Event) -> None:
        try:
            self.on_event(event)
        except Exception as exc:  # a display that fails must not lose the measurements
            if not any(f.kind == "display" for f in self.collector.faults):
                self.collector.faults.append(Fault(
                    kind="display", message=f"the event handler failed on a {event.NAME} "
                                            f"event: {type(exc).__name__}: {exc}"[:500]))

    def _apply_controls(self) -> None:
        """The baseline the user chose, taken into the measurements (this thread only)."""
        chosen = self.controls.take_baseline()
        if chosen is not None and chosen in self.collector.variants:
            with self._data:
                self.collector.baseline = chosen

    def run(self) -> Report:
        # scipy (the verdicts' t quantiles, drift) takes most of a second to import: load it
        # while the runner starts rather than between the first rounds
        threading.Thread(target=_warm_imports, name="sagetui-imports", daemon=True).start()
        clean = False
        try:
            self._measure()
            clean = True
        except NotRunnable:
            raise  # nothing was measured: no report, no recovery file (finally stops the runner)
        except RunnerFault as f:
            self.collector.status = "failed"
            self._record(gone_fault(f.gone, None, None))
        except Exception as exc:  # never lose what was measured
            self.collector.status = "failed"
            self._record(Fault(kind="session", message=f"{type(exc).__name__}: {exc}"))
        finally:  # the runner is kept warm for the next run, or stopped
            client, self.client = self.client, None
            if client is not None:
                self._runners.release(client, self.collector, clean, self._log)
            self._autosaver.drain()  # the last round's autosave lands before the final one
        self._apply_controls()  # a baseline chosen in the last round is the report's
        report = self.report()
        self._autosaver.save(report)
        self._autosaver.close()
        self._emit(ev.Finished(status=self.collector.status, report=report))
        return report

    def _log(self, message: str) -> None:
        self._emit(ev.LogMessage(message=message))

    def _measure(self) -> None:
        """Everything between the runner's start and the report (a sweep measures points)."""
        self._start_runner()
        self._run_rounds()
        if not self._cancel.is_set() and self.collector.active():
            self._post_run()
        self.collector.status = "cancelled" if self._cancel.is_set() else (
            "complete" if self.collector.completed_rounds else "failed")

    def _run_rounds(self) -> None:
        r = max(self.collector.completed_rounds, default=-1) + 1  # a resumed run's next
        while not self._cancel.is_set() and self._more_rounds(r):
            if not self._run_round(r):
                break
            r += 1

    def _post_run(self) -> None:
        """After the timed rounds: nothing more here (Session checks correctness)."""

    def _more_rounds(self, r: int) -> bool:
        return bool(self.collector.active()) and more_rounds(
            self.controls.config, r, lambda: list(self.collector.verdicts().values()))

    def _start_runner(self, exclude: set[str] | None = None) -> None:
        self._spawn()
        if exclude is None:
            refuse_unrunnable(self.config, self.collector.hello)
        self._setup(exclude)

    def _spawn(self) -> None:
        self.client, warm_hello = self._runners.start(self._log)
        hello = warm_hello or self._expect(ev.Hello, SETUP_TIMEOUT_S)
        if self.config.auto or self.config.auto_shape:  # now we know what this machine has
            chosen = self.collector.baseline  # set before the run: it outlives the rebuild
            self.controls.reset(resolve_auto(self.config, hello.device, hello.backends))
            with self._data:
                self.collector = Collector(self.config)
                if chosen in self.collector.variants:
                    self.collector.baseline = chosen
        self.collector.hello = hello
        self._emit(hello)

    def _setup(self, exclude: set[str] | None = None) -> None:
        """Set the runner up for self.config (a runner set up before drops its inputs first);
        SetupFailed when the runner refuses (out of memory building inputs, a bad shape)."""
        c = self.collector
        assert self.client is not None
        variants = [v for v in self.config.variants if v.name not in (exclude or set())
                    and c.variants[v.name].status in ("pending", "ok")]
        cfg = self.config.model_copy(update={"variants": variants}) if variants else self.config
        self.client.send(ev.Setup(config=cfg.model_dump(mode="json")))
        self._warm.clear()
        while True:
            e = self._expect((ev.VariantLoaded, ev.Ready, ev.RunnerError), SETUP_TIMEOUT_S)
            match e:
                case ev.VariantLoaded():
                    with self._data:
                        c.on_variant(e)
                    if e.status != "ok":
                        c.faults.append(Fault(kind="variant", message=e.error or "failed",
                                              variant=e.name))
                    self._emit(e)
                case ev.Ready():
                    c.ready = e
                    self._emit(e)
                    return
                case ev.RunnerError():
                    raise SetupFailed(e)

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
        """Run round r; True to go on."""
        self._apply_controls()
        c = self.collector
        self.round = r
        enabled = self.controls.enabled()
        names = [n for n in c.active() if enabled.get(n, True)]
        if not names:
            self._log("no variant is enabled: pausing the run")
            return False
        for name in names:
            if name not in self._warm and not self._warmup(name):
                return not self._cancel.is_set()
        self._emit(ev.RoundStarted(round=r, variants=names))
        failed: set[str] = set()
        for name, half, n in round_order(names, r, self.config.iterations):
            if self._cancel.is_set():
                return False
            if name in failed or self.collector.variants[name].status != "ok":
                continue
            if name not in self._warm and not self._warmup(name):  # after a runner restart
                failed.add(name)
                continue
            ok = self._block(name, r, half, n)
            if ok is None:
                return False  # cancelled
            if not ok:
                failed.add(name)
        with self._data:
            c.complete_round(r, [n for n in names if n not in failed])
        # drift and speedups (scipy's Theil-Sen, every sample's p50) at most every
        # DRIFT_EVERY_S: rounds of milliseconds do not wait on them
        due = time.monotonic() - self._last_drift >= DRIFT_EVERY_S
        an = c.analysis(drift=due)
        if due:
            self._last_drift = time.monotonic()
        self._emit(ev.RoundDone(round=r, verdicts=an.verdict_dicts(),
                                drift=an.drift_dicts() if due else {},
                                speedups=an.speedups() if due else {}))
        self._autosaver.after_round()
        return True

    def _warmup(self, name: str) -> bool:
        assert self.client is not None
        self.client.send(ev.Warmup(variant=name, calls=self.config.warmup))
        try:
            e = self._wait_for(name, ev.WarmupDone, self.config.watchdog_s
                               + self.config.warmup * self.config.watchdog_s)
        except RunnerFault as f:
            self._runner_failed(f.gone, name, None)
            return False
        if e is None:
            return False
        self._warm.add(name)
        self._emit(e)
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

    def _wait_for(self, name: str, kinds: type[E] | tuple[type[E], ...],
                  watchdog: float) -> E | None:
        """Stream events until one of `kinds`; None if the variant failed with an error event.
        The watchdog restarts with every event, so a long block that streams is never hung."""
        c = self.collector
        assert self.client is not None
        while True:
            e = self.client.take(watchdog)
            if e.nonfinite:
                self._nonfinite(e)
            match e:
                case ev.Iterations():
                    with self._data:
                        c.on_iterations(e)
                    self._emit(e)
                case ev.BlockDone():
                    with self._data:
                        c.on_block(e)
                    self._emit(e)
                case ev.RunnerError():
                    self._variant_error(e)
                    if e.fatal:
                        self.client.proc.wait(timeout=10)
                        self._restart(exclude={e.variant or name})
                    return None
            if isinstance(e, kinds):
                return e

    def _nonfinite(self, e: ev.RunnerEvent) -> None:
        fault = nonfinite_fault(e, self.collector.faults)
        if fault is not None:
            self._record(fault)

    def _variant_error(self, e: ev.RunnerError) -> None:
        self._record(error_fault(e, self.round if self.round >= 0 else None), fail=e.variant)

    def _runner_failed(self, gone: RunnerGone, name: str, r: int | None) -> None:
        if self._cancel.is_set():  # stopped by the user (a second Ctrl-C kills the runner):
            return                 # no fault of the variant's
        self._record(gone_fault(gone, name, r), fail=name)
        if not self._cancel.is_set() and self.collector.active():
            self._restart(exclude={name})

    def _record(self, fault: Fault, fail: str | None = None) -> None:
        """Keep a fault (the variant `fail` failed with it), then show it."""
        with self._data:
            self.collector.fault(fault, fail)
        self._emit(ev.FaultRaised(fault=fault))

    def _restart(self, exclude: set[str]) -> None:
        if self.client:
            self.client.stop(timeout=0.5)
        self._log(f"restarting the runner without {', '.join(sorted(exclude))}")
        self._start_runner(exclude=exclude)
