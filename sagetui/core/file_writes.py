"""Writing a file a user keeps: whole or not at all, never over one that appeared meanwhile
(`atomic_write_text`), and the names beside a taken one. Standard library alone: the recovery
file's writer process (session/recovery_writer.py) starts on it without pydantic."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path


def atomic_write_text(path: str | os.PathLike, text: str | Iterable[str], *,
                      overwrite: bool = False, beside: bool = False) -> Path:
    """Write `text` (or its pieces, as they come) to a temporary file in the same directory,
    fsync, then put it in place; the path written is returned. The one way sagetui writes a
    file a user keeps: a report, an export, a calibration.

    overwrite=True: renamed over the target (a file there is replaced whole, never half).
    overwrite=False: created only where no file is, the check and the creation one step (a
    hard link of the finished file, which fails on a taken name; O_CREAT|O_EXCL and a rename
    where the file system has no hard links), so a file that appears at `path` while the text
    is written is never replaced: FileExistsError, or with `beside` the text goes to the first
    free name beside it (report.1.json, report.2.json, ...), which is returned.
    A full disk or a read-only directory raises OSError and leaves any old file intact.
    """
    p = Path(path)
    if p.exists() and not overwrite and not beside:
        raise FileExistsError(f"{p} exists")  # the caller asks first: nothing written
    directory = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    try:
        # mkstemp makes the file private (0600); a report gets the mode any new file would
        # (0666 less the umask), or the mode of the file it replaces
        try:
            mode = p.stat().st_mode & 0o777 if overwrite else _new_file_mode()
        except OSError:
            mode = _new_file_mode()
        os.chmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if isinstance(text, str):
                fh.write(text)
            else:
                for piece in text:
                    fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, p)
            return p
        for target in free_names(p) if beside else (p,):
            try:
                _create_from(tmp, target, mode)
            except FileExistsError:
                if not beside:
                    raise
                continue
            return target
        raise FileExistsError(f"{p} and every name beside it exist")
    finally:
        try:  # a hard link leaves the temporary name; anything else: no half file stays
            os.unlink(tmp)
        except OSError:
            pass


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def free_names(p: Path, most: int = 1000) -> Iterator[Path]:
    """`p`, then the names beside it: report.json, report.1.json, report.2.json, ... (a
    directory's: capture, capture.1, ...)"""
    yield p
    suffix = p.suffix
    stem = p.name[:len(p.name) - len(suffix)] if suffix else p.name
    for i in range(1, most):
        yield p.with_name(f"{stem}.{i}{suffix}")


def _create_from(tmp: str, target: Path, mode: int) -> None:
    """`tmp`'s file at `target`, only if no file is there (FileExistsError): one step."""
    try:
        os.link(tmp, target)
        return
    except FileExistsError:
        raise
    except OSError as exc:  # no hard links here (some network and FUSE file systems)
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK,
                             errno.ENOSYS):
            raise
    fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)  # the name, reserved
    os.close(fd)
    os.replace(tmp, target)


def check_writable(path: str | os.PathLike) -> str | None:
    """None if `path` can be written (its directory exists and is writable), else why not."""
    p = Path(path)
    d = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        return f"{p} is a directory"
    if not d.is_dir():
        return f"directory {d} does not exist"
    if not os.access(d, os.W_OK):
        return f"directory {d} is not writable"
    if p.exists() and not os.access(p, os.W_OK):
        return f"{p} is not writable"
    return None
