"""The run editor: a form over the next run's configuration (key E, or "Edit run" in the palette).

Its fields are `sagetui run`'s options (edit_model.py); it shows, live, the command line they
make, and applying hands that command line to the CLI's own parser and rules (the builder the
cli gives the app): a refused value is the CLI's one-line message under the form, which stays
open. Keyboard first: tab moves, enter in a field applies, escape cancels; in the variants
table t toggles, b makes the baseline, F2 renames, delete removes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.events import DescendantFocus, Key, Paste
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, DataTable, Input, Label, Select
from textual.widgets.input import Selection

from sagetui.core import run_fields
from sagetui.core.config import BACKEND_NAMES, RunConfig
from sagetui.core.run_argv import command_line
from sagetui.tui.edit_model import FIELDS, FORM, LABELS, EditModel
from sagetui.tui.modals import PathPromptScreen

Builder = Callable[[list[str]], RunConfig]  # raises with the one line `sagetui run` prints

# the form's fields as run_fields.py labels them: the shape's and the measurement's boxes
# (--inputs has a row of its own), the choices, the checkboxes
INPUTS = "--inputs"
_BOXES = [o for o in FORM if o.kind == "value" and not o.choices and o.flag != INPUTS]
SHAPE = tuple((o.flag, LABELS[o.flag]) for o in _BOXES if o.group == run_fields.SHAPE)
MEASURE = tuple((o.flag, LABELS[o.flag]) for o in _BOXES if o.group == run_fields.MEASURE)
CHOICES = tuple((o.flag, LABELS[o.flag], o.choices or ()) for o in FORM if o.choices)
CHECKS = tuple((o.flag, LABELS[o.flag]) for o in FORM if o.kind == "flag")
HINT = "tab: next field  ·  enter: apply  ·  escape: cancel"
# what the hint line calls the focused widget, in plain words
PLACES = {"ed-variants": "the variants table (t toggles, b baseline, F2 renames, del removes)",
          "ed-backend": "the backend list of a new variant",
          "ed-new": "the new variant field (type NAME=SPEC, e.g. "
                    "mine=sage2-sm89@/path/to/build; enter adds it)",
          "ed-browse": "the Browse… button (pick a build's .so)",
          "ed-add": "the Add button (adds the variant typed left of it)",
          "ed-apply": "the Apply button", "ed-cancel": "the Cancel button",
          **{f"ed{flag}": f"the {label} field" for flag, label in LABELS.items()},
          **{f"ed-{key}": f"the {key.capitalize()} button (of the variant selected above)"
             for key in ("toggle", "baseline", "rename", "remove")}}
# the buttons beside the new variant field: what is typed on them goes into it
BY_THE_NEW_FIELD = ("ed-toggle", "ed-baseline", "ed-rename", "ed-remove", "ed-browse", "ed-add",
                    "ed-backend")
# the form's rows under the fields, out of their scroll: command line, problem, hint, buttons,
# the dialog's border and the title; the fields get what is left of the terminal's height
BELOW_AND_ABOVE_FIELDS = 14


@dataclass(frozen=True)
class Edit:
    """An applied edit: the configuration the CLI built, its arguments, the variants' toggles."""

    config: RunConfig
    argv: list[str]
    enabled: dict[str, bool]


class VariantList(DataTable[str | Text]):
    BINDINGS = [Binding("t,space", "screen.toggle_variant", "Toggle"),
                Binding("b", "screen.baseline", "Baseline"),
                Binding("f2", "screen.rename", "Rename"),
                Binding("delete,minus", "screen.remove", "Remove")]


class RunEditorScreen(ModalScreen[Edit | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "apply", "Apply")]
    CSS = """
    RunEditorScreen #editor { height: auto; max-height: 100%; max-width: 110; padding: 0 1; }
    RunEditorScreen #ed-fields { height: auto; }
    RunEditorScreen .ed-row Button { min-width: 0; width: auto; }
    RunEditorScreen .buttons Button { min-width: 0; width: auto; }
    RunEditorScreen .section { text-style: bold; margin-top: 1; }
    RunEditorScreen #ed-variants { height: auto; max-height: 7; border: none; }
    RunEditorScreen .ed-row { height: auto; }
    RunEditorScreen .ed-row Button { margin-right: 1; }
    #editor #ed-new { width: 1fr; margin: 0 1; }
    RunEditorScreen #ed-backend { width: 20; }
    RunEditorScreen .ed-grid { grid-size: 4; grid-columns: 11 1fr 11 1fr; grid-gutter: 0 1;
                               height: auto; }
    #editor Input, #editor Select { margin: 0; }
    #editor #ed--inputs { width: 1fr; margin: 0 0 0 1; }
    RunEditorScreen #ed-command { color: $text-accent; margin-top: 1; width: 1fr; }
    RunEditorScreen #ed-hint { width: 1fr; }
    RunEditorScreen #editor .question { margin-bottom: 0; }
    RunEditorScreen .buttons { height: auto; margin-top: 1; }
    """

    def __init__(self, config: RunConfig, enabled: dict[str, bool], build: Builder | None,
                 refuse: Callable[[], str | None] = lambda: None) -> None:
        super().__init__(classes="modal")
        self.model = EditModel(config, enabled)
        self.build, self.refuse = build, refuse
        self._typing_into: Input | None = None  # the field last focused

    # -- the form -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        shown = self.model.shown
        with Vertical(id="editor", classes="dialog"):
            yield Label("Edit the next run: the options of `sagetui run`", classes="question")
            with VerticalScroll(id="ed-fields"):
                yield Label("Variants  (t toggle · b baseline · F2 rename · del remove)",
                            classes="section")
                yield VariantList(id="ed-variants", cursor_type="row", zebra_stripes=True)
                with Horizontal(classes="ed-row"):
                    for key, label in (("toggle", "Toggle"), ("baseline", "Baseline"),
                                       ("rename", "Rename"), ("remove", "Remove")):
                        yield Button(label, id=f"ed-{key}", compact=True)
                with Horizontal(classes="ed-row"):
                    yield Select([(b, b) for b in BACKEND_NAMES], prompt="backend…",
                                 id="ed-backend", compact=True)
                    # the example is in the hint line, whole: a placeholder is cut at 80
                    yield Input(placeholder="add NAME=SPEC", id="ed-new", compact=True)
                    yield Button("Browse…", id="ed-browse", compact=True)
                    yield Button("Add", id="ed-add", compact=True, variant="primary")
                yield Label("Shape", classes="section")
                with Grid(classes="ed-grid"):
                    for flag, label in SHAPE:
                        yield Label(label)
                        yield Input(str(shown[flag]), id=f"ed{flag}", compact=True)
                    for flag, label, values in CHOICES:
                        yield Label(label)
                        yield Select([(v, v) for v in values], value=shown[flag],
                                     id=f"ed{flag}", allow_blank=False, compact=True)
                with Horizontal(classes="ed-row"):
                    yield Label(LABELS[INPUTS])
                    yield Input(str(shown[INPUTS]), id=f"ed{INPUTS}", compact=True,
                                placeholder="none: synthetic q/k/v from the seed")
                yield Label("Measurement", classes="section")
                with Grid(classes="ed-grid"):
                    for flag, label in MEASURE:
                        yield Label(label)
                        yield Input(str(shown[flag]), id=f"ed{flag}", compact=True)
                with Horizontal(classes="ed-row"):
                    for flag, label in CHECKS:
                        yield Checkbox(label, bool(shown[flag]), id=f"ed{flag}", compact=True)
            # out of the scroll: the command line and the way out stay in sight at 80 x 24
            yield Label("", id="ed-command", markup=False)
            yield Label("", id="ed-problem", classes="problem", markup=False)
            yield Label(HINT, id="ed-hint", classes="hint", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Apply (enter)", id="ed-apply", variant="success", compact=True)
                yield Button("Cancel (esc)", id="ed-cancel", variant="primary", compact=True)

    def on_resize(self) -> None:
        self.query_one("#ed-fields").styles.max_height = max(
            4, self.size.height - BELOW_AND_ABOVE_FIELDS)

    def on_mount(self) -> None:
        self.on_resize()
        table = self.query_one(VariantList)
        table.add_columns("on", "name", "spec", "")
        self._show_variants()
        # the top of the form: a variant can be typed at once (tab goes on to the shape)
        self.query_one("#ed-new", Input).focus()
        if self.build is None:
            self.problem("This console shows saved reports: it cannot run, so nothing can be "
                         "applied (start `sagetui` without `view`).")

    def fields(self) -> dict[str, str | bool]:
        out: dict[str, str | bool] = {}
        for flag in FIELDS:
            widget = self.query_one(f"#ed{flag}")
            value = widget.value  # type: ignore[attr-defined]  # Input, Select, Checkbox
            out[flag] = value if isinstance(value, bool | str) else str(value)
        return out

    def argv(self) -> list[str]:
        return self.model.argv(self.fields())

    def command(self) -> str:
        return command_line(self.argv())

    def problem(self, text: str) -> None:
        self.query_one("#ed-problem", Label).update(text)

    def _show_command(self) -> None:
        self.query_one("#ed-command", Label).update(self.command())

    def _show_variants(self) -> None:
        table = self.query_one(VariantList)
        row = table.cursor_row
        table.clear()
        m = self.model
        for i, r in enumerate(m.rows):
            mark = "baseline" if r.name == m.baseline else ""
            if m.auto:
                mark = (mark + " · auto: a GPU node picks the best backend").strip(" ·")
            # Text: a spec's [options] are not markup
            table.add_row("on" if r.enabled else "off", Text(r.name), Text(r.spec), mark,
                          key=str(i))
        if not m.rows:
            table.add_row("", "(none)", "the best backend here", "", key="none")
        table.move_cursor(row=min(row, max(0, len(m.rows) - 1)))
        self._show_command()

    # -- changes ------------------------------------------------------------------------------
    def on_descendant_focus(self, event: DescendantFocus) -> None:
        place = PLACES.get(event.widget.id or "")
        if isinstance(event.widget, Input):
            self._typing_into = event.widget
        self.query_one("#ed-hint", Label).update(HINT + (f"  ·  you are on {place}"
                                                        if place else ""))

    def on_key(self, event: Key) -> None:
        if event.is_printable and event.character:
            self._type_in(event, event.character)

    def on_paste(self, event: Paste) -> None:
        self._type_in(event, event.text.splitlines()[0] if event.text.strip() else "")

    def _type_in(self, event: Key | Paste, text: str) -> None:
        """Text typed or pasted while a button, a checkbox or the backend list has focus is
        not lost: it goes into the field it was meant for (the new variant field beside the
        variants' buttons, else the field last typed in), which takes the focus. Space and
        enter still press what has focus. A terminal hands over a burst of keys (a fast typist,
        a paste without bracketed paste) before the first has moved the focus: those keys
        were forwarded to the button too, and reach here with the field already focused, which
        did not see them; they go into it, after the first."""
        focused = self.focused
        if isinstance(focused, Input):
            target = focused  # the rest of a burst that began on a button
        elif isinstance(focused, Button | Checkbox | Select) and text.strip():
            target = self.query_one("#ed-new", Input) if focused.id in BY_THE_NEW_FIELD \
                else self._typing_into or self.query_one("#ed-new", Input)
        else:
            return
        if not text:
            return
        event.stop()
        event.prevent_default()

        def type_in() -> None:  # after the field's focus, which selects what it holds
            target.selection = Selection.cursor(len(target.value))
            target.insert_text_at_cursor(text)

        if focused is not target:
            self.set_focus(target)  # the keys after this one go to the field, in order
        target.call_next(type_in)  # in the field's queue: in the order typed

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "ed-new":
            self._show_command()

    def on_checkbox_changed(self) -> None:
        self._show_command()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "ed-backend":
            self._show_command()
            return
        if event.value is Select.BLANK:
            return
        backend, taken = str(event.value), set(self.model.names())
        name = next(n for i in range(1, 100) if (n := backend if i == 1 else f"{backend}{i}")
                    not in taken)
        box = self.query_one("#ed-new", Input)
        box.value = backend if name == backend else f"{name}={backend}"
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "ed-new":
            self._add()
        else:
            self.action_apply()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions: dict[str, Callable[[], None]] = {
            "ed-toggle": self.action_toggle_variant, "ed-baseline": self.action_baseline,
            "ed-rename": self.action_rename, "ed-remove": self.action_remove,
            "ed-add": self._add, "ed-browse": self._browse, "ed-apply": self.action_apply,
            "ed-cancel": self.action_cancel}
        actions[str(event.button.id)]()

    def _add(self) -> None:
        box = self.query_one("#ed-new", Input)
        if self.model.add(box.value) is None:
            self.problem("Type NAME=SPEC first, e.g. fast=sage2-sm89[pv_accum=fp32+fp16] (or "
                         "pick a backend), then add it.")
            return
        box.value = ""
        self.problem("")
        self._show_variants()
        self.query_one(VariantList).move_cursor(row=len(self.model.rows) - 1)

    def _browse(self) -> None:
        """Another build of the backend's extension: a .so file, or an install prefix."""
        def chosen(path: str | None) -> None:
            if not path:
                return
            box = self.query_one("#ed-new", Input)
            text = box.value.strip().partition("@")[0]
            backend = self.query_one("#ed-backend", Select).value
            if not text and backend is Select.BLANK:
                self.problem("Pick the backend this build is of (left of the field) first.")
                return
            box.value = f"{text or backend}@{path}"
            box.focus()

        self.app.push_screen(PathPromptScreen(
            "The build to load: a .so file (e.g. _qattn_sm89.so) or an install prefix holding "
            "one", f"{Path.cwd()}/", hint="enter: use it  ·  tab: complete the path  ·  "
            "escape: cancel"), chosen)

    def _row(self) -> int | None:
        table = self.query_one(VariantList)
        if not self.model.rows:
            return None
        return min(table.cursor_row, len(self.model.rows) - 1)

    def action_toggle_variant(self) -> None:
        if (i := self._row()) is not None:
            self.model.toggle(i)
            self._show_variants()

    def action_baseline(self) -> None:
        if (i := self._row()) is not None:
            self.model.set_baseline(i)
            self._show_variants()

    def action_remove(self) -> None:
        if (i := self._row()) is not None:
            self.model.remove(i)
            self._show_variants()

    def action_rename(self) -> None:
        i = self._row()
        if i is None:
            return
        old = self.model.rows[i].name

        def renamed(name: str | None) -> None:
            if name and name != old:
                self.model.rename(i, name)
                self._show_variants()

        self.app.push_screen(PathPromptScreen(f"Rename the variant {old} to:", old,
                                              hint="enter: rename  ·  escape: cancel",
                                              complete_paths=False), renamed)

    # -- apply or cancel ----------------------------------------------------------------------
    def action_apply(self) -> None:
        why = self.refuse()
        if why or self.build is None:
            self.problem(why or "This console shows saved reports: it cannot run.")
            return
        self.problem("checking…")
        self.run_worker(self._check(self.build, self.argv()), group="edit-check",
                        exclusive=True)

    async def _check(self, build: Builder, argv: list[str]) -> None:
        import asyncio

        try:  # in a thread: an unknown backend's message asks the runner what runs here
            config = await asyncio.to_thread(build, argv)
        except Exception as exc:  # the builder's usage error: `sagetui run`'s very line
            self.problem(str(exc))
            return
        self.dismiss(Edit(config, argv, self.model.enabled()))

    def action_cancel(self) -> None:
        self.dismiss(None)
