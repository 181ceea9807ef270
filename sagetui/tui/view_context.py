"""What every panel needs besides the data: which variant is selected, the series colours."""

from __future__ import annotations

from dataclasses import dataclass

from sagetui.tui.source import Source


@dataclass(frozen=True)
class ViewContext:
    selected: str | None
    series: tuple[str, ...]
    error_colour: str
    mark_colour: str = "#FFFFFF"  # plot marks that must differ from every series (throttling)
    running: bool = False

    def colour(self, data: Source, variant: str) -> str:
        v = data.variants.get(variant)
        i = v.index if v is not None else 0
        return self.series[i % len(self.series)]
