"""Starting, stopping and quitting a live run: the app's side of the session's worker thread.

A mixin of SageTUI (app.py): the run is a Session whose blocking `run()` happens in a Textual
thread worker; its events come back as messages (session_bridge.py). Stopping cancels the
session (it stops between iterations); quitting mid-run stops it at once, kills a runner that
lingers past a second, and offers to keep what was measured.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.worker import Worker, WorkerState

from sagetui.core.config import RunConfig
from sagetui.core.report import Report
from sagetui.session.calibration import (
    aa_config,
    clear,
    conclude,
    describe_entry,
    earlier,
    entries,
)
from sagetui.session.session import Session

from . import exporting
from .formatting import until_ci_line
from .messages import IterationBatch, RunEvent
from .modals import ConfirmScreen, PathPromptScreen, QuitRunScreen
from .run_data import RunData
from .session_bridge import EventBridge

if TYPE_CHECKING:
    from .app import SageTUI

QUIT_GRACE_S = 1.0  # quitting: a runner still there after this is killed
STOP_GRACE_S = 10.0  # stopping: a long warm-up or setup gets this long to notice the cancel


class RunControl:
    config: RunConfig | None
    live: RunData | None
    session: Session | None
    final_report: Report | None
    resolved_config: RunConfig | None  # the last run's configuration, once the runner said
    calibrating: RunConfig | None  # during a calibration: the configuration to return to
    recovery_path: Path | None
    run_recovery: Path | None
    run_stem: str
    _quitting: bool
    _runs: int

    # -- start and stop ---------------------------------------------------------------------
    def action_toggle_run(self: SageTUI) -> None:
        if self.running:
            self.stop_run()
        else:
            self.start_run()

    def start_run(self: SageTUI) -> None:
        if self.config is None or self.live is None:
            self.notify("This console shows saved reports; start `sagetui` without `view` to "
                        "run.", severity="warning")
            return
        if self._quitting:
            return
        data, cfg = self.live, self.config
        if self.calibrating is None and data.variants and not any(
                v.enabled for v in data.variants.values()):
            line = "every variant is off: t turns the selected one on; nothing was started"
            self.log_line(line, "warning")
            self.notify(line, severity="warning")
            return
        self.current = self.sources.index(data)
        self.final_report = None
        self.run_stem = f"sagetui-{time.strftime('%Y%m%d-%H%M%S')}"
        self._runs += 1
        recovery = self.recovery_path
        if recovery is not None and self._runs > 1:  # never overwrite an earlier run's file
            recovery = recovery.with_name(f"{recovery.stem}-{self._runs}{recovery.suffix}")
        self.run_recovery = recovery
        bridge = EventBridge(self.post_message)
        session = self.make_session(cfg, on_event=bridge, recovery_path=recovery)
        bridge.session = session
        for name, v in data.variants.items():  # toggles and baseline chosen before the run
            session.set_enabled(name, v.enabled)
        if data.baseline:
            session.set_baseline(data.baseline)
        data.begin_run(cfg.round_limit, cfg.iterations, [(v.name, v.backend) for v in cfg.variants])
        data.progress.until_ci_percent = cfg.until_ci_percent
        self.session = session
        self.log_line("run started: spawning the runner" + (
            f"; recovery file {recovery} (written after every round)" if recovery else ""))
        self.run_worker(partial(session.run), name="session", group="run", thread=True,
                        exit_on_error=False)
        self._sync_panels()

    def stop_run(self: SageTUI, grace_s: float = STOP_GRACE_S) -> None:
        session = self.session
        if session is None or self.live is None:
            return
        session.cancel()
        self.live.progress.stage = "stopping"
        self.log_line("stopping: the runner stops between iterations; what was measured is kept")
        self.set_timer(grace_s, partial(self._kill_if_running, session))

    def _kill_if_running(self: SageTUI, session: Session) -> None:
        if self.session is session and session.client is not None:
            self.log_line("the runner did not stop in time: killing it", "warning")
            session.client.kill()

    # -- adaptive stopping and calibration ----------------------------------------------------
    def action_until_ci(self: SageTUI) -> None:
        if self.config is None:
            self.notify("This console shows saved reports: nothing to run.", severity="warning")
            return
        now = self.config.until_ci_percent
        self.push_screen(PathPromptScreen(
            "Run rounds until every 95 % interval is narrower than (percent; 0 or off: the "
            "fixed number of rounds):", "" if now is None else f"{now:g}",
            hint="enter: apply  ·  escape: cancel", validate=_until_ci_problem,
            complete_paths=False), self._apply_until_ci)

    def _apply_until_ci(self: SageTUI, value: str | None) -> None:
        if value is None or self.config is None or _until_ci_problem(value):
            return
        target = _until_ci(value)
        self.config = self.config.model_copy(update={"until_ci_percent": target})
        if self.session is not None:
            self.session.set_until_ci(target)
        if self.session is not None and self.live is not None:
            self.live.progress.until_ci_percent = target
        self.log_line(until_ci_line(self.config, running=self.session is not None))

    def action_calibrate(self: SageTUI) -> None:
        if self.config is None or self.live is None:
            self.notify("This console shows saved reports: nothing to run.", severity="warning")
            return
        if self.running:
            self.notify("Stop the run first (r), then calibrate.", severity="warning")
            return
        base = self.resolved_config or self.config
        if base.auto or base.auto_shape:
            self.notify("Run once first (r) so the backend and shape are known, or start "
                        "sagetui with --backend and a shape.", severity="warning")
            return
        found = earlier(base)
        if found is None:
            self._begin_calibration(base)
            return
        self.push_screen(ConfirmScreen(
            f"A calibration of {base.variants[0].spec} at {base.shape.describe()} on this host "
            f"is stored ({describe_entry(found[1])}). Replace it with a new one?",
            yes="Calibrate again", no="Keep it"),
            lambda yes: self._begin_calibration(base) if yes else None)

    def _begin_calibration(self: SageTUI, base: RunConfig) -> None:
        if self.running or self.config is None:
            return
        self.calibrating = self.config
        self.config = aa_config(base)
        self.log_line(f"calibrating: {self.config.variants[0].spec} against itself, "
                      f"{self.config.rounds} rounds")
        self.start_run()

    def _finish_calibration(self: SageTUI, report: Report | None) -> None:
        before, self.calibrating = self.calibrating, None
        assert before is not None
        threshold, line = conclude(self.resolved_config or before, report)
        if threshold is None:
            self.config = before
            self.log_line(line, "warning")
            self.notify(line, severity="warning", timeout=15)
            return
        noise = threshold.noise_floor_percent
        self.config = before.model_copy(update={"noise_floor_percent": noise})
        if self.resolved_config is not None:
            self.resolved_config = self.resolved_config.model_copy(
                update={"noise_floor_percent": noise})
        if self.live is not None:  # the verdicts shown are judged with it from now on
            self.live.threshold = threshold
            self._derive(self.live, recompute=True)
        self.log_line(line)
        self.notify(f"Noise floor {noise:.3f} %; SAME threshold {threshold.percent:.2f} %.")

    def action_calibrations(self: SageTUI) -> None:
        found = entries()
        if not found:
            self.notify("No calibration is stored.")
            return
        listing = "\n".join(f"· {e.get('backend', k)} at {e.get('shape', '?')} on "
                             f"{e.get('gpu', '?')}: {describe_entry(e)}" for k, e in found.items())
        self.push_screen(ConfirmScreen(f"Stored calibrations:\n{listing}\n\nClear them all?",
                                       yes="Clear all", no="Keep them"), self._clear_calibrations)

    def _clear_calibrations(self: SageTUI, yes: bool | None) -> None:
        if not yes:
            return
        floors = {e.get("noise_floor_percent") for e in entries().values()}
        gone = clear()
        if self.config is not None and self.config.noise_floor_percent in floors:
            self.config = self.config.model_copy(update={"noise_floor_percent": None})
        self.log_line(f"cleared {len(gone)} calibration{'s' * (len(gone) != 1)}: the SAME "
                      "threshold is the default again unless --threshold or --noise-floor")

    # -- the session's messages -------------------------------------------------------------
    def on_iteration_batch(self: SageTUI, message: IterationBatch) -> None:
        if self.live is not None:
            self.live.on_runs(message.runs)

    def on_run_event(self: SageTUI, message: RunEvent) -> None:
        data, d, kind = self.live, message.data, message.kind
        if data is None:
            return
        data.on_event(kind, d)
        if kind == "hello":
            self.log_line(f"runner up: torch {d.get('torch')} on {d.get('device')}")
        elif kind == "variant":
            ok = d.get("status") == "ok"
            self.log_line(f"variant {d['name']} ({d.get('backend')}): "
                          + ("loaded" if ok else f"failed: {d.get('error')}"),
                          "information" if ok else "error")
            if self.session is not None and d["name"] in data.variants:
                self.session.set_enabled(d["name"], data.variants[d["name"]].enabled)
        elif kind == "ready":
            if self.session is not None:  # an `auto` configuration is resolved by now
                data.shape = self.session.config.shape.describe()
                if self.calibrating is None:
                    self.resolved_config = self.session.config
            if self.selected not in data.variants:
                self.selected = self._first_variant()
            gpu = data.gpu_name or d.get("device")
            self.log_line(f"inputs ready on {gpu} (sha256 {str(d.get('input_sha256'))[:12]})")
        elif kind == "round" and d.get("phase") == "done":
            verdicts = "; ".join(f"{n}: {v['state']}"
                                 for n, v in (d.get("verdicts") or {}).items())
            self.log_line(f"round {d['round'] + 1} done" + (f" · {verdicts}" if verdicts else ""))
        elif kind == "fault":
            self._log_fault(d)
        elif kind == "log":
            self.log_line(str(d.get("message", "")))
        elif kind == "point":  # a sweep's point finished (sweep_tab.py)
            self.on_sweep_point(d)
        elif kind == "tail":
            self.log_line(f"tail study: {d.get('sweep')} q_len {d.get('q_len')} "
                          f"kv_len {d.get('kv_len')}")
        elif kind == "finished":
            self._finished(d)
            self._sync_panels()
        # everything else reaches the panels on the next tick: at most refresh_hz syncs a
        # second, however fast the rounds come

    def _finished(self: SageTUI, d: dict[str, Any]) -> None:
        report = d.get("report")
        self.session = None
        data = self.live
        assert data is not None
        if isinstance(report, Report):
            self.final_report = report
            progress = data.progress
            data.load_report(report)  # the same panels, now from the session's final report
            data.progress = progress
            data.status = report.status or "complete"
        where = f"; recovery file {self.run_recovery}" if self.run_recovery else ""
        self.log_line(f"run {d.get('status')}: {data.rounds_done} rounds kept{where}",
                      "information" if d.get("status") == "complete" else "warning")
        if self.calibrating is not None:
            self._finish_calibration(report if isinstance(report, Report) else None)
        elif not self._quitting:
            self.notify(f"Run {d.get('status')}: {data.rounds_done} rounds. "
                        "e/c/m/s export it.")

    def on_worker_state_changed(self: SageTUI, event: Worker.StateChanged) -> None:
        if event.worker.group == "run" and event.state == WorkerState.ERROR:
            self.session = None  # Session.run catches everything; this is a last resort
            self.log_line(f"the run stopped with an error: {event.worker.error}", "error")
            self.notify(f"The run stopped with an error: {event.worker.error}", severity="error")

    # -- quitting ---------------------------------------------------------------------------
    def install_signal_handlers(self: SageTUI) -> None:
        """SIGHUP (the SSH connection dropped) and SIGTERM: stop the run, let the session write
        its last recovery file, and exit; nothing is asked, since nobody may be there."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGHUP, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread, or no signals here: the defaults stay

    def _on_signal(self: SageTUI, sig: signal.Signals) -> None:
        if self._quitting and self.session is None:
            return
        self._quitting = True
        self.log_line(f"{sig.name}: stopping the run and keeping what was measured", "warning")
        if self.session is not None:
            self.stop_run(grace_s=QUIT_GRACE_S)
        self.run_worker(self._exit_when_stopped(), group="quit", exclusive=True)

    async def _exit_when_stopped(self: SageTUI) -> None:
        await self._wait_stopped()  # the session saves its recovery file as it ends
        # With the terminal gone (a dropped SSH connection closes the pty) Textual's own
        # shutdown can block on writing to it: what mattered is saved, so a process still
        # here two seconds later leaves without it.
        fallback = threading.Timer(2.0, os._exit, args=(1,))
        fallback.daemon = True  # a normal exit does not wait for it
        fallback.start()
        self.exit(return_code=1)

    async def action_quit(self: SageTUI) -> None:
        if self.session is None:
            self.exit(0)
            return
        if self._quitting:
            return
        self._quitting = True
        rounds = len(self.session.collector.completed_rounds)
        self.stop_run(grace_s=QUIT_GRACE_S)
        recovery = str(self.run_recovery) if self.run_recovery else None
        self.push_screen(QuitRunScreen(rounds, recovery), self._quit_choice)

    def _quit_choice(self: SageTUI, choice: str | None) -> None:
        if choice in ("save", "discard"):
            self.run_worker(self._finish_quit(save=choice == "save"), group="quit",
                            exclusive=True)
        else:
            self._quitting = False
            self.notify("The run was stopped; r starts a new one.")

    async def _finish_quit(self: SageTUI, save: bool) -> None:
        await self._wait_stopped()
        report = self.final_report
        if not save or report is None:
            self.exit(0)
            return
        self._quitting = False  # a cancelled save dialog leaves the console up
        self.export_text("json", exporting.render("json", report), then=lambda: self.exit(0))

    async def _wait_stopped(self: SageTUI) -> None:
        """Until the session's thread has ended; a runner that lingers is killed, so that no
        runner outlives the console."""
        session = self.session
        start = time.monotonic()
        while self.session is not None and time.monotonic() - start < 3 * QUIT_GRACE_S:
            if session is not None and session.client is not None \
                    and time.monotonic() - start > QUIT_GRACE_S:
                session.client.kill()
            await asyncio.sleep(0.02)

    def on_unmount(self: SageTUI) -> None:
        session = self.session
        if session is not None:  # an exit that did not go through quit: stop the runner
            session.cancel()
            if session.client is not None:
                session.client.kill()


def _until_ci(value: str) -> float | None:
    """The `u` dialog's value: a width in percent, or None for off (ValueError if neither)."""
    target = None if value.lower() in ("off", "0", "none") else float(value)
    if target is not None and not 0 < target <= 100:
        raise ValueError(value)
    return target


def _until_ci_problem(value: str) -> str | None:
    try:
        _until_ci(value)
    except ValueError:
        return f"not a width in percent (0 < width <= 100, or off): {value!r}"
    return None
