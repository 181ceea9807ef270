"""The backend registry. Each entry is imported lazily, so that a backend whose dependencies are
missing (no GPU, no triton, no SageAttention build) still lists, with the real reason."""

from __future__ import annotations

import importlib

from sagetui.runner.backends.base import Backend, BackendUnavailable

# name -> "module:Class" (relative to this package)
REGISTRY: dict[str, str] = {
    "reference": "reference:ReferenceBackend",
    "sdpa": "sdpa:SdpaBackend",
    "flash-attn": "flash:FlashAttnBackend",
    "sage-triton": "triton:SageTritonBackend",
    "sage2-sm80": "sage2_sm80:Sage2Sm80Backend",
    "sage2-sm89": "sage2:Sage2Sm89Backend",
    "sage2-sm90": "sage2:Sage2Sm90Backend",
    "sage2-varlen": "triton_varlen:Sage2VarlenBackend",
    "sage2-auto": "sage2:Sage2AutoBackend",
}


def backend_class(name: str) -> type[Backend]:
    if name not in REGISTRY:
        raise KeyError(name)
    module, cls = REGISTRY[name].split(":")
    mod = importlib.import_module(f"{__name__}.{module}")
    return getattr(mod, cls)


def availability(device: str) -> dict[str, str | None]:
    """backend name -> None when it can run on `device`, else the reason it cannot."""
    out: dict[str, str | None] = {}
    for name in REGISTRY:
        try:
            backend_class(name).check_available(device)
            out[name] = None
        except BackendUnavailable as exc:
            out[name] = str(exc)
        except Exception as exc:  # an import that fails in an unexpected way is still a reason
            out[name] = f"{type(exc).__name__}: {exc}"
    return out
