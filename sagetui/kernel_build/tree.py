"""A SageAttention source tree: the checks that it is one and that it declares a backend's
extensions (read from setup.py's text, before anything runs), and the files a build of it
compiles, hashed for the cache key."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sagetui.core.build_facts import BACKEND_MODULES, PACKAGE
from sagetui.core.provenance import file_sha256
from sagetui.kernel_build.errors import BuildInputError

# what no build reads: bytecode, built modules, the build folders setup.py may leave, and an
# editor's droppings beside the file it edits (vim's swap files, emacs' backups and locks,
# hidden temporaries): a save must not rebuild twice, nor an open file change the hash
_SKIP_DIRS = {"__pycache__", "build", ".git"}
_SKIP_SUFFIXES = (".pyc", ".so", ".o", "~", ".swp", ".swo", ".swx")
_SKIP_PREFIXES = (".", "#")


def check_tree(path: Path) -> Path:
    """The tree's absolute path, or one line saying why it is not a SageAttention tree."""
    root = path.expanduser().resolve()
    if not root.is_dir():
        raise BuildInputError(f"{path}: not a folder")
    setup = root / "setup.py"
    if not setup.is_file() or not (root / "csrc").is_dir():
        raise BuildInputError(f"{path} is not a SageAttention tree: it has no setup.py and "
                              "csrc/")
    if f"{PACKAGE}._" not in setup.read_text(errors="replace"):
        raise BuildInputError(f"{path} is not a SageAttention tree: its setup.py declares "
                              f"no {PACKAGE} extension modules")
    return root


def modules_for(root: Path, backend: str) -> tuple[str, ...]:
    """The extension modules `backend` loads, each declared in the tree's setup.py (its
    text: a declaration under a condition is checked again when setup.py runs)."""
    modules = BACKEND_MODULES.get(backend)
    if modules is None:
        raise BuildInputError(f"backend {backend} loads no extension module built from a "
                              f"tree (those that do: {', '.join(BACKEND_MODULES)})")
    text = (root / "setup.py").read_text(errors="replace")
    missing = [m for m in modules if f"{PACKAGE}.{m}" not in text]
    if missing:
        raise BuildInputError(f"{root} does not build {', '.join(missing)} (backend "
                              f"{backend} needs {', '.join(modules)}): its setup.py declares "
                              "no such extension")
    return modules


def is_source(rel: Path) -> bool:
    """Whether a path relative to the tree's root is one the build hashes: setup.py,
    csrc/**, the package's .py files (not bytecode, built modules, build folders or an
    editor's temporaries)."""
    parts = rel.parts
    if parts == ("setup.py",):
        return True
    if (len(parts) < 2 or _SKIP_DIRS.intersection(parts) or rel.name.endswith(_SKIP_SUFFIXES)
            or rel.name.startswith(_SKIP_PREFIXES)):
        return False
    return parts[0] == "csrc" or (parts[0] == PACKAGE and rel.suffix == ".py")


def source_files(root: Path) -> list[str]:
    """What a build compiles or runs (is_source), as sorted paths relative to `root`."""
    found = [root / "setup.py"]
    for top, pattern in (("csrc", "*"), (PACKAGE, "*.py")):
        found += [p for p in (root / top).rglob(pattern)
                  if p.is_file() and is_source(p.relative_to(root))]
    return sorted(str(p.relative_to(root)) for p in found)


def hash_sources(root: Path) -> tuple[str, dict[str, str]]:
    """The tree's source hash (of every source file's name and content) and each file's."""
    files = {rel: file_sha256(root / rel) for rel in source_files(root)}
    h = hashlib.sha256()
    for rel, digest in files.items():
        h.update(f"{rel}\0{digest}\n".encode())
    return h.hexdigest(), files
