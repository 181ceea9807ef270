"""A variant's kernel facts (core/kernel_facts.py), read where its module's path is known:
`cuobjdump --dump-resource-usage` of the .so that holds its main-loop kernel, the names
demangled by c++filt, the instantiation its call launches picked out. Never raises: a missing
tool or a failed run is the block's `unavailable` line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from sagetui.core.config import RunConfig
from sagetui.core.kernel_facts import KernelFacts, Launch, function_names, kernel_facts
from sagetui.core.paths import cuda_tool
from sagetui.core.provenance import file_sha256
from sagetui.runner.backends.base import Backend

TOOL_TIMEOUT_S = 120.0
NO_CUOBJDUMP = ("not available: no cuobjdump (not on PATH, in $CUDA_HOME/bin nor "
                "/usr/local/cuda/bin)")

# (path, sha256) -> (cuobjdump's text, mangled -> demangled, its version line): a module is read
# once per runner, however many variants or runs load it
_read: dict[tuple[str, str | None], tuple[str, dict[str, str], str | None]] = {}


def demangle(names: list[str]) -> dict[str, str]:
    """mangled -> demangled by c++filt (cu++filt where it is missing); names it cannot demangle,
    or every name without either tool, are left out."""
    tool = shutil.which("c++filt") or cuda_tool("cu++filt")
    if tool is None or not names:
        return {}
    try:
        out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True,
                             text=True, timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return {}
    lines = out.stdout.splitlines()
    if out.returncode != 0 or len(lines) != len(names):
        return {}
    return {m: d for m, d in zip(names, lines, strict=True) if d != m}


def _version(tool: str) -> str | None:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
    return next((ln for ln in lines if "release" in ln), lines[-1] if lines else None)


def _dump(tool: str, path: str) -> tuple[str, str | None]:
    """(cuobjdump's text, None) or ("", why it failed)."""
    try:
        out = subprocess.run([tool, "--dump-resource-usage", path], capture_output=True,
                             text=True, timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return "", f"not available: cuobjdump failed: {type(exc).__name__}: {exc}"
    if out.returncode != 0:
        said = (out.stderr.strip() or out.stdout.strip()).splitlines()
        return "", (f"not available: cuobjdump exited {out.returncode}"
                    + (f": {said[0]}" if said else ""))
    return out.stdout, None


def read_facts(path: str, launch: Launch, arch: str, *, sha256: str | None,
               tool: str | None) -> KernelFacts:
    """The block for a main-loop kernel launched from the module at `path`, read by `tool`
    (cuobjdump's path; None: there is none)."""
    if sha256 is None:
        try:
            sha256 = file_sha256(Path(path))
        except OSError:
            sha256 = None
    base: dict[str, Any] = {"module": path, "module_sha256": sha256}
    if tool is None:
        return KernelFacts(unavailable=NO_CUOBJDUMP, **base)
    key = (path, sha256)
    if key not in _read:
        text, why = _dump(tool, path)
        if why is not None:
            return KernelFacts(unavailable=why, cuobjdump=_version(tool), **base)
        _read[key] = (text, demangle(function_names(text)), _version(tool))
    text, names, version = _read[key]
    return kernel_facts(text, names, launch, arch, module=path, module_sha256=sha256,
                        cuobjdump=version)


def variant_kernel_facts(be: Backend, config: RunConfig, gpu: dict[str, Any] | None,
                         provenance: dict[str, Any] | None) -> dict[str, Any] | None:
    """A loaded backend's `kernel_facts` fact, or None for one without a SageAttention
    main-loop kernel or off a GPU."""
    main = be.main_loop_kernel()
    if main is None or be.kernel is None or not gpu or not gpu.get("capability"):
        return None
    path, function = main
    s = config.shape
    launch = Launch(kernel=be.kernel, function=function, head_dim=s.head_dim, dtype=s.dtype,
                    causal=s.causal,
                    qk_quant_gran=str(getattr(be, "gran", "per_warp")))
    sha = next((f.get("sha256") for f in (provenance or {}).get("files", [])
                if f.get("path") == path), None)
    try:
        facts = read_facts(path, launch, str(gpu["capability"]), sha256=sha,
                           tool=cuda_tool("cuobjdump"))
    except Exception as exc:  # a fact, never a failed load: say what went wrong instead
        facts = KernelFacts(unavailable=f"not available: {type(exc).__name__}: {exc}",
                            module=path, module_sha256=sha)
    return facts.model_dump(exclude_none=True)
