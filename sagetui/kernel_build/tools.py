"""The tools the tree's build would use, looked up as torch's cpp_extension looks them up
(its `get_cxx_compiler` and `_find_cuda_home`), so a missing one is found before a build
starts; their versions, and torch's, for the cache key (read without importing torch)."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from sagetui.kernel_build.errors import BuildInputError

DEFAULT_CUDA_HOME = "/usr/local/cuda"  # torch's third guess on Linux


def cxx_compiler(env: Mapping[str, str] | None = None) -> str:
    """The C++ compiler torch's build runs: $CXX, else `c++`, found on PATH."""
    env = os.environ if env is None else env
    name = env.get("CXX") or "c++"
    found = shutil.which(name, path=env.get("PATH", ""))
    if found is None:
        how = f"CXX={name}" if env.get("CXX") else "c++ on PATH"
        raise BuildInputError(f"no C++ compiler: {how} not found (install g++ or set CXX)")
    return found


def nvcc(env: Mapping[str, str] | None = None, default_home: str = DEFAULT_CUDA_HOME) -> str:
    """$CUDA_HOME/bin/nvcc, CUDA_HOME as torch finds it: $CUDA_HOME or $CUDA_PATH, else the
    folder above the `nvcc` on PATH, else /usr/local/cuda."""
    env = os.environ if env is None else env
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    how = "CUDA_HOME" if home else ""
    if not home:
        on_path = shutil.which("nvcc", path=env.get("PATH", ""))
        if on_path:
            home, how = str(Path(on_path).parent.parent), "nvcc on PATH"
        elif Path(default_home).is_dir():
            home, how = default_home, default_home
    if not home:
        raise BuildInputError("no CUDA toolkit: nvcc is not on PATH and CUDA_HOME is unset "
                              f"({default_home} does not exist)")
    tool = Path(home) / "bin" / "nvcc"
    if not os.access(tool, os.X_OK):
        raise BuildInputError(f"no CUDA toolkit: {tool} not found (CUDA_HOME from {how})")
    return str(tool)


def version_line(tool: str, pick: str | None = None) -> str:
    """`tool --version`: its first line, or the first line containing `pick`."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildInputError(f"cannot run {tool} --version: {exc}") from None
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    if out.returncode != 0 or not lines:
        raise BuildInputError(f"{tool} --version failed: {out.stderr.strip()[:200]}")
    return next((ln for ln in lines if pick and pick in ln), lines[0])


def torch_versions() -> tuple[str, str | None]:
    """torch's version and the CUDA it was built with, from torch/version.py: importing torch
    would cost a cache hit seconds."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise BuildInputError(f"torch is not installed in {sys.executable}: the build needs it")
    text = (Path(spec.origin).parent / "version.py").read_text()
    version = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", text, re.M)
    cuda = re.search(r"^cuda(?::[^=]*)?=\s*['\"]([^'\"]+)", text, re.M)
    return (version.group(1) if version else "unknown"), (cuda.group(1) if cuda else None)


# a compute capability, with the arch-specific "a" (9.0a: wgmma) that CUDA images put in
# TORCH_CUDA_ARCH_LIST; SageAttention's setup.py reads both as the same target
ARCH = re.compile(r"^\d+\.\d+a?$")
# The real architectures CUDA 11.0 to 13.0 build for, when the toolkit cannot list its own
# (an nvcc older than 11, without --list-gpu-arch)
KNOWN_ARCHS = ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.8", "8.9", "9.0", "10.0", "10.1",
               "10.3", "11.0", "12.0", "12.1")
_COMPUTE = re.compile(r"^compute_(\d+)(\d)[af]?$")


@functools.lru_cache(maxsize=8)
def known_archs(nvcc_path: str | None) -> tuple[tuple[str, ...], str]:
    """The architectures the toolkit builds for (`nvcc --list-gpu-arch`: compute_90 is 9.0)
    and where the list came from; KNOWN_ARCHS without an nvcc that lists them."""
    if nvcc_path is not None:
        try:
            out = subprocess.run([nvcc_path, "--list-gpu-arch"], capture_output=True,
                                 text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            out = None
        found = [f"{m.group(1)}.{m.group(2)}" for ln in (out.stdout.split() if out else [])
                 if (m := _COMPUTE.match(ln))]
        if out is not None and out.returncode == 0 and found:
            return tuple(sorted(set(found), key=lambda a: tuple(map(int, a.split("."))))), \
                f"{nvcc_path} --list-gpu-arch"
    return KNOWN_ARCHS, "the architectures CUDA 11.0 to 13.0 know"


def _known(arch: str, how: str, nvcc_path: str | None) -> str:
    archs, listed_by = known_archs(nvcc_path)
    if arch.removesuffix("a") not in archs:
        raise BuildInputError(f"{how}: not an architecture this CUDA toolkit builds for "
                              f"({listed_by}: {', '.join(archs)})")
    return arch


def target_arch(given: str | None, env: Mapping[str, str] | None = None,
                nvcc_path: str | None = None) -> tuple[str, str]:
    """The one architecture to build for and where it came from: --arch, else
    TORCH_CUDA_ARCH_LIST (one entry), else this machine's GPU (torch.cuda, in a subprocess);
    each checked against the toolkit's architectures (known_archs)."""
    env = os.environ if env is None else env
    if given:
        if not ARCH.match(given):
            raise BuildInputError(f"--arch {given!r}: give a compute capability such as 9.0")
        return _known(given, f"--arch {given}", nvcc_path), "--arch"
    listed = env.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if listed:
        if not ARCH.match(listed):
            raise BuildInputError(f"TORCH_CUDA_ARCH_LIST={listed!r}: sagetui builds for one "
                                  "architecture; give one such as 9.0 (or --arch)")
        return _known(listed, f"TORCH_CUDA_ARCH_LIST={listed}", nvcc_path), \
            "TORCH_CUDA_ARCH_LIST"
    code = ("import torch; print('%d.%d' % torch.cuda.get_device_capability() "
            "if torch.cuda.is_available() else '')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    arch = out.stdout.strip()
    if not arch:
        raise BuildInputError("no GPU here to take the architecture from: give --arch "
                              "(e.g. --arch 9.0)")
    return _known(arch, f"this GPU's architecture {arch}", nvcc_path), "gpu"
