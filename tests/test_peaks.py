"""Share of peak for each kernel's own data types: datasheet dense peaks and the blended peak of
int8 QK with fp16 or fp8 PV."""

import pytest

from sagetui.core import peaks


def test_blended_peak_is_the_harmonic_mean():
    assert peaks.blended_peak(1979.0, 989.5) == pytest.approx(2 / (1 / 1979.0 + 1 / 989.5))
    assert peaks.blended_peak(624.0, 624.0) == 624.0


@pytest.mark.parametrize(("gpu", "backend", "options", "expected"), [
    # int8 QK + fp8 PV on an H200: both 1,979 dense
    ("NVIDIA H200", "sage2-sm89", {}, 1979.0),
    ("NVIDIA H200", "sage2-sm90", {}, 1979.0),
    # int8 QK + fp16 PV: 2 / (1/1979 + 1/989.5) = 1319.3
    ("NVIDIA H200", "sage2-sm80", {"pv_accum": "fp16"}, 2 / (1 / 1979.0 + 1 / 989.5)),
    ("NVIDIA A100-SXM4-80GB", "sage2-sm80", {}, 2 / (1 / 624.0 + 1 / 312.0)),
    # a baseline computes in the inputs' type
    ("NVIDIA H100 80GB HBM3", "sdpa", {"backend": "cudnn"}, 989.5),
    ("NVIDIA H100 PCIe", "sdpa", {}, 756.5),
    ("NVIDIA H200 NVL", "sage2-sm90", {}, 1671.0),
    ("NVIDIA GH200 480GB", "sage2-sm90", {}, 1979.0),
    ("NVIDIA B200", "sage2-sm89", {}, 4500.0),
    ("NVIDIA GB200", "sdpa", {}, 2500.0),
    ("NVIDIA L40S", "sage2-sm89", {}, 733.0),
    # GeForce: fp32-accumulating fp8 at half rate, fp16 accumulation at full
    ("NVIDIA GeForce RTX 4090", "sage2-sm89", {}, 2 / (1 / 660.6 + 1 / 330.3)),
    ("NVIDIA GeForce RTX 4090", "sage2-sm89", {"pv_accum": "fp32+fp16"}, 660.6),
    ("NVIDIA GeForce RTX 5090", "sage2-sm80", {"pv_accum": "fp16"}, 2 / (1 / 838.0 + 1 / 419.0)),
])
def test_kernel_peak(gpu, backend, options, expected):
    p = peaks.kernel_peak(gpu, backend, options, "bf16")
    assert p is not None
    assert p["peak_tops"] == pytest.approx(expected)


def test_no_peak_for_the_cpu_or_an_unknown_gpu():
    assert peaks.kernel_peak(None, "reference", {}, "bf16") is None
    assert peaks.kernel_peak("Some GPU 9000", "sage2-sm89", {}, "bf16") is None
    # H200 NVL is not matched as H200, nor GH200 as H200's other entries
    assert peaks.type_peak("NVIDIA H200 NVL", "int8") == 1671.0


@pytest.mark.parametrize(("gpu", "types"), [
    ("NVIDIA H200", ("int8", "fp8")),  # sageattn picks the sm90 kernel
    ("NVIDIA A100-SXM4-80GB", ("int8", "fp16")),  # sm80, pv_accum fp32
    ("NVIDIA GeForce RTX 4090", ("int8", "fp8_f16acc")),  # sm89, fp32+fp16
])
def test_the_public_dispatch_has_the_types_of_the_kernel_it_picks(gpu, types):
    assert peaks.kernel_types("sage2-auto", {}, "bf16", gpu) == types
    assert peaks.kernel_peak(gpu, "sage2-auto", {}, "bf16")["qk_type"] == "int8"
