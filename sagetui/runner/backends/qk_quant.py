"""The steps every SageAttention2 CUDA path shares before its main loop, as core.py does them:
head-dim padding and the K mean (`k_mean_and_smoothing_preparation`), then Q int8
(`q_int8_quantization`) and K minus its mean in int8 (`k_int8_subtract_mean_quantization`).
With smooth_k=false, as core.py with `km = None`: no K mean, and K is quantized as it is
(`k_int8_quantization`: `quant_per_block_int8_cuda`, or per_thread's kernel on K itself).

`per_warp` uses the `_fused` CUDA kernels (quant.per_warp_int8); `per_thread` replays
sageattention/triton/quant_per_thread.py's `per_thread_int8` with its own Triton kernels, one
phase per kernel (its `k - km` belongs to the K phase). Same kernels, same launch parameters,
same bytes: the decomposition check compares them with the public function every run.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

import torch

from sagetui.core.phases import k_leaf
from sagetui.runner.backends.base import PhaseClock
from sagetui.runner.backends.lse import lse_correction
from sagetui.runner.backends.triton import pad_head_dim

# core.py's _qk_quant_gran codes
GRAN_CODE = {"per_warp": 2, "per_thread": 3}


@dataclass
class Prepared:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    km: torch.Tensor | None  # K's mean over the tokens; None without smooth_k
    tl: int  # 0 NHD, 1 HND
    head_dim_og: int
    lse_correction: torch.Tensor | None = None  # return_lse with smooth_k (lse.py)


@dataclass
class QuantQK:
    q_int8: torch.Tensor
    q_scale: torch.Tensor
    k_int8: torch.Tensor
    k_scale: torch.Tensor


def prepare(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: str,
            clock: PhaseClock, smooth_k: bool, return_lse: bool) -> Prepared:
    """`clock.start()`, padding and the K mean (with smooth_k; with return_lse too, the lse
    correction core.py computes beside it), `k_mean_and_smoothing_preparation` marked."""
    torch.cuda.set_device(v.device)  # as core.py does before every call
    tl = 0 if layout == "NHD" else 1
    head_dim_og = q.size(-1)
    clock.start()
    q, k, v = pad_head_dim(q), pad_head_dim(k), pad_head_dim(v)
    km = k.mean(dim=1 if tl == 0 else 2, keepdim=True) if smooth_k else None
    correction = lse_correction(q, km, layout) if return_lse and km is not None else None
    clock.mark("k_mean_and_smoothing_preparation")
    return Prepared(q, k, v, km, tl, head_dim_og, correction)


def _dims(p: Prepared) -> tuple[int, int, int, int, int]:
    if p.tl == 1:
        b, h_qo, qo_len, _ = p.q.shape
        _, h_kv, kv_len, _ = p.k.shape
    else:
        b, qo_len, h_qo, _ = p.q.shape
        _, kv_len, h_kv, _ = p.k.shape
    return b, h_qo, qo_len, h_kv, kv_len


def quantize(fused: ModuleType, p: Prepared, gran: str, blkq: int, warpq: int, blkk: int,
             clock: PhaseClock) -> QuantQK:
    if gran == "per_thread":
        return _per_thread(p, blkq, warpq, blkk, clock)
    b, h_qo, qo_len, h_kv, kv_len = _dims(p)
    q, k = p.q, p.k
    # quant.per_warp_int8(q, k, km, BLKQ, WARPQ, BLKK)
    q_int8 = torch.empty(q.shape, dtype=torch.int8, device=q.device)
    q_scale = torch.empty((b, h_qo, ((qo_len + blkq - 1) // blkq) * (blkq // warpq)),
                          device=q.device, dtype=torch.float32)
    fused.quant_per_warp_int8_cuda(q, q_int8, q_scale, blkq, warpq, p.tl)
    clock.mark("q_int8_quantization")
    k_int8 = torch.empty(k.shape, dtype=torch.int8, device=k.device)
    k_scale = torch.empty((b, h_kv, (kv_len + blkk - 1) // blkk), device=q.device,
                          dtype=torch.float32)
    if p.km is not None:
        km_rows = p.km.squeeze(1) if p.tl == 0 else p.km.squeeze(2)
        fused.quant_per_block_int8_fuse_sub_mean_cuda(k, km_rows, k_int8, k_scale, blkk, p.tl)
    else:  # quant.per_warp_int8 with km=None
        fused.quant_per_block_int8_cuda(k, k_int8, k_scale, blkk, p.tl)
    clock.mark(k_leaf(p.km is not None))
    return QuantQK(q_int8, q_scale, k_int8, k_scale)


def _triton_kernels() -> ModuleType:
    return importlib.import_module("sageattention.triton.quant_per_thread")


def _strides(x: torch.Tensor, tl: int) -> tuple[int, int, int]:
    # (batch, head, sequence) strides, as per_thread_int8 reads them for each layout
    return (x.stride(0), x.stride(1), x.stride(2)) if tl == 1 else \
        (x.stride(0), x.stride(2), x.stride(1))


def _per_thread(p: Prepared, blkq: int, warpq: int, blkk: int, clock: PhaseClock) -> QuantQK:
    """per_thread_int8(q, k, km, BLKQ, WARPQ, BLKK, WARPK=BLKK), one phase per kernel."""
    mod = _triton_kernels()
    warpk = blkk  # core.py passes WARPK equal to BLKK on every path
    b, h_qo, qo_len, h_kv, kv_len = _dims(p)
    q = p.q
    head_dim = q.size(-1)
    q_int8 = torch.empty(q.shape, dtype=torch.int8, device=q.device)
    q_scale = torch.empty((b, h_qo, (qo_len + blkq - 1) // blkq * (blkq // warpq) * 8),
                          device=q.device, dtype=torch.float32)
    grid = ((qo_len + blkq - 1) // blkq * (blkq // warpq) * 8, h_qo, b)
    mod.quant_query_per_thread_int8_kernel[grid](
        q, q_int8, q_scale, qo_len, *_strides(q, p.tl), *_strides(q_int8, p.tl),
        q_scale.stride(0), q_scale.stride(1), C=head_dim, BLK=warpq)
    clock.mark("q_int8_quantization")
    k = p.k - p.km if p.km is not None else p.k  # per_thread_int8: `if km is not None`
    k_int8 = torch.empty(k.shape, dtype=torch.int8, device=k.device)
    k_scale = torch.empty((b, h_kv, (kv_len + blkk - 1) // blkk * (blkk // warpk) * 4),
                          device=q.device, dtype=torch.float32)
    grid = ((kv_len + blkk - 1) // blkk * (blkk // warpk) * 4, h_kv, b)
    mod.quant_key_per_thread_int8_kernel[grid](
        k, k_int8, k_scale, kv_len, *_strides(k, p.tl), *_strides(k_int8, p.tl),
        k_scale.stride(0), k_scale.stride(1), C=head_dim, BLK=warpk)
    clock.mark(k_leaf(p.km is not None))
    return QuantQK(q_int8, q_scale, k_int8, k_scale)


def triton_available() -> str | None:
    """Why per_thread cannot run here (the Triton quantization does not import), or None."""
    try:
        _triton_kernels()
    except Exception as exc:
        return f"per_thread needs sageattention.triton.quant_per_thread: " \
               f"{type(exc).__name__}: {exc}"
    return None
