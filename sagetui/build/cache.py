"""The build cache (paths.builds_dir(), XDG_CACHE_HOME/sagetui/builds):

    <key>/                      an entry: what build_ext wrote (sageattention/<module>*.so)
      manifest.json             the key, the facts of the build, each file's sha256
    trees/<hash of the path>/   per source tree: build-temp/ (ninja's objects, reused by the
      build-temp/               next build of the same tree) and last_build.json (its time,
      last_build.json           the next build's estimate)
    .staging-<key>-<pid>/       a build in progress, renamed to <key>/ once whole

An entry is written whole or not at all (a staging folder and a rename) and is checked on
every use: a missing or modified file makes it stale, and it is rebuilt."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from sagetui.core.provenance import file_sha256
from sagetui.core.report.io import atomic_write_text

MANIFEST = "manifest.json"


def entry_dir(root: Path, key: str) -> Path:
    return root / key


def tree_dir(root: Path, tree: Path) -> Path:
    return root / "trees" / hashlib.sha256(str(tree).encode()).hexdigest()[:16]


def staging_dir(root: Path, key: str) -> Path:
    return root / f".staging-{key}-{os.getpid()}"


def stale_reason(entry: Path, key: str) -> str | None:
    """None when the entry is whole: its manifest names this key and every file it lists is
    there with its sha256; else what is wrong with it."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        return f"its manifest cannot be read ({exc})"
    if manifest.get("key") != key:
        return "its manifest names another key"
    for rel, digest in (manifest.get("files") or {}).items():
        path = entry / rel
        if not path.is_file():
            return f"{rel} is missing"
        if file_sha256(path) != digest:
            return f"{rel} was modified"
    return None if manifest.get("files") else "its manifest lists no files"


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
    try:
        value = json.loads((tree_folder / "last_build.json").read_text()).get("build_s")
    except (OSError, ValueError):
        return None
    return float(value) if isinstance(value, int | float) else None


def record_build_s(tree_folder: Path, seconds: float) -> None:
    tree_folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(tree_folder / "last_build.json", json.dumps({"build_s": round(seconds, 3)}),
                      overwrite=True)
