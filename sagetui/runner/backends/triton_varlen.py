"""SageAttention's `sageattn_varlen` (Triton: int8 QK per block, fp16 PV) on packed sequences,
decomposed into its phases as sageattention/core.py runs them:

- `k_mean_and_smoothing_preparation`: head-dim padding, V's cast to fp16 (bf16 inputs), and with
  smooth_k K minus its mean, taken over every packed token (core.py's note: a mean per sequence
  would need a kernel of its own);
- `qk_int8_quantization`: `per_block_int8` of quant_per_block_varlen.py (Q per 128 tokens with
  sm_scale·log2(e) folded in, K per 64, each sequence's blocks on its own, plus the scales'
  cu_seqlens);
- `fused_mainloop`: attn_qk_int8_block_varlen's (or the causal one's) `forward`.

Only upstream source builds (2.x) have these modules; PyPI's 1.0.6 has no varlen function. The
packed sequences are the inputs' (`--seqlens`, or a captured call's cu_seqlens): their
cu_seqlens are made with the inputs, outside every timed region.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from sagetui.runner.backends.base import (
    BackendUnavailable,
    Inputs,
    Packed,
    PhaseClock,
    function_name,
)
from sagetui.runner.backends.sdpa import require_cuda
from sagetui.runner.backends.triton import (
    SageTritonBackend,
    pad_head_dim,
    sageattention_version,
)


@dataclass(frozen=True)
class VarlenApi:
    version: str
    quant: Any  # quant_per_block_varlen.per_block_int8
    attn: Any  # attn_qk_int8_block_varlen.forward
    attn_causal: Any  # attn_qk_int8_per_block_causal_varlen.forward
    public: Any  # sageattn_varlen


def load_varlen_api() -> VarlenApi:
    """The installed sageattention's varlen pieces; BackendUnavailable with the real reason."""
    try:
        sage = importlib.import_module("sageattention")
    except Exception as exc:
        raise BackendUnavailable(f"cannot import sageattention: {type(exc).__name__}: {exc}") \
            from exc
    version = sageattention_version()
    if not hasattr(sage, "sageattn_varlen"):
        raise BackendUnavailable(f"sageattention {version} has no sageattn_varlen")
    try:
        imp = importlib.import_module
        return VarlenApi(
            version=version,
            quant=imp("sageattention.triton.quant_per_block_varlen").per_block_int8,
            attn=imp("sageattention.triton.attn_qk_int8_block_varlen").forward,
            attn_causal=imp("sageattention.triton.attn_qk_int8_per_block_causal_varlen").forward,
            public=sage.sageattn_varlen)
    except Exception as exc:
        raise BackendUnavailable(f"sageattention {version}: its varlen Triton modules do not "
                                 f"import: {type(exc).__name__}: {exc}") from exc


def packed_of(inputs: Inputs) -> Packed:
    """The inputs' packed sequences; inputs that are not packed (the public API's priming
    call) are one sequence per batch row of its tokens."""
    if inputs.packed is not None:
        return inputs.packed
    b, n_q, n_kv = inputs.q.shape[0], inputs.q.shape[1], inputs.k.shape[1]
    dev = inputs.q.device
    return Packed(seqlens=(n_q,) * b, kv_seqlens=(n_kv,) * b,
                  cu_seqlens_q=torch.arange(b + 1, dtype=torch.int32, device=dev) * n_q,
                  cu_seqlens_k=torch.arange(b + 1, dtype=torch.int32, device=dev) * n_kv)


def tokens(x: torch.Tensor) -> torch.Tensor:
    """[B, N, H, D] packed as sageattn_varlen takes it, [B·N, H, D] (a view)."""
    return x.reshape(-1, *x.shape[2:])


class Sage2VarlenBackend(SageTritonBackend):
    """sage-triton's options (smooth_k), phases and variant rule; sageattn_varlen's kernels."""

    name: ClassVar[str] = "sage2-varlen"
    description: ClassVar[str] = "SageAttention's sageattn_varlen: packed sequences, Triton"

    def __init__(self, options: dict[str, Any] | None = None, module_path: str | None = None,
                 variant_name: str = "default") -> None:
        super().__init__(options, module_path, variant_name)
        self._varlen: VarlenApi | None = None

    @classmethod
    def check_available(cls, device: str) -> None:
        require_cuda(device)
        load_varlen_api()

    def load(self) -> None:
        self.refuse_module_path()
        self._varlen = load_varlen_api()

    @property
    def varlen(self) -> VarlenApi:
        if self._varlen is None:
            self.load()
        assert self._varlen is not None
        return self._varlen

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        if inputs.layout != "NHD":
            raise ValueError("sageattn_varlen takes NHD tensors ([tokens, heads, head_dim])")
        api, p = self.varlen, packed_of(inputs)
        q, k, v = (tokens(t) for t in (inputs.q, inputs.k, inputs.v))
        dtype = q.dtype
        torch.cuda.set_device(v.device)
        head_dim_og = q.size(-1)
        clock.start()
        q, k, v = pad_head_dim(q), pad_head_dim(k), pad_head_dim(v)
        if dtype == torch.bfloat16 or dtype == torch.float32:
            v = v.to(torch.float16)
        if self.smooth_k:
            k = k - k.mean(dim=0, keepdim=True)  # over every packed token, as core.py
        clock.mark("k_mean_and_smoothing_preparation")
        q_int8, q_scale, k_int8, k_scale, cu_q_scale, cu_k_scale = api.quant(
            q, k, p.cu_seqlens_q, p.cu_seqlens_k, p.max_seqlen_q, p.max_seqlen_k,
            sm_scale=inputs.sm_scale)
        clock.mark("qk_int8_quantization")
        forward = api.attn_causal if inputs.causal else api.attn
        o = forward(q_int8, k_int8, v, p.cu_seqlens_q, p.cu_seqlens_k, p.max_seqlen_q,
                    q_scale, k_scale, cu_q_scale, cu_k_scale, output_dtype=dtype)
        o = o[..., :head_dim_og]
        clock.mark("fused_mainloop")
        return o.reshape(inputs.q.shape)

    def public_name(self) -> str | None:
        return function_name(self.varlen.public)

    def public(self, inputs: Inputs) -> torch.Tensor | None:
        p = packed_of(inputs)
        q, k, v = (tokens(t) for t in (inputs.q, inputs.k, inputs.v))
        o = self.varlen.public(q, k, v, p.cu_seqlens_q, p.cu_seqlens_k, p.max_seqlen_q,
                            p.max_seqlen_k, is_causal=inputs.causal, sm_scale=inputs.sm_scale,
                            smooth_k=self.smooth_k)
        return o.reshape(inputs.q.shape)
