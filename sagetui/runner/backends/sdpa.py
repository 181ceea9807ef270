"""torch's scaled_dot_product_attention: the baseline a user would pick instead of SageAttention.

One leaf phase, "attention". NHD inputs are passed as transposed views (no copy: SDPA takes
strided [B, H, N, D] tensors with a contiguous last dimension) and the output comes back as the
matching view, the way a caller with NHD tensors would use it.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from sagetui.core.phases import PhaseSpec

from .base import Backend, BackendUnavailable, Inputs, PhaseClock


def require_cuda(device: str) -> None:
    """Raise BackendUnavailable unless `device` names a CUDA device that torch can use."""
    if not device.startswith("cuda"):
        raise BackendUnavailable(f"needs a CUDA device; asked for {device!r}")
    if not torch.cuda.is_available():
        built = torch.version.cuda
        why = "it is a CPU-only build" if built is None else f"built for CUDA {built}, no device"
        raise BackendUnavailable(f"CUDA is not available to torch {torch.__version__} ({why})")
    index = torch.device(device).index or 0
    if index >= torch.cuda.device_count():
        raise BackendUnavailable(f"{device} does not exist: {torch.cuda.device_count()} device(s)")


class SdpaBackend(Backend):
    name: ClassVar[str] = "sdpa"
    kernel: ClassVar[str | None] = None
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = "torch.nn.functional.scaled_dot_product_attention (baseline)"

    @classmethod
    def check_available(cls, device: str) -> None:
        require_cuda(device)

    def phases(self) -> list[PhaseSpec]:
        return [PhaseSpec("attention")]

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        nhd = inputs.layout == "NHD"
        q, k, v = (t.transpose(1, 2) if nhd else t for t in (inputs.q, inputs.k, inputs.v))
        clock.start()
        out = _sdpa(q, k, v, inputs.causal, inputs.sm_scale)
        clock.mark("attention")
        return out.transpose(1, 2) if nhd else out


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
          scale: float) -> torch.Tensor:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if q.shape[1] == k.shape[1]:
        return sdpa(q, k, v, is_causal=causal, scale=scale)
    try:
        # GQA without materialising repeated K/V (torch >= 2.5)
        return sdpa(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)
    except TypeError:
        group = q.shape[1] // k.shape[1]
        k, v = (t.repeat_interleave(group, dim=1) for t in (k, v))
        return sdpa(q, k, v, is_causal=causal, scale=scale)
