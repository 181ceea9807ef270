"""The flash-attn packages as baselines: `flash-attn[impl=fa2]` (the `flash_attn` package's
FlashAttention-2), `fa3` (`flash_attn_interface`, FlashAttention-3's Hopper build), `fa4`
(`flash_attn.cute.interface`, FlashAttention-4 in CuTe DSL). Each runs where its package
imports; otherwise the reason is the real import error (`sagetui doctor` lists them).

One leaf phase, "attention". The functions take [B, N, H, D] (NHD) tensors; HND inputs are
passed as transposed views, as SDPA gets NHD ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from sagetui.core.options import FLASH_ATTN_IMPLS, FLASH_MODULES, option, validate_options
from sagetui.core.phases import PhaseSpec
from sagetui.runner.backends.base import (
    Backend,
    BackendUnavailable,
    Inputs,
    PhaseClock,
    VariantLoadError,
)
from sagetui.runner.backends.sdpa import require_cuda


def flash_function(impl: str) -> Callable[..., Any]:
    """`flash_attn_func` of `impl`'s package; BackendUnavailable with the real reason."""
    module = FLASH_MODULES[impl]
    try:
        return importlib.import_module(module).flash_attn_func
    except Exception as exc:
        raise BackendUnavailable(f"flash-attn[impl={impl}]: cannot import {module}: "
                                 f"{type(exc).__name__}: {exc}") from exc


def impl_reasons() -> dict[str, str | None]:
    """impl -> None where it imports, else why not (the doctor's list)."""
    out: dict[str, str | None] = {}
    for impl in FLASH_ATTN_IMPLS:
        try:
            flash_function(impl)
            out[impl] = None
        except BackendUnavailable as exc:
            out[impl] = str(exc)
    return out


class FlashAttnBackend(Backend):
    name: ClassVar[str] = "flash-attn"
    kernel: ClassVar[str | None] = None
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = "the flash-attn packages' flash_attn_func (FA2, FA3, FA4)"

    def __init__(self, options: dict[str, Any] | None = None, module_path: str | None = None,
                 variant_name: str = "default") -> None:
        super().__init__(options, module_path, variant_name)
        validate_options(self.name, self.options)
        self.impl = str(option(self.name, self.options, "impl"))
        self._fn: Callable[..., Any] | None = None

    @classmethod
    def check_available(cls, device: str) -> None:
        require_cuda(device)
        reasons = impl_reasons()
        if all(reasons.values()):
            raise BackendUnavailable("; ".join(r for r in reasons.values() if r))

    def load(self) -> None:
        try:
            self._fn = flash_function(self.impl)
        except BackendUnavailable as exc:
            raise VariantLoadError(str(exc)) from exc

    def phases(self) -> list[PhaseSpec]:
        return [PhaseSpec("attention")]

    def public_name(self) -> str | None:
        # its one phase is the package's public function
        return f"{FLASH_MODULES.get(self.impl, 'flash_attn')}.flash_attn_func"

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        if self._fn is None:
            self.load()
        assert self._fn is not None
        hnd = inputs.layout == "HND"
        q, k, v = (t.transpose(1, 2) if hnd else t for t in (inputs.q, inputs.k, inputs.v))
        clock.start()
        out = self._fn(q, k, v, softmax_scale=inputs.sm_scale, causal=inputs.causal)
        clock.mark("attention")
        if isinstance(out, tuple):  # FA3/FA4 interfaces also return the log-sum-exp
            out = out[0]
        return out.transpose(1, 2) if hnd else out
