"""Textual's Footer, recomposed only when what it shows changes.

Textual recomposes its Footer whenever the screen's bindings may have changed, and that is
every focus change: each tab switch moves the focus (SageTUI.action_show_tab), so each one
made and styled ~20 new key widgets (and Textual 8 keeps the old ones alive) although the
console's footer shows the same keys on every tab. That was most of what a tab switch cost
over a bare Textual app's (benchmarks/key_latency_ratios.py).
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


def shown_bindings(screen: Screen, palette_key: str) -> tuple[Any, ...]:
    """Everything of the screen's active bindings that Footer.compose reads."""
    return tuple((key, b.key, b.action, b.description, b.group, enabled, tooltip)
                 for key, (_, b, enabled, tooltip) in screen.active_bindings.items()
                 if b.show or key == palette_key)


class SteadyFooter(Footer):
    _shown: tuple[Any, ...] | None = None

    def bindings_changed(self, screen: Screen) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = shown_bindings(screen, self.app.COMMAND_PALETTE_BINDING)
            if shown == self._shown:
                return
            self._shown = shown  # only when Footer will recompose for it
        super().bindings_changed(screen)
