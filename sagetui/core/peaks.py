"""Dense tensor-core peaks per data type, and the peak a kernel can reach with its own types.

An attention call does as many operations in QK^T as in PV (2·N_q·N_kv·D each), so a kernel
whose QK and PV run on different tensor-core types is bounded by the harmonic mean of the two
peaks: 2 / (1/P_qk + 1/P_pv). A share of the int8 peak for a kernel that spends half its work in
fp16 would understate it by up to 2x.

Figures are vendor datasheet values in tera-operations per second, dense (the datasheets'
headline figures are with 2:4 sparsity, twice these), SXM/board boost clocks:
- A100 (SXM/PCIe 80 GB datasheet): FP16/BF16 312, INT8 624; no FP8.
- H100 SXM / H200 SXM / GH200 (H100, H200 and GH200 datasheets: FP16/BF16 1,979, FP8 3,958,
  INT8 3,958 with sparsity): FP16/BF16 989.5, FP8 1,979, INT8 1,979.
- H100 PCIe (datasheet: 1,513 / 3,026 / 3,026 sparse): 756.5 / 1,513 / 1,513.
- H200 NVL (datasheet: 1,671 / 3,341 / 3,341 sparse): 835.5 / 1,671 / 1,671.
- L40S (datasheet: FP16/BF16 733, FP8 1,466, INT8 1,466 sparse): 362.05, 733, 733.
- RTX 4090 (Ada whitepaper, appendix A): FP16/BF16 with FP32 accumulate 165.2 (FP16 with
  FP16 accumulate 330.3), FP8 with FP32 accumulate 330.3 (FP16 accumulate 660.6), INT8 660.6.
- RTX 5090 (RTX Blackwell whitepaper, appendix): FP16/BF16 with FP32 accumulate 209.5 (FP16
  accumulate 419), FP8 with FP32 accumulate 419 (FP16 accumulate 838), INT8 838.
- B200 (HGX B200 datasheet, per GPU: FP16/BF16 4.5, FP8 9, INT8 9 PFLOPS sparse): 2,250,
  4,500, 4,500.
- GB200 (GB200 NVL72 datasheet, per GPU: FP16/BF16 5, FP8 10, INT8 10 PFLOPS sparse): 2,500,
  5,000, 5,000.
GeForce cards run FP32-accumulating MMA at half rate; the "_f16acc" types are their FP16-
accumulate rates (on the data-centre parts both rates are the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

# device-name substring (matched longest first, case-insensitive) -> type -> dense TOPS
DATASHEET: dict[str, dict[str, float]] = {
    "A100": {"fp16": 312.0, "bf16": 312.0, "int8": 624.0},
    "H100 PCIe": {"fp16": 756.5, "bf16": 756.5, "fp8": 1513.0, "int8": 1513.0},
    "H100": {"fp16": 989.5, "bf16": 989.5, "fp8": 1979.0, "int8": 1979.0},
    "H800": {"fp16": 989.5, "bf16": 989.5, "fp8": 1979.0, "int8": 1979.0},
    "H200 NVL": {"fp16": 835.5, "bf16": 835.5, "fp8": 1671.0, "int8": 1671.0},
    "H200": {"fp16": 989.5, "bf16": 989.5, "fp8": 1979.0, "int8": 1979.0},
    "GH200": {"fp16": 989.5, "bf16": 989.5, "fp8": 1979.0, "int8": 1979.0},
    "L40S": {"fp16": 362.05, "bf16": 362.05, "fp8": 733.0, "int8": 733.0},
    "RTX 4090": {"fp16": 165.2, "fp16_f16acc": 330.3, "bf16": 165.2, "fp8": 330.3,
                 "fp8_f16acc": 660.6, "int8": 660.6},
    "RTX 5090": {"fp16": 209.5, "fp16_f16acc": 419.0, "bf16": 209.5, "fp8": 419.0,
                 "fp8_f16acc": 838.0, "int8": 838.0},
    "B200": {"fp16": 2250.0, "bf16": 2250.0, "fp8": 4500.0, "int8": 4500.0},
    "GB200": {"fp16": 2500.0, "bf16": 2500.0, "fp8": 5000.0, "int8": 5000.0},
}

# backend (and option) -> (QK type, PV type). None: no tensor-core peak applies (the CPU).
# sm89's fp32+fp16 and sm80's fp16 accumulate PV in fp16 (on GeForce cards, the faster rate).
KERNEL_TYPES: dict[str, tuple[str, str]] = {
    "sage2-sm80": ("int8", "fp16"),
    "sage2-sm80[pv_accum=fp16]": ("int8", "fp16_f16acc"),
    "sage2-sm80[pv_accum=fp16+fp32]": ("int8", "fp16_f16acc"),
    "sage2-sm89": ("int8", "fp8"),
    "sage2-sm89[pv_accum=fp32+fp16]": ("int8", "fp8_f16acc"),
    "sage2-sm90": ("int8", "fp8"),
    "sage-triton": ("int8", "fp16"),
}


# sage2-auto is SageAttention's public `sageattn`, which picks its kernel by the GPU's
# architecture (sageattention/core.py): its types are those of the kernel it picks.
ARCH_OF = {"A100": "sm80", "H100": "sm90", "H800": "sm90", "H200": "sm90", "GH200": "sm90",
           "L40S": "sm89", "RTX 4090": "sm89", "RTX 5090": "sm120"}
AUTO_PICKS = {"sm80": "sage2-sm80", "sm86": "sage-triton",
              "sm89": "sage2-sm89[pv_accum=fp32+fp16]", "sm90": "sage2-sm90",
              "sm120": "sage2-sm89[pv_accum=fp32+fp16]"}


def _match(device_name: str | None, table: dict[str, object]) -> str | None:
    """The table's key that names this device (longest first, case-insensitive)."""
    if not device_name:
        return None
    name = device_name.lower()
    return next((k for k in sorted(table, key=len, reverse=True) if k.lower() in name), None)


def _gpu(device_name: str | None) -> dict[str, float] | None:
    key = _match(device_name, DATASHEET)  # type: ignore[arg-type]
    return DATASHEET[key] if key else None


def type_peak(device_name: str | None, dtype: str) -> float | None:
    """Dense TOPS of one tensor-core type; "_f16acc" falls back to the plain rate."""
    table = _gpu(device_name)
    if table is None:
        return None
    return table.get(dtype, table.get(dtype.removesuffix("_f16acc")))


def kernel_types(backend: str, options: Mapping[str, object], input_dtype: str,
                 device_name: str | None = None) -> tuple[str, str]:
    """The tensor-core types of QK and PV for a variant. sage2-auto: those of the kernel it
    picks on this GPU. Baselines (sdpa, flash-attn) compute both in the inputs' type."""
    if backend == "sage2-auto":
        arch = ARCH_OF.get(_match(device_name, ARCH_OF) or "")  # type: ignore[arg-type]
        picked = AUTO_PICKS.get(arch or "")
        if picked is not None:
            return KERNEL_TYPES.get(picked, KERNEL_TYPES[picked.split("[")[0]])
    accum = options.get("pv_accum")
    key = f"{backend}[pv_accum={accum}]" if accum else backend
    if key in KERNEL_TYPES:
        return KERNEL_TYPES[key]
    if backend in KERNEL_TYPES:
        return KERNEL_TYPES[backend]
    return (input_dtype, input_dtype)


def blended_peak(p_qk: float, p_pv: float) -> float:
    """Peak of a kernel that does equal work on two types: 2 / (1/P_qk + 1/P_pv) (the peak
    itself, exactly, when both are the same)."""
    return p_qk if p_qk == p_pv else 2.0 / (1.0 / p_qk + 1.0 / p_pv)


class KernelPeak(TypedDict):
    peak_tops: float
    qk_type: str
    pv_type: str
    source: str


def kernel_peak(device_name: str | None, backend: str, options: Mapping[str, object],
                input_dtype: str) -> KernelPeak | None:
    """{"peak_tops", "qk_type", "pv_type", "source"} for a variant on this GPU, or None."""
    if backend == "reference":
        return None
    qk, pv = kernel_types(backend, options, input_dtype, device_name)
    p_qk, p_pv = type_peak(device_name, qk), type_peak(device_name, pv)
    if p_qk is None or p_pv is None:
        return None
    return {"peak_tops": blended_peak(p_qk, p_pv), "qk_type": qk, "pv_type": pv,
            "source": "datasheet dense peak (sagetui/core/peaks.py)"}


__all__ = ["DATASHEET", "blended_peak", "kernel_peak", "kernel_types", "type_peak"]
