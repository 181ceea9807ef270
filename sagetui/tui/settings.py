"""The console's settings and their defaults, stated once (as posting's config.py): the command
line's options take their defaults from CONSOLE_DEFAULTS, and the console (tui/app.SageTUI)
holds a ConsoleSettings. Imports pydantic only, so that cli/main.py builds its parser without
Textual."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

# the refresh rates the console takes (docs/console.md, `--refresh`); one outside is moved to the
# nearer end
REFRESH_RANGE_HZ = (0.1, 30.0)


class ConsoleSettings(BaseModel):
    """What a user may set of the console. None given for a field: its default."""

    model_config = ConfigDict(frozen=True)

    # plot redraws and panel syncs per second, at most (`--refresh`); held in REFRESH_RANGE_HZ
    refresh_hz: float = 2.0
    # a theme's name (themes/, tui/themes.py; `--theme`); None: the terminal's
    theme: str | None = None

    @field_validator("refresh_hz", mode="before")
    @classmethod
    def _refresh_within_range(cls, value: Any) -> float:
        if not value:  # None or 0: the default
            return float(cls.model_fields["refresh_hz"].default)
        low, high = REFRESH_RANGE_HZ
        return min(high, max(low, float(value)))


CONSOLE_DEFAULTS = ConsoleSettings()
