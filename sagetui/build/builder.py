"""Build a backend's extension modules from a source tree, or find them in the cache.

`plan` does every check that needs no compiler (the tree, the backend's modules, the C++
compiler and nvcc the build would use, the architecture): bad input is one line before
anything runs. `build` keys the cache by what goes into the modules, answers from a whole
entry, and otherwise runs the tree's setup.py (setup_driver.py) into a new entry."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import sysconfig
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sagetui.build import cache, tools
from sagetui.build.errors import BuildFailed
from sagetui.build.setup_driver import Progress, run_setup
from sagetui.build.tree import check_tree, hash_sources, modules_for
from sagetui.core import paths
from sagetui.core.build_facts import BuildFacts
from sagetui.core.provenance import file_sha256

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
    target, source = tools.target_arch(arch, env)
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
                 if f.name == f"{module}.so" or f.name.startswith(f"{module}.")]
        if len(found) != 1:
            raise BuildFailed(f"the build finished but wrote {len(found)} {module}*.so files "
                              f"(expected one) under {staging}", [])
        files[str(found[0].relative_to(staging))] = file_sha256(found[0])
    return files


def build(p: Plan, *, progress: Progress, cache_root: Path | None = None,
          env: Mapping[str, str] | None = None) -> BuildFacts:
    """The plan's modules in a whole cache entry: found, or built now (progress streams)."""
    root = cache_root or paths.builds_dir()
    source_sha256, _ = hash_sources(p.tree)
    inputs = _key_inputs(p, source_sha256)
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]
    entry = cache.entry_dir(root, key)
    facts = {k: inputs[k] for k in ("source_sha256", "modules", "arch", "nvcc_flags",
                                    "cxx_flags", "torch", "torch_cuda", "nvcc", "cxx")}
    facts.update(source=str(p.tree), key=key, arch_from=p.arch_from, entry=str(entry))
    if entry.exists():
        why = cache.stale_reason(entry, key)
        if why is None:
            build_s = float(cache.read_manifest(entry).get("build_s", 0.0))
            return BuildFacts(**facts, build_s=build_s, cache_hit=True)
        progress(f"cache entry {key} is corrupted ({why}): rebuilding")
        shutil.rmtree(entry)
    trees = cache.tree_dir(root, p.tree)
    staging = cache.staging_dir(root, key)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    t0 = time.monotonic()
    try:
        run_setup(p.tree, p.modules, staging / "lib", trees / "build-temp", _build_env(p, env),
                  cache.last_build_s(trees), progress)
        files = {f"lib/{rel}": digest
                 for rel, digest in _built_files(staging / "lib", p.modules).items()}
        build_s = round(time.monotonic() - t0, 3)
        cache.commit(staging, entry, {"key": key, "inputs": inputs, "files": files,
                                      "build_s": build_s, "source": str(p.tree)})
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    cache.record_build_s(trees, build_s)
    return BuildFacts(**facts, build_s=build_s, cache_hit=False)


def module_files(facts: BuildFacts) -> dict[str, Path]:
    """Each built module's file in the entry."""
    manifest = cache.read_manifest(Path(facts.entry))
    out: dict[str, Path] = {}
    for rel in manifest["files"]:
        name = Path(rel).name
        module = next(m for m in facts.modules if name.startswith((f"{m}.", f"{m}.so")))
        out[module] = Path(facts.entry) / rel
    return out

