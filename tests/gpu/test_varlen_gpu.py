"""sage2-varlen and return_lse on a real GPU: the decomposed sageattn_varlen against the public
function byte for byte and against an independent fp32 SDPA loop, one sequence at a time; each
CUDA path's and the Triton path's lse with return_lse against fp32's log-sum-exp, and their
outputs unchanged by it. Run on the GPU machine with SageAttention built."""

from __future__ import annotations

import math

import pytest
import torch
from gpu_stats import GPU_MARKS

from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.runner.backends import backend_class
from sagetui.runner.backends.base import BackendUnavailable, NullClock
from sagetui.runner.inputs import build_inputs

pytestmark = GPU_MARKS
SEQLENS = (1000, 37, 2048, 129)


def _backend(name: str, **options):
    try:
        backend_class(name).check_available("cuda")
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    be = backend_class(name)(options)
    be.load()
    return be


def _inputs(causal: bool, seqlens=None, layout="NHD", q_len=2048):
    shape = Shape(batch=1, heads=8, kv_heads=2, q_len=sum(seqlens) if seqlens else q_len,
                  head_dim=128, dtype="bf16", layout=layout, causal=causal,
                  seqlens=seqlens)
    variant = "sage2-varlen" if seqlens else "sdpa"
    return build_inputs(RunConfig(shape=shape, variants=[VariantSpec.parse(variant)],
                                  device="cuda"), "cuda")


def _fp32(inputs, causal: bool, segments):
    """Per-sequence fp32 attention and lse, [1, tokens, H, D] and [1, H, tokens]."""
    q, k, v = (t[0].transpose(0, 1).float() for t in (inputs.q, inputs.k, inputs.v))
    out, lse = [], []
    for q0, q1, k0, k1 in segments:
        qs = q[:, q0:q1]
        ks, vs = (t[:, k0:k1].repeat_interleave(q.shape[0] // t.shape[0], 0) for t in (k, v))
        s = qs @ ks.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(torch.ones(q1 - q0, k1 - k0, dtype=torch.bool,
                                         device=s.device).triu(1), float("-inf"))
        out.append(torch.softmax(s, -1) @ vs)
        lse.append(torch.logsumexp(s, -1))
    return torch.cat(out, 1).transpose(0, 1)[None], torch.cat(lse, -1)[None]


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_matches_its_public_function_and_fp32_per_sequence(causal: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    be = _backend("sage2-varlen")
    inputs = _inputs(causal, SEQLENS)
    out = be.run(inputs, NullClock())
    assert torch.equal(out, be.public(inputs))  # the decomposition is the function's bytes
    assert inputs.packed is not None
    want, _ = _fp32(inputs, causal, inputs.packed.segments())
    rel_l1 = ((out.float() - want).abs().sum() / want.abs().sum()).item()
    print(f"sage2-varlen causal={causal}: rel L1 {rel_l1:.4f}")
    assert rel_l1 < 0.05
    # one dense SDPA over every packed token is another answer: the test tells them apart
    dense, _ = _fp32(inputs, causal, [(0, sum(SEQLENS), 0, sum(SEQLENS))])
    assert ((dense - want).abs().sum() / want.abs().sum()).item() > 0.2


@pytest.mark.parametrize("name", ["sage2-sm80", "sage2-sm89", "sage2-sm90", "sage-triton"])
def test_return_lse_is_fp32_s_log_sum_exp(name: str) -> None:
    """With K's mean large, smoothing's correction keeps the lse within 0.05 of fp32's; without
    smooth_k, K's int8 quantization loses more (measured on the H200: 0.043 against 0.107 on
    every path), so the bound there is looser and smoothing must do better."""
    torch.backends.cuda.matmul.allow_tf32 = False
    inputs = _inputs(True)
    inputs.k += 3.0  # a large K mean: the lse is only right with smoothing's correction
    want_out, want_lse = _fp32(inputs, True, [(0, 2048, 0, 2048)])
    errors = {}
    for smooth_k in (True, False):
        be = _backend(name, return_lse=True, smooth_k=smooth_k)
        out = be.run(inputs, NullClock())
        assert be.last_lse is not None and be.last_lse.shape == (1, 8, 2048)
        plain = _backend(name, smooth_k=smooth_k).run(inputs, NullClock())
        print(f"{name} smooth_k={smooth_k}: output with/without return_lse equal: "
              f"{torch.equal(out, plain)}")
        errors[smooth_k] = (be.last_lse - want_lse).abs().max().item()
        print(f"{name} smooth_k={smooth_k}: lse max abs error {errors[smooth_k]:.4g}")
        assert ((out.float() - want_out).abs().sum() / want_out.abs().sum()).item() < 0.05
    assert errors[True] < 0.05 and errors[False] < 0.15 and errors[True] < errors[False], errors


def test_the_reference_runs_packed_sequences_on_the_gpu_as_on_the_cpu() -> None:
    """The reference backend (torch ops) on CUDA: every tensor it makes on its inputs' device,
    its output within float rounding of the same inputs' run on the CPU."""
    inputs = _inputs(True, SEQLENS)
    ref = _backend("reference")
    out = ref.run(inputs, NullClock())
    assert out.device.type == "cuda"
    cpu = type(inputs)(q=inputs.q.cpu(), k=inputs.k.cpu(), v=inputs.v.cpu(), layout=inputs.layout,
                       causal=inputs.causal, sm_scale=inputs.sm_scale, packed=inputs.packed)
    want = ref.run(cpu, NullClock())
    d = (out.cpu().float() - want.float()).abs()
    assert (d.sum() / want.float().abs().sum()).item() < 1e-2, d.max().item()
