"""The diff of a variant's tree against the baseline's: `git diff --no-index --numstat` over
the files the build hashes, as they are on disk (committed or not). --no-index compares two
folders' files, so neither tree's git history is read; files that only one tree has count as
added or deleted whole."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from sagetui.core.build_facts import FileDiff
from sagetui.kernel_build.tree import hash_sources, source_files

_EMPTY = "/dev/null"


def _numstat(a: str, b: str) -> tuple[int | None, int | None]:
    out = subprocess.run(["git", "diff", "--no-index", "--numstat", "--", a, b],
                         capture_output=True, text=True, timeout=120)
    fields = out.stdout.split("\t")
    if out.returncode not in (0, 1) or len(fields) < 3:
        return None, None
    added, deleted = fields[0], fields[1]
    return (int(added) if added.isdigit() else None, int(deleted) if deleted.isdigit() else None)


def tree_diff(baseline: Path, tree: Path) -> list[FileDiff] | None:
    """Each source file that differs, baseline -> tree, with lines added and deleted; None
    without git."""
    if shutil.which("git") is None:
        return None
    _, before = hash_sources(baseline)
    _, after = hash_sources(tree)
    out = []
    for rel in sorted(before.keys() | after.keys()):
        if before.get(rel) == after.get(rel):
            continue
        a = str(baseline / rel) if rel in before else _EMPTY
        b = str(tree / rel) if rel in after else _EMPTY
        added, deleted = _numstat(a, b)
        out.append(FileDiff(file=rel, added=added, deleted=deleted))
    return out


def snapshot(tree: Path, into: Path) -> Path:
    """A copy of the tree's source files (those the build hashes) in `into`, replaced whole:
    what a later tree_diff(into, tree) compares the tree with (the watch: the change since
    the previous build of the tree)."""
    shutil.rmtree(into, ignore_errors=True)
    for rel in source_files(tree):
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / rel, into / rel)
    return into
