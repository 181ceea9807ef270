"""Where a capture is written: a hidden directory beside the one asked for, renamed to it only
when the capture is whole, so that a failed or refused capture leaves nothing behind."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

from sagetui.core.capture.outcome import CaptureError
from sagetui.core.report.io import free_names


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


def publish(staged: Path, out: Path, force: bool) -> Path:
    """`staged` becomes `out`, which is returned. With `force`, what `out` held before is
    removed after. Without, a directory at `out` that got files while the program ran (or a
    file put there) is kept, and the capture goes beside it (out.1, out.2, ...): the path
    returned says where. A rename onto a directory with files, or onto a file, fails: the
    check and the move are one step."""
    if not force:
        for target in free_names(out):
            try:
                os.rename(staged, target)  # onto an empty directory, or where none is
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR,
                                     errno.EISDIR):
                    raise
                continue
            return target
        raise FileExistsError(f"{out} and every name beside it are taken")
    old = None
    if out.is_dir() and any(out.iterdir()):
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        os.replace(out, old / out.name)
    os.replace(staged, out)  # onto an empty directory, or where none is
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return out


def discard(staged: Path) -> None:
    shutil.rmtree(staged, ignore_errors=True)


def usual_mode(path: Path) -> None:
    """The mode a plain mkdir or open gives (0777 or 0666 less the umask): mkdtemp makes
    0700, safetensors' writer 0600."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)
