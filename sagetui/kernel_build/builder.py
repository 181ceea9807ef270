"""Build a backend's extension modules from a source tree, or find them in the cache.

`plan` does every check that needs no compiler (the tree, the backend's modules, the C++
compiler and nvcc the build would use, the architecture): bad input is one line before
anything runs. `build` keys the cache by what goes into the modules, answers from a whole
entry, and otherwise runs the tree's setup.py (setup_driver.py) into a new entry."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import sys
import sysconfig
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sagetui.core import paths
from sagetui.core.build_facts import BuildFacts
from sagetui.core.provenance import file_sha256
from sagetui.kernel_build import cache, tools
from sagetui.kernel_build.errors import BuildFailed, BuildInputError
from sagetui.kernel_build.setup_driver import Progress, run_setup
from sagetui.kernel_build.tree import check_tree, hash_sources, modules_for, source_files

KEY_VERSION = 1  # moves when what an entry holds changes
LINEINFO = "-lineinfo"  # source lines in the kernels, for the profiler's attribution


@dataclass(frozen=True)
class Plan:
    """A build that passed every check made before a compiler runs."""

    tree: Path
    backend: str
    modules: tuple[str, ...]
    arch: str
    arch_from: str
    cxx: str  # the compiler's path
    nvcc: str
    nvcc_flags: str  # NVCC_APPEND_FLAGS: -lineinfo, then the user's
    cxx_flags: str  # CXX_APPEND_FLAGS
    jobs: int | None

    def describe(self) -> str:
        where = {"gpu": "this GPU's", "--arch": "given by --arch",
                 "TORCH_CUDA_ARCH_LIST": "from TORCH_CUDA_ARCH_LIST"}[self.arch_from]
        return (f"{self.backend}: {', '.join(self.modules)} from {self.tree} for arch "
                f"{self.arch} ({where})")


def plan(path: str | Path, backend: str, *, arch: str | None = None, flags: str = "",
         cxx_flags: str = "", jobs: int | None = None,
         env: Mapping[str, str] | None = None) -> Plan:
    tree = check_tree(Path(path))
    modules = modules_for(tree, backend)
    cxx, nvcc = tools.cxx_compiler(env), tools.nvcc(env)
    target, source = tools.target_arch(arch, env, nvcc)
    return Plan(tree=tree, backend=backend, modules=modules, arch=target, arch_from=source,
                cxx=cxx, nvcc=nvcc, nvcc_flags=" ".join([LINEINFO, *shlex.split(flags)]),
                cxx_flags=" ".join(shlex.split(cxx_flags)), jobs=jobs)


def _key_inputs(p: Plan, source_sha256: str) -> dict[str, Any]:
    torch_version, torch_cuda = tools.torch_versions()
    return {"key_version": KEY_VERSION, "source_sha256": source_sha256,
            "modules": list(p.modules), "arch": p.arch, "nvcc_flags": p.nvcc_flags,
            "cxx_flags": p.cxx_flags, "torch": torch_version, "torch_cuda": torch_cuda,
            "nvcc": tools.version_line(p.nvcc, "release"), "cxx": tools.version_line(p.cxx),
            "python": sys.version.split()[0] + sysconfig.get_config_var("EXT_SUFFIX")}


def _build_env(p: Plan, env: Mapping[str, str] | None) -> dict[str, str]:
    out = dict(os.environ if env is None else env)
    out.update(TORCH_CUDA_ARCH_LIST=p.arch, NVCC_APPEND_FLAGS=p.nvcc_flags,
               CXX_APPEND_FLAGS=p.cxx_flags, CUDA_HOME=str(Path(p.nvcc).parent.parent))
    if p.jobs:
        out["MAX_JOBS"] = str(p.jobs)
    return out


def _built_files(staging: Path, modules: tuple[str, ...]) -> dict[str, str]:
    files: dict[str, str] = {}
    for module in modules:
        found = [f for f in staging.rglob(f"{module}*.so")
                 if cache.module_of(f.name, [module]) == module]
        if len(found) != 1:
            raise BuildFailed(f"the build finished but wrote {len(found)} {module}*.so files "
                              f"(expected one) under {staging}", [])
        files[str(found[0].relative_to(staging))] = file_sha256(found[0])
    return files


Signature = dict[str, tuple[int, int, int, int]]  # source file -> (inode, size, mtime, ctime)


def _signature(tree: Path) -> Signature:
    """Each source file's inode, size, mtime and ctime (ns): taken before the hash and again
    after the compile, a file written in between (even put back as it was, which a hash alone
    cannot tell, and whose edited text the compiler may have read) differs."""
    out: Signature = {}
    for rel in source_files(tree):
        with contextlib.suppress(OSError):
            st = (tree / rel).stat()
            out[rel] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return out


def _changed(before: Signature, after: Signature, hashed: dict[str, str],
             rehashed: dict[str, str], *, by_stat: bool) -> list[str]:
    """The source files whose content changed during the build, and with `by_stat` those
    written (their stat moved) though their content ended as it was."""
    return sorted(rel for rel in before.keys() | after.keys() | hashed.keys() | rehashed.keys()
                  if hashed.get(rel) != rehashed.get(rel)
                  or by_stat and before.get(rel) != after.get(rel))


MAX_ATTEMPTS = 3  # builds of a tree whose sources change during each: then it fails


@dataclass(frozen=True)
class _Keyed:
    """A plan with its tree as hashed: the key, the entry's folder and the facts."""

    inputs: dict[str, Any]
    key: str
    entry: Path
    facts: dict[str, Any]


def _keyed(p: Plan, root: Path, source_sha256: str) -> _Keyed:
    inputs = _key_inputs(p, source_sha256)
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]
    entry = cache.entry_dir(root, key)
    facts = {k: inputs[k] for k in ("source_sha256", "modules", "arch", "nvcc_flags",
                                    "cxx_flags", "torch", "torch_cuda", "nvcc", "cxx")}
    facts.update(source=str(p.tree), key=key, arch_from=p.arch_from, entry=str(entry))
    return _Keyed(inputs, key, entry, facts)


def _cached(k: _Keyed, modules: tuple[str, ...], progress: Progress) -> BuildFacts | None:
    """The entry's facts when it is whole; a malformed one is removed, saying so."""
    if not (k.entry.exists() or k.entry.is_symlink()):
        return None
    why = cache.stale_reason(k.entry, k.key, modules)
    if why is None:
        build_s = float(cache.read_manifest(k.entry).get("build_s", 0.0))
        return BuildFacts(**k.facts, build_s=build_s, cache_hit=True)
    progress(f"cache entry {k.key} is corrupted ({why}): rebuilding")
    cache.remove(k.entry)
    return None


def _sweep(root: Path, progress: Progress) -> None:
    swept = cache.sweep_staging(root)
    if swept:
        progress(f"removed {len(swept)} staging folder{'s' * (len(swept) > 1)} left in {root} "
                 f"by a build whose sagetui is gone (pid {', '.join(str(p) for _, p in swept)})")


def build(p: Plan, *, progress: Progress, cache_root: Path | None = None,
          env: Mapping[str, str] | None = None) -> BuildFacts:
    """The plan's modules in a whole cache entry: found, or built now (progress streams).

    The entry is what the compiler read: the sources are hashed before the build and checked
    again after it, and an entry is kept only when nothing changed in between. When something
    did, no entry is kept under the old key (what the compiler read of the changed files is not
    known), the changed files are touched (so that ninja recompiles them even where an object
    is newer than the edit) and the tree is built again as it is now; MAX_ATTEMPTS builds that
    each see a change fail. A file written but left as it was (its content the same, its stat
    not: an edit put back before the build ended, whose edited text the compiler may have
    read) counts as a change in the first build only: a setup.py that writes a source with the
    same text on every run then builds in two. The tree's build-temp is locked for the build
    (cache.tree_lock)."""
    root = cache_root or paths.builds_dir()
    if root.exists() and not root.is_dir():
        raise BuildInputError(f"the build cache {root} is not a folder")
    root.mkdir(parents=True, exist_ok=True)
    _sweep(root, progress)
    changed: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        k = _keyed(p, root, hash_sources(p.tree)[0])
        hit = _cached(k, p.modules, progress)
        if hit is not None:
            return hit
        cache.folder(root / "trees", progress)
        trees = cache.folder(cache.tree_dir(root, p.tree), progress)
        with cache.tree_lock(trees, p.tree, progress):
            before = _signature(p.tree)
            source_sha256, hashed = hash_sources(p.tree)
            k = _keyed(p, root, source_sha256)  # the tree may have changed while we waited
            hit = _cached(k, p.modules, progress)
            if hit is not None:
                return hit
            built = _build_entry(p, k, trees, env, progress, before, hashed, attempt == 0)
        if isinstance(built, BuildFacts):
            return built
        changed = built
        progress(f"{', '.join(changed)} changed during the build: no cache entry kept for key "
                 f"{k.key} (what the compiler read is not known); building again")
        for rel in changed:
            with contextlib.suppress(OSError):
                os.utime(p.tree / rel)
    raise BuildFailed(f"the sources of {p.tree} changed during each of {MAX_ATTEMPTS} builds "
                      f"(last: {', '.join(changed)}): nothing was cached", [])


def _build_entry(p: Plan, k: _Keyed, trees: Path, env: Mapping[str, str] | None,
                 progress: Progress, before: Signature, hashed: dict[str, str],
                 by_stat: bool) -> BuildFacts | list[str]:
    """Run setup.py into a staging folder and rename it into k's entry, when the sources after
    the compile are those hashed before it; else the files that changed (no entry)."""
    staging = cache.staging_dir(k.entry.parent, k.key)
    cache.remove(staging)
    staging.mkdir(parents=True)
    t0 = time.monotonic()
    try:
        run_setup(p.tree, p.modules, staging / "lib",
                  cache.folder(trees / "build-temp", progress), _build_env(p, env),
                  cache.last_build_s(trees), progress)
        changed = _changed(before, _signature(p.tree), hashed, hash_sources(p.tree)[1],
                           by_stat=by_stat)
        if changed:
            return changed
        files = {f"lib/{rel}": digest
                 for rel, digest in _built_files(staging / "lib", p.modules).items()}
        build_s = round(time.monotonic() - t0, 3)
        cache.commit(staging, k.entry, {"key": k.key, "inputs": k.inputs, "files": files,
                                        "build_s": build_s, "source": str(p.tree)})
    finally:
        cache.remove(staging)
    cache.record_build_s(trees, build_s)
    return BuildFacts(**k.facts, build_s=build_s, cache_hit=False)


def module_files(facts: BuildFacts) -> dict[str, Path]:
    """Each built module's file in the entry (a whole one: cache.stale_reason)."""
    manifest = cache.read_manifest(Path(facts.entry))
    out: dict[str, Path] = {}
    for rel in manifest["files"]:
        module = cache.module_of(Path(rel).name, facts.modules)
        if module is not None:
            out[module] = Path(facts.entry) / rel
    return out
