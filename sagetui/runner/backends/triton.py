"""SageAttention's Triton path (int8 QK per block, fp16 PV), decomposed into phases.

Two installed flavours are understood, told apart by their module layout:
- upstream source builds (2.x): `sageattention.triton.*`, public `sageattn_qk_int8_pv_fp16_triton`;
  K smoothing is fused into the quantization (`per_block_int8(q, k, km=...)`), head dims other
  than 64/128 are zero-padded, and the attention kernels return `(o, lse)`;
- PyPI's 1.0.6 (Triton only): `sageattention.quant_per_block` etc., public `sageattn`; it
  subtracts the K mean itself, *in place on the caller's k*, has head-dim-96 kernels, and the
  attention kernels return `o`.

Phases: `k_mean_and_smoothing_preparation` (head-dim padding, the K mean, 1.0.6's K - mean, and
V's cast to fp16 for bf16 inputs, and with return_lse the lse correction (lse.py), in the
public function's order), `qk_int8_quantization`
(per_block_int8, both Q and K in one call), `fused_mainloop`. With smooth_k=false (both flavours'
functions take it) there is no K mean: K is quantized as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from sagetui.core.options import option, validate_options
from sagetui.core.phases import PhaseSpec
from sagetui.runner.backends.base import (
    Backend,
    BackendUnavailable,
    Inputs,
    PhaseClock,
    VariantLoadError,
    function_name,
)
from sagetui.runner.backends.lse import lse_correction, natural_lse, output_of, public_lse
from sagetui.runner.backends.sdpa import require_cuda

UPSTREAM = "upstream"
PYPI_106 = "pypi-1.0.6"


@dataclass(frozen=True)
class TritonApi:
    flavor: str
    version: str
    quant: Callable[..., Any]
    attn: Callable[..., Any]
    attn_causal: Callable[..., Any]
    public: Callable[..., Any]
    # PyPI 1.0.6 only: its head-dim-96 kernels
    quant_hd96: Callable[..., Any] | None = None
    attn_hd96: Callable[..., Any] | None = None
    attn_hd96_causal: Callable[..., Any] | None = None


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def load_triton_api() -> TritonApi:
    """Import the installed sageattention's Triton pieces; BackendUnavailable with the real
    reason when that fails."""
    try:
        sage = importlib.import_module("sageattention")
    except Exception as exc:  # ImportError, or triton failing inside it
        raise BackendUnavailable(f"cannot import sageattention: {type(exc).__name__}: {exc}") \
            from exc
    version = sageattention_version()
    try:
        if _has("sageattention.triton.quant_per_block"):
            imp = importlib.import_module
            return TritonApi(
                flavor=UPSTREAM, version=version,
                quant=imp("sageattention.triton.quant_per_block").per_block_int8,
                attn=imp("sageattention.triton.attn_qk_int8_per_block").forward,
                attn_causal=imp("sageattention.triton.attn_qk_int8_per_block_causal").forward,
                public=sage.sageattn_qk_int8_pv_fp16_triton,
            )
        if _has("sageattention.quant_per_block"):
            imp = importlib.import_module
            return TritonApi(
                flavor=PYPI_106, version=version,
                quant=imp("sageattention.quant_per_block").per_block_int8,
                attn=imp("sageattention.attn_qk_int8_per_block").forward,
                attn_causal=imp("sageattention.attn_qk_int8_per_block_causal").forward,
                public=sage.sageattn,
                quant_hd96=imp("sageattention.quant_per_block_hd96").per_block_int8_hd96,
                attn_hd96=imp("sageattention.attn_qk_int8_per_block_h96").forward,
                attn_hd96_causal=imp("sageattention.attn_qk_int8_per_block_h96_causal").forward,
            )
    except Exception as exc:
        raise BackendUnavailable(f"sageattention {version}: its Triton modules do not import: "
                                 f"{type(exc).__name__}: {exc}") from exc
    raise BackendUnavailable(f"sageattention {version} has no Triton kernels this backend knows "
                             "(neither sageattention.triton.* nor 1.0.6's modules)")


def sageattention_version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("sageattention")
    except PackageNotFoundError:
        return "(no distribution metadata)"


def pad_head_dim(x: torch.Tensor) -> torch.Tensor:
    """SageAttention2's head-dim padding: up to 64, or up to 128 between them."""
    d = x.size(-1)
    if d < 64:
        return torch.nn.functional.pad(x, (0, 64 - d))
    if 64 < d < 128:
        return torch.nn.functional.pad(x, (0, 128 - d))
    if d > 128:
        raise ValueError(f"Unsupported head_dim: {d}")
    return x


class SageTritonBackend(Backend):
    name: ClassVar[str] = "sage-triton"
    kernel: ClassVar[str | None] = None
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = "SageAttention int8 QK, fp16 PV in Triton"

    def __init__(self, options: dict[str, Any] | None = None, module_path: str | None = None,
                 variant_name: str = "default") -> None:
        super().__init__(options, module_path, variant_name)
        validate_options(self.name, self.options)
        self.smooth_k = bool(option(self.name, self.options, "smooth_k"))
        self._api: TritonApi | None = None

    @classmethod
    def check_available(cls, device: str) -> None:
        require_cuda(device)
        load_triton_api()

    def refuse_module_path(self) -> None:
        if self.module_path is not None:
            # Triton kernels have no separate build to load: a variant of this backend is
            # another installed sageattention first on PYTHONPATH, not a module_path.
            raise VariantLoadError(f"{self.name} has no extension module to swap; put the "
                                   "other sageattention first on PYTHONPATH instead")

    def load(self) -> None:
        self.refuse_module_path()
        self._api = load_triton_api()
        if self.return_lse and self._api.flavor == PYPI_106:
            raise VariantLoadError("sageattention 1.0.6's Triton kernels return no lse: "
                                   "return_lse needs an upstream (2.x) build")

    @property
    def api(self) -> TritonApi:
        if self._api is None:
            self.load()
        assert self._api is not None
        return self._api

    def phases(self) -> list[PhaseSpec]:
        return [
            PhaseSpec("k_mean_and_smoothing_preparation"),
            PhaseSpec("qk_int8_quantization"),
            PhaseSpec("fused_mainloop"),
        ]

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        api = self.api
        if api.flavor == UPSTREAM:
            return self._run_upstream(api, inputs, clock)
        return self._run_pypi(api, inputs, clock)

    def _run_upstream(self, api: TritonApi, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        # sageattn_qk_int8_pv_fp16_triton, quantization_backend="triton", no mask/lse
        q, k, v, layout = inputs.q, inputs.k, inputs.v, inputs.layout
        dtype = q.dtype
        torch.cuda.set_device(v.device)
        seq_dim = 1 if layout == "NHD" else 2
        head_dim_og = q.size(-1)
        clock.start()
        q, k, v = pad_head_dim(q), pad_head_dim(k), pad_head_dim(v)
        km = k.mean(dim=seq_dim, keepdim=True) if self.smooth_k else None
        lse_on = self.return_lse
        correction = lse_correction(q, km, layout) if lse_on and km is not None else None
        if dtype == torch.bfloat16 or dtype == torch.float32:
            v = v.to(torch.float16)
        clock.mark("k_mean_and_smoothing_preparation")
        q_int8, q_scale, k_int8, k_scale = api.quant(q, k, km=km, sm_scale=inputs.sm_scale,
                                                     tensor_layout=layout)
        clock.mark("qk_int8_quantization")
        if inputs.causal:
            o, lse = api.attn_causal(q_int8, k_int8, v, q_scale, k_scale, tensor_layout=layout,
                                     output_dtype=dtype, return_lse=lse_on)
        else:
            o, lse = api.attn(q_int8, k_int8, v, q_scale, k_scale, tensor_layout=layout,
                              attn_mask=None, output_dtype=dtype, return_lse=lse_on)
        o = o[..., :head_dim_og]
        if lse_on:
            self.last_lse = natural_lse(lse, correction, inputs.sm_scale)
        clock.mark("fused_mainloop")
        return o

    def _run_pypi(self, api: TritonApi, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        # 1.0.6's sageattn
        q, k, v, layout = inputs.q, inputs.k, inputs.v, inputs.layout
        dtype = q.dtype
        headdim = q.size(-1)
        if headdim not in (64, 96, 128):
            raise ValueError(f"sageattention 1.0.6 supports head_dim 64, 96, 128, not {headdim}")
        seq_dim = 1 if layout == "NHD" else 2
        clock.start()
        if self.smooth_k:  # the public function does `k -= km` on the caller's tensor: same values
            k = k - k.mean(dim=seq_dim, keepdim=True)
        if dtype == torch.bfloat16 or dtype == torch.float32:
            v = v.to(torch.float16)
        clock.mark("k_mean_and_smoothing_preparation")
        if headdim == 96:
            assert api.quant_hd96 and api.attn_hd96 and api.attn_hd96_causal
            quant, attn, attn_causal = api.quant_hd96, api.attn_hd96, api.attn_hd96_causal
        else:
            quant, attn, attn_causal = api.quant, api.attn, api.attn_causal
        q_int8, q_scale, k_int8, k_scale = quant(q, k, sm_scale=inputs.sm_scale,
                                                 tensor_layout=layout)
        clock.mark("qk_int8_quantization")
        forward = attn_causal if inputs.causal else attn
        o = forward(q_int8, k_int8, v, q_scale, k_scale, tensor_layout=layout,
                    output_dtype=dtype)
        clock.mark("fused_mainloop")
        return o

    def public_name(self) -> str | None:
        return function_name(self.api.public)

    def public(self, inputs: Inputs) -> torch.Tensor | None:
        api = self.api
        if api.flavor == UPSTREAM:
            return output_of(api.public(inputs.q, inputs.k, inputs.v,
                                        tensor_layout=inputs.layout, is_causal=inputs.causal,
                                        sm_scale=inputs.sm_scale, smooth_k=self.smooth_k,
                                        **public_lse(self.return_lse)))
        # 1.0.6 subtracts the K mean in place: hand it a copy so the inputs stay as they are
        return api.public(inputs.q, inputs.k.clone(), inputs.v, tensor_layout=inputs.layout,
                          is_causal=inputs.causal, sm_scale=inputs.sm_scale,
                          smooth_k=self.smooth_k)
