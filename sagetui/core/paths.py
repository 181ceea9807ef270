"""Where sagetui keeps its files (the XDG base directories), in one place.

State (XDG_STATE_HOME, ~/.local/state): the recovery files of runs and the calibrated noise
floors. Configuration (XDG_CONFIG_HOME, ~/.config): a user's own themes. Read from the
environment at each call, so a test or a wrapper can point them elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Mapping
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


# Recovery files kept: the newest RECOVERY_KEEP, and none older than RECOVERY_MAX_AGE_DAYS; a
# file whose run is still going (the pid in its name is alive) and the caller's own are never
# removed. Only sagetui's own names (run-STAMP-PID[-N].json) are touched, so that a
# --recovery-dir shared with other files loses nothing else.
RECOVERY_KEEP = 50
RECOVERY_MAX_AGE_DAYS = 30
_RECOVERY_NAME = re.compile(r"^run-\d{8}-\d{6}-(\d+)(?:-\d+)?\.json$")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process
        return True
    return True


def prune_recovery(folder: Path, spare: Path | None = None, now: float | None = None,
                   keep: int = RECOVERY_KEEP,
                   max_age_days: float = RECOVERY_MAX_AGE_DAYS) -> list[Path]:
    """Remove the recovery files the rule above does not keep; returns them. Never raises: a
    file that cannot be read or removed stays."""
    now = time.time() if now is None else now
    found: list[tuple[float, Path, int]] = []
    try:
        for p in folder.iterdir():
            m = _RECOVERY_NAME.match(p.name)
            if m:
                try:
                    found.append((p.stat().st_mtime, p, int(m.group(1))))
                except OSError:
                    pass
    except OSError:
        return []
    found.sort(key=lambda f: f[0], reverse=True)
    removed = []
    for i, (mtime, p, pid) in enumerate(found):
        if i < keep and now - mtime <= max_age_days * 86400:
            continue
        if p == spare or pid == os.getpid() or pid_alive(pid):
            continue
        try:
            p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


def cache_dir() -> Path:
    return _base("XDG_CACHE_HOME", ".cache")


def builds_dir() -> Path:
    """Extension modules built from source trees (`sagetui build`, `backend@src:PATH`)."""
    return cache_dir() / "builds"


def cuda_tool(name: str, env: Mapping[str, str] | None = None,
              default_home: str = "/usr/local/cuda") -> str | None:
    """A CUDA toolkit program (cuobjdump, nvdisasm, ncu): on PATH, else in $CUDA_HOME/bin or
    `default_home`/bin; None when none of them has it."""
    env = os.environ if env is None else env
    extra = [os.path.join(d, "bin") for d in (env.get("CUDA_HOME"), default_home) if d]
    return shutil.which(name, path=env.get("PATH", "")) or next(
        (p for d in extra if os.access(p := os.path.join(d, name), os.X_OK)), None)
