"""Textual's Footer, recomposed only when what it shows changes.

Textual recomposes its Footer whenever the screen's bindings may have changed, and that is
every focus change: each tab switch moves the focus (SageTUI.action_show_tab), so each one
made and styled ~20 new key widgets (and Textual 8 keeps the old ones alive) although the
console's footer shows the same keys on every tab. That was most of what a tab switch cost
over a bare Textual app's (benchmarks/key_latency_ratios.py).
"""

from __future__ import annotations

import weakref
from typing import Any

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer


def shown_bindings(screen: Screen, palette_key: str) -> tuple[Any, ...]:
    """Everything of the screen's active bindings that Footer.compose reads."""
    return tuple((key, b.key, b.action, b.description, b.group, enabled, tooltip)
                 for key, (_, b, enabled, tooltip) in screen.active_bindings.items()
                 if b.show or key == palette_key)


class SteadyFooter(Footer):
    _shown: tuple[Any, ...] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._widths: weakref.WeakKeyDictionary[Widget, int] = weakref.WeakKeyDictionary()

    def bindings_changed(self, screen: Screen) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = shown_bindings(screen, self.app.COMMAND_PALETTE_BINDING)
            if shown == self._shown:
                return
            self._shown = shown  # only when Footer will recompose for it
        super().bindings_changed(screen)

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self._fit()
        self.call_after_refresh(self._fit)  # the keys laid out at the new width: measured

    def _fit(self) -> None:
        """Show the keys, in order, only while they fit beside the palette key: the rest are
        hidden whole, not cut under it (at 80 columns "^p palette" ended in a stray letter of
        a key scrolled under it). `?` lists every key."""
        palette = [c for c in self.children if c.has_class("-command-palette")]
        room = self.size.width - sum(p.outer_size.width for p in palette)
        used = 0
        for child in self.children:
            if child in palette:
                continue
            if child.display and child.size.width:  # laid out: its width, margins included
                self._widths[child] = child.virtual_region_with_margin.width
            used += self._widths.get(child, 0)
            fits = used <= room
            if child.display != fits:
                child.display = fits
