"""Where sagetui keeps its files (the XDG base directories), in one place.

State (XDG_STATE_HOME, ~/.local/state): the recovery files of runs and the calibrated noise
floors. Configuration (XDG_CONFIG_HOME, ~/.config): a user's own themes. Read from the
environment at each call, so a test or a wrapper can point them elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path


def _base(var: str, *default: str) -> Path:
    return Path(os.environ.get(var) or os.path.join(Path.home(), *default)) / "sagetui"


def state_dir() -> Path:
    return _base("XDG_STATE_HOME", ".local", "state")


def config_dir() -> Path:
    return _base("XDG_CONFIG_HOME", ".config")


def recovery_dir() -> Path:
    return state_dir() / "recovery"


def calibration_file() -> Path:
    return state_dir() / "calibration.json"


def themes_dir() -> Path:
    return config_dir() / "themes"
