"""SageAttention2's paths as trees of named phases (the phase-breakdown report,
sample_results/000_*).

The runner's backends time its leaves; a parent is the sum of its children. Reports, exports
and the console read the same tree, so every layer names the phases alike.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PhaseSpec:
    name: str
    parent: str | None = None  # a leaf's parent phase, if it has one


# the reference backend and the sm89/sm90 backends share this tree, so their reports line up
# phase by phase
SAGE2_PHASES = (
    PhaseSpec("k_mean_and_smoothing_preparation"),
    PhaseSpec("qk_int8_quantization"),
    PhaseSpec("q_int8_quantization", "qk_int8_quantization"),
    PhaseSpec("k_int8_subtract_mean_quantization", "qk_int8_quantization"),
    PhaseSpec("v_fp8_transpose_scale_quantization"),
    PhaseSpec("v_transpose_pad_permute", "v_fp8_transpose_scale_quantization"),
    PhaseSpec("v_scale_fp8_quantization", "v_fp8_transpose_scale_quantization"),
    PhaseSpec("fused_mainloop"),
)

# the phases inside the fused main loop, which no wall clock can split (a report says so)
FUSED_MAINLOOP_PHASES = {
    "int8_qk": "fused inside qk_int_sv_f8_attn_kernel",
    "scale_application": "fused inside qk_int_sv_f8_attn_kernel",
    "online_softmax": "fused inside qk_int_sv_f8_attn_kernel",
    "pv_accumulation": "fused inside qk_int_sv_f8_attn_kernel",
    "final_normalization_and_output": "fused inside qk_int_sv_f8_attn_kernel",
    "timing_policy": "Do not assign independent wall time without changing the exact kernel "
                     "schedule; use source-correlated hardware counters.",
}

# K's int8 quantization leaf: with smooth_k its mean is subtracted in the same kernel; without
# it (smooth_k=false) K is quantized as it is, and `k_mean_and_smoothing_preparation` holds only
# the head-dim padding (nothing at head dim 64 or 128)
K_SMOOTHED, K_PLAIN = "k_int8_subtract_mean_quantization", "k_int8_quantization"


def k_leaf(smooth_k: bool) -> str:
    return K_SMOOTHED if smooth_k else K_PLAIN


def with_smooth_k(tree: tuple[PhaseSpec, ...], smooth_k: bool) -> list[PhaseSpec]:
    """A SageAttention2 tree as it runs with or without K smoothing."""
    return [PhaseSpec(k_leaf(smooth_k), p.parent) if p.name == K_SMOOTHED else p for p in tree]


# sm89 with smooth_v: V's mean, scale and fp8 quantization in one fused kernel
SAGE2_SMOOTH_V_PHASES = tuple(
    PhaseSpec(p.name.replace("v_scale_", "v_mean_scale_"), p.parent) for p in SAGE2_PHASES)

# the sm80 path (int8 QK, fp16 PV): the same Q/K phases; V is only cast to fp16 for the
# fp16 MMA, or, with smooth_v, has its mean subtracted into fp16 (quant.sub_mean)
_QK = SAGE2_PHASES[:4]
SAGE2_SM80_PHASES = (*_QK, PhaseSpec("v_fp16_conversion"), PhaseSpec("fused_mainloop"))
SAGE2_SM80_SMOOTH_V_PHASES = (
    *_QK,
    PhaseSpec("v_fp16_smoothing"),
    PhaseSpec("v_mean", "v_fp16_smoothing"),
    PhaseSpec("v_subtract_mean_fp16", "v_fp16_smoothing"),
    PhaseSpec("fused_mainloop"),
)

# child -> parent, for a report that carries phase names but not their tree (the reference
# reports): the sums are recognised by name
PARENTS = {p.name: p.parent for p in (*SAGE2_PHASES, *SAGE2_SMOOTH_V_PHASES,
                                      *SAGE2_SM80_SMOOTH_V_PHASES,
                                      *with_smooth_k(SAGE2_PHASES, False)) if p.parent}
