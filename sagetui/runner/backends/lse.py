"""return_lse as SageAttention's public functions compute it (sageattention/core.py): the kernel
returns each query row's log-sum-exp in base 2 of the scores it saw, the scores of K minus its
mean when smooth_k is on; the function adds back what the mean took away (q·mean(K) per row,
`lse_correction`, computed beside the K mean) and turns it to natural log. The CUDA kernels
take return_lse as a template parameter: with it another kernel runs."""

from __future__ import annotations

import torch

LOG2E = 1.44269504  # core.py's constant, so that the figure is the function's to the bit


def lse_correction(q: torch.Tensor, km: torch.Tensor, layout: str) -> torch.Tensor:
    """q·km per query row, [B, Hq, Nq] fp32, km broadcast over the query heads of its kv head
    (core.py's matmul in the inputs' dtype, then fp32)."""
    nh_dim = 2 if layout == "NHD" else 1
    group = q.size(nh_dim) // km.size(nh_dim)
    kmb = torch.repeat_interleave(km, group, dim=nh_dim) if group > 1 else km
    if layout == "NHD":
        return torch.matmul(q.transpose(1, 2),
                            kmb.transpose(1, 2).transpose(2, 3)).squeeze(-1).to(torch.float32)
    return torch.matmul(q, kmb.transpose(2, 3)).squeeze(-1).to(torch.float32)


def natural_lse(lse: torch.Tensor, correction: torch.Tensor | None,
                sm_scale: float) -> torch.Tensor:
    """The kernel's base-2 lse as the public function returns it."""
    if correction is None:
        return lse / LOG2E
    return lse / LOG2E + correction * sm_scale


def public_lse(on: bool) -> dict[str, bool]:
    """The public function's return_lse argument: passed only when on, so that a function
    without it (an older build) is called as before."""
    return {"return_lse": True} if on else {}


def output_of(result: torch.Tensor | tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """The output of a public call, which returns (o, lse) with return_lse: the decomposition
    check compares the outputs (the lse is the variant's own, hashed with its output)."""
    return result[0] if isinstance(result, tuple) else result
