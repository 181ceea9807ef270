"""A bare Textual app with the console's tabs: a TabbedContent of the same tabs (ids, titles,
keys 1-8), each pane one line of text of its own, nothing else (no header, footer or panels).
It is the floor key_latency_ratios.py compares the console's tab switch and first paint with.

    python benchmarks/bare_tabs.py
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static, TabbedContent, TabPane, Tabs

from sagetui.tui.keymap import TABS  # only textual.binding behind it

# tab key -> the text only that tab's pane shows
MARKERS = {str(i + 1): f"bare tab {i + 1}: {title}" for i, (_, title) in enumerate(TABS)}


class BareTabs(App[None]):
    BINDINGS = [("q", "quit", "Quit"),
                *((str(i + 1), f"show_tab('{tab}')", title) for i, (tab, title) in
                  enumerate(TABS))]

    def compose(self) -> ComposeResult:
        with TabbedContent(initial=TABS[0][0]):
            for i, (tab, title) in enumerate(TABS):
                with TabPane(f"{i + 1} {title}", id=tab):
                    yield Static(MARKERS[str(i + 1)])

    def action_show_tab(self, tab: str) -> None:
        # what the console's action does when the pane holds nothing focusable
        tabs = self.query_one(TabbedContent)
        tabs.active = tab
        tabs.query_one(Tabs).focus()


if __name__ == "__main__":
    BareTabs().run()
