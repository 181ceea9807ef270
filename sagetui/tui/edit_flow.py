"""Editing the next run in the console: open the run editor, apply what the CLI built.

A plain object the app delegates its `edit_run` action to. The form is run_editor.py's; the
configuration comes from the CLI's parser and rules, through the builder the cli hands the app
(the tui never imports the cli). Between runs only: during a run the editor says to stop it
first. Over a finished result not yet exported it asks first (unsaved_guard.py's question), since
the live panels then show the new configuration's variants, pending, for t and b to act on;
"export it first" that writes nothing (a failed write, a cancelled prompt) brings the edit
back in the editor.
"""

from __future__ import annotations

from functools import partial
from typing import Protocol

from textual.app import App

from sagetui.core.eventlog import LogLine
from sagetui.core.run_argv import command_line
from sagetui.tui.run_control import RunControl
from sagetui.tui.run_editor import Builder, Edit, RunEditorScreen
from sagetui.tui.unsaved_guard import UnsavedGuard

STOP_FIRST = "A run is going: stop it first (r), then edit the next one."


class EditView(Protocol):
    def write_log(self, line: LogLine) -> None: ...
    def sync_panels(self) -> None: ...
    def show_live(self) -> None: ...
    def live_ready(self) -> None: ...


class EditFlow:
    def __init__(self, app: App[int], view: EditView, run: RunControl, unsaved: UnsavedGuard,
                 build: Builder | None) -> None:
        self.app, self.view, self.run, self.unsaved, self.build = app, view, run, unsaved, build

    def _refusal(self) -> str | None:
        return STOP_FIRST if self.run.running else None

    def open(self, edit: Edit | None = None) -> None:
        """The editor over the current configuration, or over `edit` (one not applied yet)."""
        run = self.run
        if run.config is None or run.live is None:
            self.app.notify("This console shows saved reports: there is no run to edit "
                            "(start `sagetui` without `view`).", severity="warning")
            return
        if run.running:
            self.app.notify(STOP_FIRST, severity="warning")
            return
        if edit is not None:
            config, enabled = edit.config, edit.enabled
        else:
            config = run.config
            enabled = {name: run.live.is_enabled(name) for name in run.live.variants}
        self.app.push_screen(RunEditorScreen(config, enabled, self.build, self._refusal),
                             self._applied)

    def _applied(self, edit: Edit | None) -> None:
        if edit is None:
            return
        self.unsaved.unless_unexported(partial(self._apply, edit), "apply the edit",
                                       partial(self._not_exported, edit))

    def _not_exported(self, edit: Edit) -> None:
        """"Export JSON first" wrote nothing (the write failed, the prompt was cancelled): the
        edit waits for it, back in the editor, rather than being dropped."""
        self.app.notify("The report JSON was not written, so the edit is not applied: it is "
                        "back in the editor (enter applies it and asks again, escape drops "
                        "it).", severity="warning", timeout=12)
        self.open(edit)

    def _apply(self, edit: Edit) -> None:
        live = self.run.live
        assert live is not None
        self.view.write_log(LogLine(f"the next run: {command_line(edit.argv)}"))
        self.run.reconfigure(edit.config)
        for name, on in edit.enabled.items():  # the editor's toggles, as t would set them
            if name in live.variants:
                live.enabled[name] = on
        live.touch()
        self.view.show_live()
        self.view.live_ready()
        self.view.sync_panels()
        self.app.notify("Applied: the next run (r) measures the new configuration.")
