"""What the user changes during a run: which variants run, the baseline, adaptive stopping.

Its own lock, never held for long: a key press in the console never waits for the
measurements' lock, which an autosave holds while it builds a report. The session's thread
reads these at the start of each round (`take_baseline`, `enabled`, `config`).
"""

from __future__ import annotations

import threading

from sagetui.core.config import RunConfig


class Controls:
    def __init__(self, config: RunConfig) -> None:
        self._lock = threading.Lock()
        self._config = config
        self._enabled = {v.name: True for v in config.variants}
        self._baseline: str | None = None  # chosen, not yet taken by the session's thread

    def reset(self, config: RunConfig) -> None:
        """A configuration resolved for this machine (`auto`): the toggles made before the
        run outlive it (a variant new to the configuration is on)."""
        with self._lock:
            self._config = config
            self._enabled = {v.name: self._enabled.get(v.name, True) for v in config.variants}

    def swap(self, config: RunConfig, enabled: dict[str, bool] | None = None
             ) -> tuple[RunConfig, dict[str, bool]]:
        """Another configuration and its toggles (default: every variant on), e.g. a sweep's
        point; the ones replaced, to put back."""
        with self._lock:
            old = self._config, self._enabled
            self._config = config
            self._enabled = dict(enabled) if enabled is not None else {
                v.name: True for v in config.variants}
            return old

    @property
    def config(self) -> RunConfig:
        with self._lock:
            return self._config

    def set_enabled(self, variant: str, enabled: bool) -> None:
        with self._lock:
            if variant in self._enabled:
                self._enabled[variant] = enabled

    def enabled(self) -> dict[str, bool]:
        with self._lock:
            return dict(self._enabled)

    def set_baseline(self, variant: str) -> None:
        with self._lock:
            self._baseline = variant

    def chosen_baseline(self) -> str | None:
        with self._lock:
            return self._baseline

    def take_baseline(self) -> str | None:
        """The baseline chosen since the last call (None: no change)."""
        with self._lock:
            chosen, self._baseline = self._baseline, None
            return chosen

    def set_until_ci(self, target_percent: float | None) -> None:
        with self._lock:
            self._config = self._config.model_copy(update={"until_ci_percent": target_percent})
