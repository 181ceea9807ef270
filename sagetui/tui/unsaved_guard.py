"""Asking before a key loses a run: quitting, and a new run over an unexported result.

q during a run asks first (save, discard, or stay: the run goes on untouched); only the answer
stops the runner, and a runner that lingers past QUIT_GRACE_S is killed. r over a stopped run
offers to resume it (its rounds kept). q, r (a new run) or a (a calibration run) over a finished
result that was never written as a report JSON say where its recovery file is and ask: go on,
export it first (then go on), or cancel. SIGHUP and SIGTERM ask nothing (nobody may be there):
they stop the run, let the session write its recovery file, and exit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable

from textual.app import App

from sagetui.core.report.model import Report
from sagetui.tui import export_contents
from sagetui.tui.export_flow import ExportFlow
from sagetui.tui.modals import Choice, ChoiceScreen, quit_run_screen
from sagetui.tui.run_control import RunControl

QUIT_GRACE_S = 1.0  # quitting: a runner still there after this is killed


class UnsavedGuard:
    def __init__(self, app: App[int], run: RunControl, exports: ExportFlow) -> None:
        self.app, self.run, self.exports = app, run, exports
        self.asking = False  # a question is on screen: the same key again does nothing

    def unexported(self) -> Report | None:
        """The last measuring run's result while no report JSON of it was written (an A/A
        calibration's run is not one: what it found is stored)."""
        report = self.run.result
        return report if report is not None and not self.exports.exported(report) else None

    def question(self, verb: str) -> str:
        path = self.run.run_recovery
        if path is not None and path.exists():
            return f"The last run is not exported: {verb} and keep it only in its recovery " \
                f"file {path}?"
        return f"The last run is not exported and no recovery file holds it: {verb} and lose it?"

    # -- r and a ------------------------------------------------------------------------------
    def toggle_run(self) -> None:
        if self.run.running:
            self.run.stop()
        elif (kept := self.run.resumable()) is not None and not self.asking:
            self._push(ChoiceScreen(
                f"The last run was stopped after {kept[0]} of {kept[1]} rounds. Resume it "
                "(its rounds are kept), or start a new run?",
                [Choice("resume", "Resume", ("r",), "success"),
                 Choice("new", "New run", ("n",), "warning"),
                 Choice("stay", "Cancel", ("escape",), "primary")]), self._resume_or_new)
        else:
            self.unless_unexported(self.run.start, "run again")

    def _resume_or_new(self, choice: str | None) -> None:
        if choice == "resume":
            self.run.resume()
        elif choice == "new":
            self.unless_unexported(self.run.start, "run again")

    def calibrate(self) -> None:
        self.unless_unexported(self.run.calibrate, "calibrate")

    def unless_unexported(self, proceed: Callable[[], None], verb: str,
                          not_exported: Callable[[], None] | None = None) -> None:
        """`proceed` now, or after the question; `not_exported`: the user chose to export
        first and nothing was written (a failed write, the prompt cancelled)."""
        report = self.unexported()
        if report is None or self.run.running:
            proceed()
            return
        self._ask(self.question(verb), Choice("yes", verb.capitalize(), ("y",), "warning"),
                  "Cancel", report, proceed, not_exported)

    # -- q ------------------------------------------------------------------------------------
    def quit(self) -> None:
        run = self.run
        if run.quitting or self.asking:
            return
        if run.session is not None:
            recovery = str(run.run_recovery) if run.run_recovery else None
            self._push(quit_run_screen(run.session.measured_so_far(), recovery), self._mid_run)
            return
        report = self.unexported()
        if report is None:
            self.app.exit(0)
            return
        self._ask(self.question("quit"), Choice("yes", "Quit", ("y", "q"), "warning"),
                  "Stay", report, lambda: self.app.exit(0))

    def _ask(self, question: str, go: Choice, stay: str, report: Report,
             proceed: Callable[[], None],
             not_exported: Callable[[], None] | None = None) -> None:
        """Go on, export the report JSON first and then go on, or stay."""
        def answered(choice: str | None) -> None:
            if choice == "yes":
                proceed()
            elif choice == "export":
                self.exports.export_text("json", export_contents.render("json", report),
                                         then=proceed, report=report, otherwise=not_exported)

        self._push(ChoiceScreen(question, [go, Choice("export", "Export JSON first", ("e",),
                                                      "success"),
                                           Choice("stay", stay, ("escape", "n"), "primary")]),
                   answered)

    def _push(self, screen: ChoiceScreen, answered: Callable[[str | None], None]) -> None:
        self.asking = True

        def done(choice: str | None) -> None:
            self.asking = False
            answered(choice)

        self.app.push_screen(screen, done)

    def _mid_run(self, choice: str | None) -> None:
        if choice not in ("save", "discard"):
            if self.run.running:
                self.run.log("quitting was cancelled: the run goes on")
            return
        self.run.quitting = True
        self.run.stop(grace_s=QUIT_GRACE_S)  # a no-op when the run ended meanwhile
        self.app.run_worker(self._finish_quit(save=choice == "save"), group="quit",
                            exclusive=True)

    async def _finish_quit(self, save: bool) -> None:
        await self._wait_stopped()
        report = self.run.final_report
        if not save or report is None:
            self.app.exit(0)
            return
        self.run.quitting = False  # a cancelled save dialog leaves the console up
        self.exports.export_text("json", export_contents.render("json", report),
                                 then=lambda: self.app.exit(0), report=report)

    async def _wait_stopped(self) -> None:
        """Until the session's thread has ended; a runner that lingers is killed, so that no
        runner outlives the console."""
        session = self.run.session
        start = time.monotonic()
        while self.run.session is not None and time.monotonic() - start < 3 * QUIT_GRACE_S:
            if session is not None and time.monotonic() - start > QUIT_GRACE_S:
                session.kill()
            await asyncio.sleep(0.02)

    # -- signals ------------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        """SIGHUP (the SSH connection dropped) and SIGTERM: stop the run, let the session write
        its last recovery file, and exit; nothing is asked, since nobody may be there."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGHUP, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread, or no signals here: the defaults stay

    def _on_signal(self, sig: signal.Signals) -> None:
        run = self.run
        if run.quitting and run.session is None:
            return
        run.quitting = True
        run.log(f"{sig.name}: stopping the run and keeping what was measured", "warning")
        if run.session is not None:
            run.stop(grace_s=QUIT_GRACE_S)
        self.app.run_worker(self._exit_when_stopped(), group="quit", exclusive=True)

    async def _exit_when_stopped(self) -> None:
        await self._wait_stopped()  # the session saves its recovery file as it ends
        # With the terminal gone (a dropped SSH connection closes the pty) Textual's own
        # shutdown can block on writing to it: what mattered is saved, so a process still
        # here two seconds later leaves without it.
        fallback = threading.Timer(2.0, os._exit, args=(1,))
        fallback.daemon = True  # a normal exit does not wait for it
        fallback.start()
        self.app.exit(return_code=1)
