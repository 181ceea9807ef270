"""Modal questions: overwrite yes/no, where to write (or a value), a choice of a few answers
(what to do with a run on quit, or with an unexported result before it is replaced)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Key
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label
from textual.widgets.button import ButtonVariant


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question; y/enter on Yes, n/escape for no."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__(classes="modal")
        self.question, self.yes, self.no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="question", markup=False)  # holds a path
            with Horizontal(classes="buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")
                yield Button(f"{self.no} (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # the safe answer is the default

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class PathPromptScreen(ModalScreen[str | None]):
    """A path (or a value), prefilled; enter confirms, escape cancels, tab completes a path.

    `validate` returns why a value is refused (or None): the dialog then says so under the
    input and stays open, so a typo is fixed in place instead of starting over."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"),
                Binding("tab", "complete", "Complete", priority=True, show=False)]

    def __init__(self, title: str, path: str, hint: str = "enter: write  ·  tab: complete "
                 "the path  ·  escape: cancel",
                 validate: Callable[[str], str | None] | None = None,
                 complete_paths: bool = True) -> None:
        super().__init__(classes="modal")
        self.title_text, self.path, self.hint = title, path, hint
        self.validate, self.complete_paths = validate, complete_paths

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="question", markup=False)
            yield Input(self.path, id="path")
            yield Label("", id="problem", classes="problem", markup=False)
            yield Label(self.hint, classes="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        problem = self.validate(value) if self.validate and value else None
        if problem:
            self.query_one("#problem", Label).update(problem)
            return
        self.dismiss(value or None)

    def action_complete(self) -> None:
        if not self.complete_paths:
            return
        box = self.query_one(Input)
        done, choices = complete_path(box.value)
        box.value, box.cursor_position = done, len(done)
        shown = ", ".join(choices[:8]) + (" ..." if len(choices) > 8 else "")
        self.query_one("#problem", Label).update(shown if len(choices) > 1 else "")

    def action_cancel(self) -> None:
        self.dismiss(None)


def complete_path(text: str) -> tuple[str, list[str]]:
    """(the text completed as far as it is unambiguous, the names that still match): a shell's
    tab completion. A directory completed alone gets its trailing slash."""
    path = Path(text).expanduser()
    folder, stem = (path, "") if text.endswith("/") else (path.parent, path.name)
    try:
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()
                       if p.name.startswith(stem) and (stem or not p.name.startswith(".")))
    except OSError:
        return text, []
    if not names:
        return text, []
    common = os.path.commonprefix(names)
    head = text[: len(text) - len(stem)] if stem else text
    return head + common, names


@dataclass(frozen=True)
class Choice:
    """One answer of a ChoiceScreen: its result, its button's label and the keys that pick it."""

    id: str
    label: str
    keys: tuple[str, ...]
    variant: ButtonVariant = "default"


class ChoiceScreen(ModalScreen[str]):
    """A question with a few answers, each a button and a key; the `focus` one (the safe one)
    is where enter lands."""

    def __init__(self, question: str, choices: list[Choice], *, detail: str | None = None,
                 focus: str | None = None) -> None:
        super().__init__(classes="modal")
        self.question, self.choices, self.detail = question, choices, detail
        self.focus_id = focus or choices[-1].id

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="question", markup=False)  # holds a path
            if self.detail:
                yield Label(self.detail, classes="hint", markup=False)
            with Horizontal(classes="buttons"):
                for c in self.choices:
                    key = "esc" if c.keys[0] == "escape" else c.keys[0]
                    yield Button(f"{c.label} ({key})", id=c.id, variant=c.variant)

    def on_mount(self) -> None:
        self.query_one(f"#{self.focus_id}", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(str(event.button.id))

    def on_key(self, event: Key) -> None:
        for c in self.choices:
            if event.key in c.keys:
                event.stop()
                self.dismiss(c.id)
                return


def quit_run_screen(kept: str, recovery: str | None) -> ChoiceScreen:
    """q during a run: asked before anything stops, so that staying keeps it running; `kept`:
    what it measured so far, in words (the session's `measured_so_far`)."""
    return ChoiceScreen(
        f"A run is in progress ({kept}). Quitting stops it: keep what was measured?",
        [Choice("save", "Stop, save report JSON", ("s",), "success"),
         Choice("discard", "Stop, discard and quit", ("d",), "error"),
         Choice("stay", "Keep running", ("escape", "n"), "primary")],
        detail=f"The recovery file is kept either way: {recovery}" if recovery else None,
        focus="save")
