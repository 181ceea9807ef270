"""j and k move the cursor in every table, as in lazygit, btop and less."""

from __future__ import annotations

from textual.binding import Binding

VIM_KEYS: list[Binding | tuple[str, str] | tuple[str, str, str]] = [
    Binding("j", "cursor_down", "Down", show=False),
    Binding("k", "cursor_up", "Up", show=False)]
