"""The help screen: every key, grouped, from keymap.KEYS."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sagetui.tui.keymap import KEYS, display_keys

VIM_SCROLL = (Binding("j,down", "scroll(1)", "Down", show=False),
              Binding("k,up", "scroll(-1)", "Up", show=False))

EXTRA = (("tab / shift+tab", "Move the focus between panels"),
         ("up / down, j / k", "Move in the focused table (the variants table selects a "
          "variant)"),
         ("left / right, + / -, 0, d", "In the Iterations tab: cursor, zoom, all, lines / "
          "histogram / CDF"),
         ("ctrl+p", "Command palette: every action by name"),
         ("ctrl+q", "Quit (as q)"))


COMPACT_BELOW = 120  # columns: under this, one line a key (its title); the palette says more


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close"), *VIM_SCROLL]

    def compose(self) -> ComposeResult:
        compact = self.app.size.width < COMPACT_BELOW
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=True)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(ratio=1, no_wrap=compact, overflow="ellipsis")
        group = None
        for k in KEYS:
            if k.group != group:
                group = k.group
                table.add_row(Text(group, style="underline"), "")
            table.add_row(display_keys(k.keys), k.title if compact else f"{k.title}: {k.help}")
        table.add_row(Text("Focus", style="underline"), "")
        for keys, what in EXTRA:
            table.add_row(keys, what)
        with VerticalScroll(id="help-body"):
            # one line at 80 columns: every row counts in a 24-row terminal
            yield Static("sagetui keys (escape closes, j/k scroll" + (
                "; 120+ columns: full text)" if compact else ")"), id="help-title")
            yield Static(table)

    def action_scroll(self, lines: int) -> None:
        self.query_one("#help-body", VerticalScroll).scroll_relative(y=lines, animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
