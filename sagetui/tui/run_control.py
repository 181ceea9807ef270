"""Starting, stopping and quitting a live run: the console's side of the session's thread.

A plain object the app composes and delegates its run actions to: the run is a Session whose
blocking `run()` happens in a Textual thread worker; its events come back as messages
(session_bridge.py) and are folded into the live source's run model here, by the same fold the
session uses for its own (core/run/fold.py): the panels and the session's report read equal
models. Stopping cancels the session (it stops between iterations). Asking before a key loses
a result (q, and r or a over an unexported one) is unsaved_guard.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App
from textual.worker import Worker, WorkerState

from sagetui.core import events as ev
from sagetui.core import format as fmt
from sagetui.core.blocks.profile import MainloopProfile
from sagetui.core.build_facts import LeftOut
from sagetui.core.config import RunConfig
from sagetui.core.eventlog import LogLine, log_line
from sagetui.core.report.model import Report
from sagetui.core.run.assemble import with_profiles
from sagetui.core.run.fold import apply, new_model
from sagetui.session.calibration import (
    aa_config,
    clear,
    conclude,
    conclude_points,
    describe_entry,
    earlier,
    entries,
)

if TYPE_CHECKING:
    from sagetui.session.session import Session
    from sagetui.session.warm import WarmRunner

from sagetui.tui.formatting import parse_until_ci, until_ci_line, until_ci_problem
from sagetui.tui.modals import ConfirmScreen, PathPromptScreen
from sagetui.tui.session_bridge import EventBridge
from sagetui.tui.source import Source

STOP_GRACE_S = 10.0  # stopping: a long warm-up or setup gets this long to notice the cancel


class ConsoleView(Protocol):
    """What the run control needs of the console beside Textual's App."""

    def write_log(self, line: LogLine) -> None: ...
    def sync_panels(self) -> None: ...
    def show_live(self) -> None: ...
    def live_ready(self) -> None: ...  # the live run's variants are known: fix the selection
    def rederive(self, data: Source) -> None: ...  # verdicts again (a new threshold)


class RunControl:
    def __init__(self, app: App[int], view: ConsoleView, config: RunConfig | None,
                 live: Source | None, recovery_path: Path | None, *,
                 make_session: Callable[..., Session] | None = None,
                 on_point: Callable[[ev.PointDone], None] | None = None) -> None:
        self.app, self.view = app, view
        # Session(config, on_event=, recovery_path=); imported when a run starts, not at the
        # first paint
        self.make_session = make_session or _session
        self.on_point = on_point  # a sweep's point finished (sweep_tab.py)
        # source variants (watch_flow.py): `prepare` builds them first (True: the build starts
        # the run when done), `on_finished` hears each run's report
        self.prepare: Callable[[], bool] = lambda: False
        self.on_finished: Callable[[Report], None] = lambda _report: None
        self.on_reconfigure: Callable[[], None] = lambda: None
        # the source variants whose last build failed: the run's report lists them, never run
        self.left_out: dict[str, LeftOut] = {}
        self.config = config
        self.live = live
        self.recovery_path = recovery_path
        self.session: Session | None = None
        self.final_report: Report | None = None
        self.result: Report | None = None  # the last measuring run's final report
        self.resolved_config: RunConfig | None = None  # the last run's, once the runner said
        self.calibrating: RunConfig | None = None  # during a calibration: the one to return to
        self.run_recovery: Path | None = None  # the recovery file of the latest run
        self.run_stem = f"sagetui-{time.strftime('%Y%m%d-%H%M%S')}"
        self.quitting = False
        self._runs = 0
        self._started = 0  # moves with every start and resume: a stop's kill timer is its own
        self.profiles: list[MainloopProfile] = []  # made in this console (p): kept by runs
        self.warm: WarmRunner | None = None  # the runner between runs (made at the first run)
        # a stopped run that can go on (resume), with the configuration it was started with
        self.stopped: tuple[Session, RunConfig] | None = None

    @property
    def running(self) -> bool:
        return self.session is not None

    def log(self, text: str, severity: Any = "information") -> None:
        self.view.write_log(LogLine(text, severity))

    def greet(self) -> None:
        """The Log's first line in a console that can run: what a run would measure."""
        cfg = self.config
        if self.live is None or cfg is None:
            return
        auto = {(True, True): " (auto: a GPU node upgrades it to SageAttention at the "
                              "reference shape)",
                (True, False): " (auto: a GPU node upgrades it to SageAttention)",
                (False, True): " (auto: a GPU node runs it at the reference shape)",
                }.get((cfg.auto, cfg.auto_shape), "")
        self.log(f"ready: {', '.join(v.spec for v in cfg.variants)} at {cfg.shape.describe()}, "
                 f"{cfg.rounds} rounds x {cfg.iterations} iterations{auto}; press r to run")

    # -- start and stop ---------------------------------------------------------------------
    def toggle(self) -> None:
        if self.running:
            self.stop()
        else:
            self.start()

    def start(self) -> None:
        if self.config is None or self.live is None:
            self.app.notify("This console shows saved reports; start `sagetui` without `view` "
                            "to run.", severity="warning")
            return
        if self.quitting or self.prepare():
            return
        data, cfg = self.live, self.config
        if self.calibrating is None and data.variants and not any(
                data.is_enabled(n) for n in data.variants):
            line = "every variant is off: t turns the selected one on; nothing was started"
            self.log(line, "warning")
            self.app.notify(line, severity="warning")
            return
        self.view.show_live()
        self.final_report = None
        self.run_stem = f"sagetui-{time.strftime('%Y%m%d-%H%M%S')}"
        self._runs += 1
        self.stopped = None
        recovery = self.recovery_path
        if recovery is not None and self._runs > 1:  # never overwrite an earlier run's file
            recovery = recovery.with_name(f"{recovery.stem}-{self._runs}{recovery.suffix}")
        self.run_recovery = recovery
        session = self.make_session(cfg, on_event=EventBridge(self.app.post_message),
                                    recovery_path=recovery, warm=self._warm_runner(),
                                    # a calibration's A/A run is of the baseline alone
                                    left_out=self.left_out if self.calibrating is None else {})
        for name in data.variants:  # toggles and baseline chosen before the run
            session.set_enabled(name, data.is_enabled(name))
        if data.baseline and data.baseline != cfg.baseline_name:
            session.set_baseline(data.baseline)
        baseline = data.baseline
        data.reset(new_model(cfg))  # this run's model: its events fold in from here
        if baseline in data.variants:
            apply(data.model, ev.BaselineChanged(baseline=baseline))
        data.clock.start(cfg.round_limit, cfg.iterations, cfg.until_ci_percent)
        self.session = session
        self._started += 1
        self.log("run started" + (
            f"; recovery file {recovery} (written after every round)" if recovery else ""))
        self.app.run_worker(partial(session.run), name="session", group="run", thread=True,
                            exit_on_error=False)
        self.view.sync_panels()

    def _warm_runner(self) -> WarmRunner:
        if self.warm is None:
            from sagetui.session.warm import WarmRunner

            self.warm = WarmRunner()
        return self.warm

    def resumable(self) -> tuple[int, int] | None:
        """(rounds kept, rounds planned) of a stopped run that can go on: its configuration
        is still the console's; None otherwise."""
        if self.stopped is None or self.running or self.stopped[1] is not self.config:
            return None
        session = self.stopped[0]
        return session.rounds_completed, session.config.round_limit

    def resume(self) -> None:
        """Go on with the stopped run: its rounds are kept, the next ones join them."""
        kept = self.resumable()
        if kept is None or self.stopped is None or self.live is None:
            return
        session, _ = self.stopped
        self.stopped = None
        self.live.clock.finished = None  # live again: its `resumed` event folds in
        self.final_report = self.result = None
        self.session = session
        self._started += 1
        self.view.show_live()
        self.log(f"resuming the stopped run: its {kept[0]} rounds are kept; rounds "
                 f"{kept[0] + 1}-{kept[1]} follow")
        self.app.run_worker(session.resume, name="session", group="run", thread=True,
                            exit_on_error=False)
        self.view.sync_panels()

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        session = self.session
        if session is None or self.live is None:
            return
        session.cancel()
        if self.quitting and self.warm is not None:
            self.warm.shut()  # no runner outlives the console
        self.live.clock.stopping = True
        self.log("stopping: the runner stops between iterations; what was measured is kept")
        self.app.set_timer(grace_s, partial(self._kill_if_running, session, self._started))

    def _kill_if_running(self, session: Session, started: int) -> None:
        """A stop's timer: the runner of that very stop, still running, is killed. A run
        resumed (or started) since is another run's: it is never touched."""
        if self.session is session and started == self._started \
                and session.runner_pid is not None:
            self.log("the runner did not stop in time: killing it", "warning")
            session.kill()

    # -- adaptive stopping and calibration ----------------------------------------------------
    def ask_until_ci(self) -> None:
        if self.config is None:
            self.app.notify("This console shows saved reports: nothing to run.",
                            severity="warning")
            return
        now = self.config.until_ci_percent
        self.app.push_screen(PathPromptScreen(
            "Run rounds until every 95 % interval is narrower than (percent; 0 or off: the "
            "fixed number of rounds):", "" if now is None else f"{now:g}",
            hint="enter: apply  ·  escape: cancel", validate=until_ci_problem,
            complete_paths=False), self._apply_until_ci)

    def _apply_until_ci(self, value: str | None) -> None:
        if value is None or self.config is None or until_ci_problem(value):
            return
        target = parse_until_ci(value)
        self.config = self.config.model_copy(update={"until_ci_percent": target})
        if self.session is not None:
            self.session.set_until_ci(target)
            if self.live is not None:
                self.live.clock.until_ci_percent = target
        self.log(until_ci_line(self.config, running=self.session is not None))

    def between_runs(self, nothing: str, stop_first: str) -> RunConfig | None:
        """The last run's resolved configuration for work done between runs (calibrating,
        profiling); None, with the warning that says why, in view mode, during a run, or
        before an `auto` configuration was resolved by a run."""
        if self.config is None or self.live is None:
            self.app.notify(f"This console shows saved reports: {nothing}.", severity="warning")
            return None
        if self.running:
            self.app.notify(stop_first, severity="warning")
            return None
        base = self.resolved_config or self.config
        if base.auto or base.auto_shape:
            self.app.notify("Run once first (r) so the backend and shape are known, or start "
                            "sagetui with --backend and a shape.", severity="warning")
            return None
        return base

    def calibrate(self) -> None:
        base = self.between_runs("nothing to run", "Stop the run first (r), then calibrate.")
        if base is None:
            return
        found = earlier(base)
        if found is None:
            self._begin_calibration(base)
            return
        self.app.push_screen(ConfirmScreen(
            f"A calibration of {base.variants[0].spec} at {base.shape.describe()} on this host "
            f"is stored ({describe_entry(found[1])}). Replace it with a new one?",
            yes="Calibrate again", no="Keep it"),
            lambda yes: self._begin_calibration(base) if yes else None)

    def _begin_calibration(self, base: RunConfig) -> None:
        if self.running or self.config is None:
            return
        self.calibrating = self.config
        self.config = aa_config(base)
        self.log(f"calibrating: {self.config.variants[0].spec} against itself, "
                 f"{self.config.rounds} rounds")
        self.start()

    def _finish_calibration(self, report: Report | None) -> None:
        before, self.calibrating = self.calibrating, None
        assert before is not None
        if report is not None and report.sweep is not None:
            self._finish_point_calibration(before, report)
            return
        threshold, line = conclude(self.resolved_config or before, report)
        if threshold is None:
            self.config = before
            self.log(line, "warning")
            self.app.notify(line, severity="warning", timeout=15)
            return
        noise = threshold.noise_floor_percent
        self.config = before.model_copy(update={"noise_floor_percent": noise})
        if self.resolved_config is not None:
            self.resolved_config = self.resolved_config.model_copy(
                update={"noise_floor_percent": noise})
        if self.live is not None:  # the verdicts shown are judged with it from now on
            apply(self.live.model, ev.ThresholdResolved(threshold=threshold.fields()))
            self.view.rederive(self.live)
        self.log(line)
        self.app.notify(f"{fmt.noise_floor(noise).capitalize()}; SAME threshold "
                        f"{fmt.percent(threshold.percent)}.")

    def _finish_point_calibration(self, before: RunConfig, report: Report) -> None:
        """A sweep's (or a replay's) console calibrated each of its points (an A/A sweep):
        each point of its next run looks up its own shape's floor, so the configuration keeps
        no single one."""
        self.config = before
        stored, line = conclude_points(self.resolved_config or before, report)
        self.log(line, "information" if stored else "warning")
        self.app.notify(line, severity="information" if stored else "warning", timeout=15)

    def calibrations(self) -> None:
        """The stored calibrations, and an offer to clear them (key A)."""
        found = entries()
        if not found:
            self.app.notify("No calibration is stored.")
            return
        listing = "\n".join(f"· {e.get('backend', k)} at {e.get('shape', '?')} on "
                             f"{e.get('gpu', '?')}: {describe_entry(e)}" for k, e in found.items())
        self.app.push_screen(ConfirmScreen(f"Stored calibrations:\n{listing}\n\nClear them all?",
                                           yes="Clear all", no="Keep them"),
                             self._clear_calibrations)

    def _clear_calibrations(self, yes: bool | None) -> None:
        if not yes:
            return
        floors = {e.get("noise_floor_percent") for e in entries().values()}
        gone = clear()
        if self.config is not None and self.config.noise_floor_percent in floors:
            self.config = self.config.model_copy(update={"noise_floor_percent": None})
        self.log(f"cleared {len(gone)} calibration{'s' * (len(gone) != 1)}: the SAME "
                 "threshold is the default again unless --threshold or --noise-floor")

    # -- the session's events ---------------------------------------------------------------
    def on_event(self, e: ev.Event) -> None:
        data = self.live
        if data is None:
            return
        apply(data.model, e)
        line = log_line(e)
        if line is not None:
            self.view.write_log(line)
        match e:
            case ev.RoundStarted():
                data.clock.round_begins()  # the console's own clock, for the ETA
            case ev.RoundDone():
                data.clock.round_ends()
            case ev.VariantLoaded():
                if self.session is not None and e.name in data.variants:
                    self.session.set_enabled(e.name, data.is_enabled(e.name))
            case ev.Ready():
                if self.session is not None and self.calibrating is None:
                    self.resolved_config = self.session.config  # `auto` is resolved now
            case ev.ConfigResolved():  # a sweep's runner says no Ready to the console
                if self.calibrating is None:
                    self.resolved_config = e.config
                self.view.live_ready()
            case ev.PointDone():
                if self.on_point is not None:
                    self.on_point(e)
            case ev.FaultRaised():
                if line is not None:
                    self.app.notify(f"{line.text}. The last stderr lines are in the Log (6).",
                                    severity="error", timeout=10)
            case ev.Finished():
                data.clock.finish()
                self._finished(e)
                self.view.sync_panels()
            case _:
                pass  # the panels follow on the next tick: at most refresh_hz syncs a second

    def _finished(self, e: ev.Finished) -> None:
        report = e.report
        session, self.session = self.session, None
        if session is not None and e.status == "cancelled" and self.calibrating is None \
                and self.config is not None and 0 < session.rounds_completed \
                < session.config.round_limit:
            self.stopped = session, self.config  # r offers to resume it
        data = self.live
        assert data is not None
        if self.profiles and not report.mainloop_profiles:
            # profiles made in this console (p) describe the same builds: the report keeps
            # them with their diff, and so does the model the panels show
            report = with_profiles(report, self.profiles)
            apply(data.model, ev.ProfilesAdded(profiles=list(self.profiles)))
        self.final_report = report
        if self.run_recovery:
            self.log(f"the run is kept in the recovery file {self.run_recovery}")
        self.result = report if self.calibrating is None else None
        if self.calibrating is not None:
            self._finish_calibration(report)
        elif not self.quitting:
            done = data.points_done() or f"{data.rounds_done} rounds"
            self.app.notify(f"Run {e.status}: {done}. e/c/m/s export it.")
            self.on_finished(report)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "run" and event.state == WorkerState.ERROR:
            self.session = None  # Session.run catches everything; this is a last resort
            self.log(f"the run stopped with an error: {event.worker.error}", "error")
            self.app.notify(f"The run stopped with an error: {event.worker.error}",
                            severity="error")

    def shut_down(self) -> None:
        """The app unmounts: an exit that did not go through quit stops the runner."""
        session = self.session
        if session is not None:
            session.cancel()
            session.kill()
        if self.warm is not None:
            self.warm.shut()

    def reconfigure(self, config: RunConfig) -> None:
        """The next run's configuration (the run editor's, between runs): the live panels show
        its variants, pending, and the last run's result is dropped (edit_flow.py asked)."""
        assert self.live is not None and not self.running
        self.on_reconfigure()
        self.left_out = {}  # the last build's failures were of the configuration replaced
        self.config, self.resolved_config = config, None
        self.final_report = self.result = None
        self.live.reset(new_model(config))
        self.greet()


def _session(config: RunConfig, **kw: Any) -> Session:
    from sagetui.session.session import Session

    return Session(config, **kw)
