"""Where a capture is written: a hidden staging directory, put in place only when the capture
is whole (its files hashed again), so that a failed, refused or interrupted capture leaves
nothing behind.

DIR is whatever the user typed: resolved at once to an absolute path with its symlinks
followed (`.`, `../x`, a symlink to an empty directory; the program may change directory after).
Where DIR does not exist the staging directory is made beside it and renamed to DIR. Where DIR
is a directory already (empty, or replaced with --force) the staging directory is made inside
it (the same file system, whatever is mounted there) and its files are moved in, manifest.json
last: a directory is a capture once its manifest is there, and DIR itself (a shell's working
directory, a mount point) stays the same directory. Files that appear in DIR while the program
runs are never replaced without --force: the capture goes beside DIR instead (DIR.1, ...).

A staging directory is named by the host and the pid of the process that made it, so that one
left by a sagetui killed with SIGKILL (its pid gone) is found and removed by the next capture
into that folder (`sweep`).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from sagetui.core.capture.manifest import MANIFEST, Manifest
from sagetui.core.capture.outcome import CaptureError
from sagetui.core.file_writes import free_names
from sagetui.core.paths import pid_alive

PARTIAL, OLD = ".partial", ".old"  # being written; a replaced capture's files, being removed
_MINE = re.compile(r"^\.(?P<beside>.*\.)?sagetui-(?P<host>.+)-(?P<pid>\d+)-[a-z0-9_]+"
                   r"\.(?:partial|old)$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _tag() -> str:
    return f"sagetui-{_host()}-{os.getpid()}-"


def resolve(out: str | os.PathLike[str]) -> Path:
    """DIR as typed, made absolute with its symlinks followed; CaptureError where it names
    no directory one could capture into."""
    text = os.fspath(out)
    if not text.strip():
        raise CaptureError(f"the capture's directory {text!r} is empty: give a directory")
    path = Path(os.path.realpath(os.path.abspath(text)))
    if path.parent == path:
        raise CaptureError(f"{text} is the file system's root: give a directory of its own")
    return path


def sweep(out: Path) -> str | None:
    """Remove the staging directories that sagetui processes now gone (on this host) left in
    DIR or beside it; the one line saying so, or None."""
    found = []
    places = [(out.parent, f"{out.name}."), (out, "")] if out.is_dir() else [(out.parent,
                                                                            f"{out.name}.")]
    for where, beside in places:
        try:
            entries = list(os.scandir(where))
        except OSError:
            continue
        for e in entries:
            m = _MINE.match(e.name)
            if (m is None or (m["beside"] or "") != beside or m["host"] != _host()
                    or pid_alive(int(m["pid"]))):
                continue
            shutil.rmtree(e.path, ignore_errors=True)
            found.append((e.name, m["pid"]))
    if not found:
        return None
    pids = sorted({pid for _, pid in found})
    return (f"sagetui capture: removed {len(found)} staging director"
            f"{'ies' if len(found) > 1 else 'y'} ({', '.join(n for n, _ in found)}) left by "
            f"sagetui process{'es' * (len(pids) > 1)} {', '.join(pids)}, no longer running")


def _ours(name: str) -> bool:
    return _MINE.match(name) is not None


def stage(out: Path, force: bool) -> Path:
    """A fresh staging directory for DIR (`out`, from `resolve`): inside it where it is a
    directory, else beside it (its parents made). DIR may not exist yet, or be empty; a
    non-empty one only with `force` (its files are replaced when the capture is published)."""
    if out.exists() and not out.is_dir():
        raise CaptureError(f"{out} exists and is not a directory")
    try:
        if out.is_dir():
            if not force and any(not _ours(n) for n in os.listdir(out)):
                raise CaptureError(f"{out} exists and is not empty (--force replaces it)")
            where, prefix = out, "." + _tag()
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            where, prefix = out.parent, f".{out.name}.{_tag()}"
        staged = Path(tempfile.mkdtemp(prefix=prefix, suffix=PARTIAL, dir=where))
        usual_mode(staged)
        return staged
    except OSError as exc:
        raise CaptureError(f"cannot write in or beside {out}: {exc.strerror or exc}") from None


def checked(staged: Path) -> Manifest:
    """The staged capture's manifest, every file hashed again against it and nothing else
    there; CaptureError naming what differs."""
    from sagetui.core.capture.loaded import WorkloadError, load_workload

    try:
        manifest = load_workload(staged).manifest
    except WorkloadError as exc:
        raise CaptureError(f"the capture does not hold what the program passed: {exc}; "
                           "nothing was captured") from None
    extra = sorted(set(os.listdir(staged)) - {MANIFEST, *(c.file for c in manifest.calls)})
    if extra:
        raise CaptureError(f"the capture holds files its manifest does not list "
                           f"({', '.join(extra[:3])}); nothing was captured")
    return manifest


def publish(staged: Path, out: Path, force: bool) -> Path:
    """The staged capture becomes DIR (`out`), which is returned. With `force`, what DIR held
    before is removed after. Without, a DIR that got files while the program ran (or a file
    put there) is kept, and the capture goes beside it (out.1, out.2, ...): the path returned
    says where. OSError where it cannot be put anywhere (staged is left to the caller)."""
    names = list(free_names(out))  # out, then out.1, out.2, ... (main's one rule)
    if out.is_dir():
        entries = [n for n in os.listdir(out) if n != staged.name and not _ours(n)]
        if not entries or force:
            _move_in(staged, out, entries)
            return out
        targets = names[1:]  # files appeared in DIR while the program ran: kept
    else:
        targets = names
    for target in targets:
        try:
            os.rename(staged, target)  # where nothing is (a rename onto files fails)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise
            continue
        return target
    raise FileExistsError(f"{out} and every name beside it are taken")


def _move_in(staged: Path, out: Path, entries: list[str]) -> None:
    """The staged files into the directory DIR, manifest.json last; DIR's `entries` (with
    --force) moved aside first and removed after."""
    old = None
    if entries:
        old = Path(tempfile.mkdtemp(prefix="." + _tag(), suffix=OLD, dir=out))
        for name in entries:
            os.rename(out / name, old / name)
    for name in sorted(os.listdir(staged), key=lambda n: n == MANIFEST):
        os.rename(staged / name, out / name)
    os.rmdir(staged)
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
