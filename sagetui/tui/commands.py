"""The command palette (ctrl+p): every action of keymap.KEYS, searchable by name."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .keymap import KEYS, display_keys


class SageCommands(Provider):
    async def _run(self, action: str) -> None:
        await self.app.run_action(action)

    async def discover(self) -> Hits:
        for k in KEYS:
            yield DiscoveryHit(f"{k.title}  ({display_keys(k.keys)})", partial(self._run, k.action),
                               help=k.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for k in KEYS:
            text = f"{k.title}  ({display_keys(k.keys)})"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self._run, k.action),
                          help=k.help)
