"""Where a variant's code came from: every shared library it calls, with its sha256, size and
modification time, and the SageAttention version, so that two reports of "the same path" made
before and after a rebuild can be told apart."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from sagetui.core.provenance import file_facts
from sagetui.runner.backends.base import Backend


def sageattention_versions() -> dict[str, str]:
    """The distribution's version and the package's own `__version__`, where each exists."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str] = {}
    try:
        out["sageattention_dist"] = version("sageattention")
    except PackageNotFoundError:
        pass
    try:
        mod = importlib.import_module("sageattention")
        if getattr(mod, "__version__", None):
            out["sageattention_version"] = str(mod.__version__)
        out["sageattention_path"] = str(Path(str(mod.__file__)).parent)
    except Exception:  # not installed (the reference backend, sdpa): nothing to record
        pass
    return out


def provenance(be: Backend) -> dict[str, Any] | None:
    """The `provenance` of a loaded backend's variant, or None when it calls no library of
    its own."""
    files = be.provenance_files()
    if not files:
        return None
    return {"files": [file_facts(m, p) for m, p in files.items()], **sageattention_versions()}
