"""SageAttention2's sm80 path (int8 QK, fp16 PV, `mma.sync`), decomposed into phases.

`sage2-sm80` replays `sageattn_qk_int8_pv_fp16_cuda` (core.py) step by step with the variant's
`pv_accum` (fp32, fp16+fp32, fp16), `qk_quant_gran` (per_warp: `_fused`; per_thread: Triton),
`smooth_k` and `smooth_v` (fp16 accumulation only), calling `_qattn_sm80`'s functions
directly, so that the output bytes equal the public function's (checked every run). The kernel
runs on every GPU from sm80 up. Its modules load like the other paths' (installed, or a
variant's `.so` through variants.load_extension; never a second copy of `sm80_compile.py`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from sagetui.core.phases import (
    SAGE2_SM80_PHASES,
    SAGE2_SM80_SMOOTH_V_PHASES,
    PhaseSpec,
    with_smooth_k,
)
from sagetui.core.scheduler import kernel_of
from sagetui.runner.backends.base import Inputs, PhaseClock, bound_public
from sagetui.runner.backends.lse import natural_lse
from sagetui.runner.backends.qk_quant import GRAN_CODE, prepare, quantize
from sagetui.runner.backends.sage2 import Sage2CudaBackend, check_sage2

QATTN = "_qattn_sm80"
PUBLIC = "sageattn_qk_int8_pv_fp16_cuda"
BLKQ, BLKK = 128, 64  # core.py's per_warp_int8 / per_thread_int8 blocks for this path

# pv_accum -> the pybind function (pybind_sm80.cpp)
KERNELS = {
    "fp32": "qk_int8_sv_f16_accum_f32_attn",
    "fp16": "qk_int8_sv_f16_accum_f16_attn",
    "fp16+fp32": "qk_int8_sv_f16_accum_f16_attn_inst_buf",
}
SMOOTH_V_KERNEL = "qk_int8_sv_f16_accum_f16_fuse_v_mean_attn"


class Sage2Sm80Backend(Sage2CudaBackend):
    name: ClassVar[str] = "sage2-sm80"
    kernel: ClassVar[str | None] = "sm80"  # "sm80-inst-buf" for fp16+fp32 (set per instance)
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = "SageAttention2 int8 QK, fp16 PV, mma.sync (sm80 kernel)"

    qattn_module: ClassVar[str] = QATTN

    def __init__(self, options: dict[str, Any] | None = None, module_path: str | None = None,
                 variant_name: str = "default") -> None:
        super().__init__(options, module_path, variant_name)
        # the class's kernel is its default; fp16+fp32 runs another tile configuration
        self.kernel = kernel_of(self.name, self.options)  # type: ignore[misc]

    @classmethod
    def check_available(cls, device: str) -> None:
        check_sage2(device, cls.name, QATTN, PUBLIC, (8, 0), None)

    def _kernel_fn(self) -> str:
        return SMOOTH_V_KERNEL if self.smooth_v else KERNELS[self.pv_accum]

    def phases(self) -> list[PhaseSpec]:
        return with_smooth_k(SAGE2_SM80_SMOOTH_V_PHASES if self.smooth_v else SAGE2_SM80_PHASES,
                             self.smooth_k)

    def _warpq(self, head_dim: int) -> int:
        # core.py: WARPQ=(16 if (q.size(-1) == 128 and pv_accum_dtype == "fp16+fp32") else 32)
        return 16 if head_dim == 128 and self.pv_accum == "fp16+fp32" else 32

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        fused, qattn = self.modules.fused, self.modules.qattn
        dtype = inputs.q.dtype
        prep = prepare(inputs.q, inputs.k, inputs.v, inputs.layout, clock, self.smooth_k,
                       self.return_lse)
        qk = quantize(fused, prep, self.gran, BLKQ, self._warpq(prep.q.size(-1)), BLKK, clock)
        o = torch.empty(prep.q.size(), dtype=dtype, device=prep.q.device)
        v, tl = prep.v, prep.tl
        extra: tuple[torch.Tensor, ...] = ()
        if self.smooth_v:
            # quant.sub_mean(v, tensor_layout)
            vm = v.mean(dim=1 if tl == 0 else 2)
            clock.mark("v_mean")
            smoothed = torch.empty(v.shape, dtype=torch.float16, device=v.device)
            fused.sub_mean_cuda(v, vm, smoothed, tl)
            clock.mark("v_subtract_mean_fp16")
            v, extra = smoothed, (vm,)
        else:
            v = v.to(torch.float16)
            clock.mark("v_fp16_conversion")
        lse = getattr(qattn, self._kernel_fn())(
            qk.q_int8, qk.k_int8, v, o, qk.q_scale, qk.k_scale, *extra, tl,
            1 if inputs.causal else 0, GRAN_CODE[self.gran], inputs.sm_scale,
            1 if self.return_lse else 0)
        o = o[..., :prep.head_dim_og]
        if self.return_lse:
            self.last_lse = natural_lse(lse, prep.lse_correction, inputs.sm_scale)
        clock.mark("fused_mainloop")
        return o

    def public_call(self, layout: str, causal: bool,
                    sm_scale: float) -> Callable[..., torch.Tensor] | None:
        fn = getattr(importlib.import_module("sageattention"), PUBLIC)
        return bound_public(fn, self.return_lse, tensor_layout=layout, is_causal=causal,
                            qk_quant_gran=self.gran, sm_scale=sm_scale,
                            pv_accum_dtype=self.pv_accum, smooth_k=self.smooth_k,
                            smooth_v=self.smooth_v)
