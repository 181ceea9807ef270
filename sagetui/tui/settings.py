"""The console's settings and their defaults, stated once (as posting's config.py): the command
line's options take their defaults from CONSOLE_DEFAULTS, and the console (tui/app.SageTUI)
holds a ConsoleSettings. A frozen dataclass, not a pydantic model: cli/main.py builds its parser
from it, and `sagetui --help` imports neither pydantic nor Textual (tests/test_cli.py)."""

from __future__ import annotations

from dataclasses import dataclass

# the refresh rates the console takes (docs/console.md, `--refresh`); one outside is moved to the
# nearer end
REFRESH_RANGE_HZ = (0.1, 30.0)


@dataclass(frozen=True)
class ConsoleSettings:
    """What a user may set of the console."""

    # plot redraws and panel syncs per second, at most (`--refresh`); held in REFRESH_RANGE_HZ
    refresh_hz: float = 2.0
    # a theme's name (themes/, tui/themes.py; `--theme`); None: the terminal's
    theme: str | None = None

    def __post_init__(self) -> None:
        low, high = REFRESH_RANGE_HZ
        object.__setattr__(self, "refresh_hz", min(high, max(low, float(self.refresh_hz))))

    @classmethod
    def given(cls, refresh_hz: float | None = None, theme: str | None = None) -> ConsoleSettings:
        """The settings as given: None (or a refresh rate of 0) for the default."""
        return cls(refresh_hz or CONSOLE_DEFAULTS.refresh_hz, theme)


CONSOLE_DEFAULTS = ConsoleSettings()
