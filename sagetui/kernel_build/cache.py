"""The build cache (paths.builds_dir(), XDG_CACHE_HOME/sagetui/builds):

    <key>/                      an entry: what build_ext wrote (sageattention/<module>*.so)
      manifest.json             the key, the facts of the build, each file's sha256
    trees/<hash of the path>/   per source tree: build-temp/ (ninja's objects, reused by the
      build-temp/               next build of the same tree) and last_build.json (its time,
      last_build.json           the next build's estimate)
    .staging-<key>-<pid>/       a build in progress, renamed to <key>/ once whole

An entry is written whole or not at all (a staging folder and a rename) and is checked on
every use: a malformed manifest (not a JSON object, `files` not a map of paths to sha256s, a
module with no file or a file of no module), a missing or modified file, or a file where its
folder belongs makes it stale, and it is rebuilt. A tree's build-temp is used by one build at a
time (`tree_lock`: fcntl's lock on trees/<hash>/lock; a second build waits). The staging folder
of a sagetui that died without cleaning up (SIGKILL: its pid is gone) is removed by the next
build that uses the cache (`sweep_staging`)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from sagetui.core.file_writes import atomic_write_text
from sagetui.core.paths import pid_alive
from sagetui.core.provenance import file_sha256
from sagetui.kernel_build import stop

MANIFEST = "manifest.json"


def entry_dir(root: Path, key: str) -> Path:
    return root / key


def tree_dir(root: Path, tree: Path) -> Path:
    return root / "trees" / hashlib.sha256(str(tree).encode()).hexdigest()[:16]


def staging_dir(root: Path, key: str) -> Path:
    return root / f".staging-{key}-{os.getpid()}"


def module_of(name: str, modules: Sequence[str]) -> str | None:
    """The module a built file is (`_fused.cpython-312-x86_64-linux-gnu.so`: `_fused`)."""
    return next((m for m in modules if name.endswith(".so")
                 and (name == f"{m}.so" or name.startswith(f"{m}."))), None)


def _files_reason(entry: Path, files: object, modules: Sequence[str] | None) -> str | None:
    if not isinstance(files, dict) or not files:
        return f"its files are {type(files).__name__}, not a map of paths to sha256s" \
            if not isinstance(files, dict) else "its manifest lists no files"
    found: dict[str, str] = {}
    for rel, digest in files.items():
        parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
        if not isinstance(digest, str) or not parts or parts[0] != "lib" or ".." in parts:
            return f"its file entry {rel!r}: {digest!r} is not a path under lib/ and a sha256"
        if modules is not None:
            module = module_of(parts[-1], modules)
            if module is None or module in found:
                return f"it holds {rel}, which is no module it should hold or a second copy"
            found[module] = rel
        path = entry / rel
        if not path.is_file():
            return f"{rel} is missing"
        if file_sha256(path) != digest:
            return f"{rel} was modified"
    missing = [m for m in modules or () if m not in found]
    return f"it has no file for {', '.join(missing)}" if missing else None


def stale_reason(entry: Path, key: str, modules: Sequence[str] | None = None) -> str | None:
    """None when the entry is whole: a folder whose manifest is a JSON object naming this key,
    whose files (one for each of `modules`, when given) are each there with its sha256; else
    what is wrong with it."""
    if not entry.is_dir():
        return "it is not a folder"
    path = entry / MANIFEST
    if not path.is_file():
        return "its manifest is missing or not a file"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return f"its manifest cannot be read ({exc})"
    if not isinstance(manifest, dict):
        return f"its manifest is a JSON {type(manifest).__name__}, not an object"
    if manifest.get("key") != key:
        return "its manifest names another key"
    build_s = manifest.get("build_s", 0.0)
    if isinstance(build_s, bool) or not isinstance(build_s, int | float) or build_s < 0:
        return f"its build_s is {build_s!r}, not a number of seconds"
    return _files_reason(entry, manifest.get("files"), modules)


def remove(path: Path) -> None:
    """Whatever is at `path` (a folder, a file, a link) gone; nothing there is no error."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def folder(path: Path, progress: Callable[[str], None]) -> Path:
    """`path` as a folder of the cache, made if missing; something else in its place (a file,
    a dangling link) is removed, saying so."""
    if path.exists() and not path.is_dir() or path.is_symlink() and not path.exists():
        progress(f"{path} was not a folder: removed")
        remove(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


_STAGING = re.compile(r"^\.staging-.+-(\d+)$")  # staging_dir's names


def sweep_staging(root: Path) -> list[tuple[Path, int]]:
    """Remove the staging folders whose sagetui is gone (its pid no longer exists: killed with
    SIGKILL, or a machine's crash); those of live processes stay. (folder, pid) of each."""
    swept = []
    try:
        names = [p for p in root.iterdir() if _STAGING.match(p.name)]
    except OSError:
        return []
    for p in names:
        pid = int(_STAGING.match(p.name).group(1))  # type: ignore[union-attr]
        if pid != os.getpid() and not pid_alive(pid):
            remove(p)
            swept.append((p, pid))
    return swept


LOCK = "lock"
LOCK_POLL_S = 0.05


@contextlib.contextmanager
def tree_lock(tree_folder: Path, tree: Path, progress: Callable[[str], None]) -> Iterator[None]:
    """The tree's build-temp for this build alone (fcntl.flock on trees/<hash>/lock; released
    when the process ends, however it ends). A second build waits, saying so once; a signal
    stops the wait (stop.check)."""
    path = tree_folder / LOCK
    if path.exists() and not path.is_file() or path.is_symlink():
        remove(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            progress(f"another build of {tree} is using its build folder (pid {holder}): "
                     "waiting for it to finish")
            while True:
                stop.check(f"waiting for another build of {tree}")
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(LOCK_POLL_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def read_manifest(entry: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((entry / MANIFEST).read_text())
    return data


def commit(staging: Path, entry: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest into the staging folder and rename it into place. An entry another
    build put there meanwhile (the same key: the same inputs) is kept and ours dropped."""
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    try:
        os.rename(staging, entry)
    except OSError:
        if not entry.is_dir():
            raise
        shutil.rmtree(staging, ignore_errors=True)


def last_build_s(tree_folder: Path) -> float | None:
    """The tree's last build's time, if recorded (a malformed record is none)."""
    path = tree_folder / "last_build.json"
    try:
        data = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None
    value = data.get("build_s") if isinstance(data, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def record_build_s(tree_folder: Path, seconds: float) -> None:
    """The next build's estimate; one that cannot be written (a folder in its place) is lost."""
    try:
        tree_folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(tree_folder / "last_build.json",
                          json.dumps({"build_s": round(seconds, 3)}), overwrite=True)
    except OSError:
        pass
