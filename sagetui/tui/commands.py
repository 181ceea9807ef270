"""The command palette (ctrl+p): every action of keymap.KEYS the app offers now (its
check_action: a console of saved reports offers no run keys), searchable by name."""

from __future__ import annotations

from functools import partial

from textual.actions import parse
from textual.command import DiscoveryHit, Hit, Hits, Provider

from sagetui.tui.keymap import KEYS, KeyAction, display_keys


class SageCommands(Provider):
    async def _run(self, action: str) -> None:
        await self.app.run_action(action)

    def _offered(self) -> list[KeyAction]:
        # what the footer and the key bindings offer: an action check_action refuses would
        # not run from here either (run_action asks it too)
        return [k for k in KEYS if self.app.check_action(*parse(k.action)[1:]) is not False]

    async def discover(self) -> Hits:
        for k in self._offered():
            yield DiscoveryHit(f"{k.title}  ({display_keys(k.keys)})", partial(self._run, k.action),
                               help=k.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for k in self._offered():
            text = f"{k.title}  ({display_keys(k.keys)})"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self._run, k.action),
                          help=k.help)
