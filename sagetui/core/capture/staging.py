"""Where a capture is written: a hidden directory beside the one asked for, renamed to it only
when the capture is whole, so that a failed or refused capture leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sagetui.core.capture.outcome import CaptureError


def stage(out: Path, force: bool) -> Path:
    """A fresh directory beside `out` (made with its parents). `out` may not exist yet, or be
    empty; a non-empty one only with `force` (it is replaced when the capture is published)."""
    if out.exists() and not out.is_dir():
        raise CaptureError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise CaptureError(f"{out} exists and is not empty (--force replaces it)")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staged = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial",
                                       dir=out.parent))
        usual_mode(staged)
        return staged
    except OSError as exc:
        raise CaptureError(f"cannot write beside {out}: {exc.strerror or exc}") from None


def publish(staged: Path, out: Path) -> None:
    """`staged` becomes `out`; what `out` held before (allowed by `force`) is removed after."""
    old = None
    if out.is_dir() and any(out.iterdir()):
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        os.replace(out, old / out.name)
    os.replace(staged, out)  # onto an empty directory, or where none is
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def discard(staged: Path) -> None:
    shutil.rmtree(staged, ignore_errors=True)


def usual_mode(path: Path) -> None:
    """The mode a plain mkdir or open gives (0777 or 0666 less the umask): mkdtemp makes
    0700, safetensors' writer 0600."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)
