"""A shared library's identity (sha256, size, modification time): recorded by the runner in a
variant's provenance, and checked again by a warm runner's keeper (session/warm.py) before it
reuses a process that has the library loaded."""

from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path
from typing import Any


def file_sha256(path: Path) -> str:
    """A file's sha256, read in blocks (OSError when it cannot be read)."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def file_facts(module: str, path: str) -> dict[str, Any]:
    p = Path(path)
    facts: dict[str, Any] = {"module": module, "path": str(p)}
    try:
        st = p.stat()
        digest = file_sha256(p)
    except OSError as exc:
        facts["error"] = f"{type(exc).__name__}: {exc}"
        return facts
    facts.update(sha256=digest, size_bytes=st.st_size,
                 mtime_utc=_dt.datetime.fromtimestamp(st.st_mtime, _dt.UTC)
                 .isoformat(timespec="seconds"))
    return facts


def changed_files(files: list[dict[str, Any]]) -> list[str]:
    """The paths among recorded `file_facts` whose file is no longer the same."""
    return [f["path"] for f in files
            if file_facts(f.get("module", ""), f["path"]) != f]
