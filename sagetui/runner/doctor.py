"""`python -m sagetui.runner --doctor`: what this machine can run, as one JSON object.

Import errors are reported as they are: the real exception text of each module that fails.
"""

from __future__ import annotations

import importlib
import json
import platform
import sys
from typing import Any

from sagetui.runner.nvml import NvmlUnavailable, nvml_open

MODULES = ("sageattention", "sageattention._qattn_sm80", "sageattention._qattn_sm89",
           "sageattention._qattn_sm90", "sageattention._fused", "triton")


def _try_import(name: str) -> dict[str, Any]:
    try:
        mod = importlib.import_module(name)
    except Exception as exc:  # the real reason, whatever it is
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "version": getattr(mod, "__version__", None),
            "file": getattr(mod, "__file__", None)}


def diagnose(peak: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version(), "executable": sys.executable}
    try:
        import torch
    except Exception as exc:
        out["torch"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return out
    out["torch"] = {"ok": True, "version": torch.__version__, "cuda": torch.version.cuda,
                    "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        out["gpu"] = {"name": p.name, "capability": f"sm_{p.major}{p.minor}",
                      "sm_count": p.multi_processor_count, "memory_gib": p.total_memory / 2**30,
                      "count": torch.cuda.device_count()}
    try:
        from importlib.metadata import version

        out["sageattention_dist"] = version("sageattention")
    except Exception as exc:
        out["sageattention_dist"] = f"not installed ({type(exc).__name__})"
    out["modules"] = {m: _try_import(m) for m in MODULES}
    try:
        with nvml_open() as nvml:
            out["nvml"] = {"ok": True, "driver": nvml.nvmlSystemGetDriverVersion(),
                           "devices": nvml.nvmlDeviceGetCount()}
    except NvmlUnavailable as exc:
        out["nvml"] = {"ok": False, "error": str(exc)}
    except Exception as exc:
        out["nvml"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    device = "cuda" if torch.cuda.is_available() else "cpu"
    out["device"] = device
    out["backends"] = backends_here(device)
    out["baselines"] = baselines(device, out["backends"])
    if peak:
        from sagetui.runner.peak import measure

        out["peak"] = measure(device)
    if out.get("gpu"):
        from sagetui.core.peaks import type_peak

        out["datasheet_peak_tops"] = {t: type_peak(out["gpu"]["name"], t)
                                      for t in ("int8", "fp8", "fp16", "bf16")}
    return out


def backends_here(device: str) -> dict[str, str | None]:
    """Each backend -> None where it runs on `device`, else why not. Without CUDA the doctor
    checks "cpu", and a GPU backend's reason is then why torch has no CUDA device (probed as
    "cuda"), not that "cpu" was asked for: nobody asked for anything."""
    from sagetui.runner.backends import availability

    found = availability(device)
    if device.startswith("cuda"):
        return found
    cuda = availability("cuda")
    return {name: None if why is None else cuda.get(name) or why for name, why in found.items()}


def baselines(device: str, backends: dict[str, str | None]) -> dict[str, str | None]:
    """Each baseline spec -> None where it runs here, else why not: torch's pinned SDPA
    backends, the flash implementations torch can swap in, the flash-attn packages."""
    import torch

    from sagetui.core.options import FLASH_ATTN_IMPLS, SDPA_FLASH_IMPLS, SDPA_PINNED
    from sagetui.runner.backends.flash import impl_reasons
    from sagetui.runner.backends.sdpa import use_flash_impl

    out: dict[str, str | None] = {}
    for name in SDPA_PINNED:
        out[f"sdpa[backend={name}]"] = backends.get("sdpa")
    listed: list[str] = getattr(torch.nn.attention, "list_flash_attention_impls", lambda: [])()
    for impl in SDPA_FLASH_IMPLS:
        key = f"sdpa[backend={impl}]"
        if impl.upper() not in listed:
            out[key] = f"torch {torch.__version__} lists no {impl.upper()} ({listed or 'none'})"
            continue
        try:
            use_flash_impl(impl.upper())
            out[key] = backends.get("sdpa")
        except Exception as exc:  # the package is missing or does not register
            out[key] = f"{impl.upper()} does not activate: {type(exc).__name__}: {exc}"[:300]
        finally:
            try:
                use_flash_impl(None)
            except Exception:
                pass
    reasons = impl_reasons()
    for impl in FLASH_ATTN_IMPLS:
        out[f"flash-attn[impl={impl}]"] = reasons[impl] or (
            None if device.startswith("cuda") else "needs a CUDA device")
    return out


def main(args: list[str]) -> int:
    print(json.dumps(diagnose(peak="--peak" in args), default=str))
    return 0
