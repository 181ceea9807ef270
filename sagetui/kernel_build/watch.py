"""Watch source variants' trees (`sagetui --watch`): a change to the files a build hashes,
once the burst of writes that made it settles, is reported with the tree's variants.

Why watchfiles rather than polling the source hash: it waits on the OS's notifications
(inotify, FSEvents) in its Rust thread, so a large tree costs nothing between changes, and it
groups a burst of writes (an editor's save, `git checkout`) into one batch after `debounce_ms`
of quiet. A batch is still judged by the source hash (build/tree.py): a change that leaves the
hashed files as they were (a touch, a save without edits, an edit undone) reports nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

import watchfiles

from sagetui.kernel_build.tree import hash_sources, is_source

DEBOUNCE_MS = 400  # quiet after the last write before a batch is reported
Changed = Callable[[str, list[str]], None]  # (variant, the source files the batch touched)


class TreeWatch:
    """The trees of source variants and the hash each was last built (or seen) at."""

    def __init__(self, trees: Mapping[str, Path], hashes: Mapping[str, str]) -> None:
        self.trees = {name: Path(t).resolve() for name, t in trees.items()}
        self.hashes = dict(hashes)  # variant -> source hash last seen
        self.ready = threading.Event()  # set once the OS watches the trees: a write after is seen

    def _rel(self, path: str) -> tuple[Path, Path] | None:
        """(root, path relative to it) of a tree that holds `path`, if any."""
        p = Path(path)
        for root in self.trees.values():
            if p.is_relative_to(root):
                return root, p.relative_to(root)
        return None

    def wanted(self, _change: object, path: str) -> bool:
        found = self._rel(path)
        return found is not None and is_source(found[1])

    def judge(self, paths: set[str]) -> list[tuple[str, list[str]]]:
        """The variants whose tree's source hash moved with this batch, each with the files
        of the batch in its tree; each new hash is remembered."""
        out = []
        for name, root in self.trees.items():
            files = sorted(str(rel) for p in paths if (f := self._rel(p)) and f[0] == root
                           for rel in [f[1]])
            if not files:
                continue
            digest, _ = hash_sources(root)
            if digest != self.hashes.get(name):
                self.hashes[name] = digest
                out.append((name, files))
        return out

    def run(self, on_change: Changed, stop: threading.Event, *,
            debounce_ms: int = DEBOUNCE_MS) -> None:
        """Block until `stop` is set, calling `on_change` for each variant whose tree changed
        (on this thread). `ready` is set at the first batch or the first quiet `rust_timeout`
        (an empty batch), both after watchfiles has registered the trees with the OS."""
        roots = sorted(set(self.trees.values()))
        for batch in watchfiles.watch(*roots, watch_filter=self.wanted, debounce=debounce_ms,
                                      stop_event=stop, rust_timeout=200,
                                      yield_on_timeout=True, raise_interrupt=False):
            self.ready.set()
            for name, files in self.judge({path for _, path in batch}):
                on_change(name, files)
