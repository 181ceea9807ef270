"""The console's settings, in one object (as posting's config.py): tui/app.SageTUI holds a
ConsoleSettings, and the command line's --refresh and --theme fill it. The refresh rate's
default and range are data in core/run_fields.py, beside the run's options: cli/main.py builds
its parser from them, and `sagetui --help` and `sagetui compare` import no console module
(tests/test_cli.py, tests/test_compare.py)."""

from __future__ import annotations

from dataclasses import dataclass

from sagetui.core.run_fields import CONSOLE_REFRESH_HZ, CONSOLE_REFRESH_RANGE_HZ


@dataclass(frozen=True)
class ConsoleSettings:
    """What a user may set of the console."""

    # plot redraws and panel syncs per second, at most (`--refresh`), held in its range
    refresh_hz: float = CONSOLE_REFRESH_HZ
    # a theme's name (themes/, tui/themes.py; `--theme`); None: the terminal's
    theme: str | None = None

    def __post_init__(self) -> None:
        low, high = CONSOLE_REFRESH_RANGE_HZ
        object.__setattr__(self, "refresh_hz", min(high, max(low, float(self.refresh_hz))))

    @classmethod
    def given(cls, refresh_hz: float | None = None, theme: str | None = None) -> ConsoleSettings:
        """The settings as given: None (or a refresh rate of 0) for the default."""
        return cls(refresh_hz or CONSOLE_REFRESH_HZ, theme)


CONSOLE_DEFAULTS = ConsoleSettings()
