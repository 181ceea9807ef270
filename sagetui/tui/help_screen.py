"""The help screen: every key, grouped, from keymap.KEYS."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .keymap import KEYS, display_keys

EXTRA = (("tab / shift+tab", "Move the focus between panels"),
         ("up / down", "Move in the focused table (the variants table selects a variant)"),
         ("ctrl+p", "Command palette: every action by name"),
         ("ctrl+q", "Quit (as q)"))


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=True)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(ratio=1)
        group = None
        for k in KEYS:
            if k.group != group:
                group = k.group
                table.add_row(Text(group, style="underline"), "")
            table.add_row(display_keys(k.keys), f"{k.title}: {k.help}")
        table.add_row(Text("Focus", style="underline"), "")
        for keys, what in EXTRA:
            table.add_row(keys, what)
        with VerticalScroll(id="help-body"):
            yield Static("sagetui keys  (escape to close)", id="help-title")
            yield Static(table)

    def action_close(self) -> None:
        self.dismiss(None)
