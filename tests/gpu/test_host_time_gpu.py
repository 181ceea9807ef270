"""What the user's model pays, on a GPU (run on the H200): host time, back-to-back time and
host-bound beside the GPU time, blocks GPU-paced or redone, the clocks a verdict names, and the
public API's first call paid in the baseline's warm-up, off the late figures."""

import time

import pytest

from sagetui.core import events as ev
from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.host_time import back_to_back_floor
from sagetui.session.session import Session

pytestmark = pytest.mark.gpu

SMALL = Shape(heads=8, q_len=4096, head_dim=128, layout="HND")


def test_three_times_per_call_and_host_bound_on_the_gpu():
    """The three times are of the call the user makes (each stock variant's public function),
    in blocks of their own: back to back a call costs at least the larger of its host and GPU
    times (less noise), the call's GPU time is its phases' within a few per cent, SDPA's host
    needs far less than its GPU time (not host-bound), and HOST is said exactly where the
    call's host time exceeds its GPU time."""
    cfg = RunConfig(shape=SMALL, variants=[VariantSpec.parse(s) for s in
                                           ("sdpa", "sage2-sm89", "sage2-sm90")],
                    warmup=5, rounds=4, iterations=50)
    report = Session(cfg).run()
    assert report.status == "complete", report.status_detail
    names = {"sdpa": "torch.nn.functional.scaled_dot_product_attention",
             "sage2-sm89": "sageattention.sageattn_qk_int8_pv_fp8_cuda",
             "sage2-sm90": "sageattention.sageattn_qk_int8_pv_fp8_cuda_sm90"}
    for v in report.variants:
        assert v.host_s > 0 and v.back_to_back_s > 0 and v.call_gpu_s > 0
        assert len(v.host_times_s) == len(v.back_to_back_times_s) == len(v.call_gpu_times_s) == 4
        assert v.back_to_back_s >= back_to_back_floor(v.host_s, v.call_gpu_s), v.name
        assert v.host_bound is (v.host_s > v.call_gpu_s)
        assert abs(v.call_gpu_s / v.timing.p50_s - 1) < 0.10, (v.name, v.call_gpu_s)
        assert v.drained_blocks == 0  # every kept block was GPU-paced
        assert v.clocks.mean_sm_clock_mhz > 0 and v.clocks.mean_power_w > 0
        assert v.timed_call == names[v.name]
    sdpa = report.variant("sdpa")
    assert sdpa.host_bound is False and sdpa.host_s < 0.5 * sdpa.call_gpu_s
    assert check_report(report) == []


def test_the_report_within_two_seconds_of_measured_at_a_large_shape():
    """The public API's first call (torch's custom-op imports, seconds) is paid in the
    baseline's warm-up: after `measured`, the late figures cost their kernels."""
    stamps: dict[str, float] = {}

    def on_event(e: ev.Event) -> None:
        if isinstance(e, ev.Measured | ev.Finished):
            stamps.setdefault(type(e).__name__, time.perf_counter())

    cfg = RunConfig(shape=Shape(heads=56, q_len=37810, head_dim=128),
                    variants=[VariantSpec.parse("sage2-sm89")], warmup=2, rounds=2,
                    iterations=4)
    report = Session(cfg, on_event=on_event).run()
    assert report.status == "complete", report.status_detail
    d = report.manual_decomposition_vs_public_sage2
    assert d is not None and d.equal
    # equal bytes, one hash: the decomposition's output is the rounds' (their sha256 reused)
    assert d.decomposed_sha256 == d.public_sha256 == report.variants[0].output_sha256
    assert stamps["Finished"] - stamps["Measured"] < 2.0, stamps


@pytest.mark.parametrize(("layout", "kv_heads"), [("HND", 8), ("NHD", 8), ("NHD", 2)])
def test_sdpas_call_the_user_makes_gives_its_decompositions_bytes(layout, kv_heads):
    """SDPA's call the user makes is the bare function, bound as a model calls it (NHD as
    transposed views, GQA with enable_gqa), not run(): the same kernel on the same tensors, so
    the same bytes as its one phase, in either layout and with fewer K/V heads."""
    import torch

    from sagetui.runner.backends.base import Inputs, NullClock
    from sagetui.runner.backends.sdpa import SdpaBackend

    def tensor(heads):
        shape = (1, heads, 1024, 128) if layout == "HND" else (1, 1024, heads, 128)
        return torch.randn(shape, dtype=torch.bfloat16, device="cuda")

    inputs = Inputs(q=tensor(8), k=tensor(kv_heads), v=tensor(kv_heads), layout=layout,
                    causal=True, sm_scale=0.1)
    be = SdpaBackend()
    call, name = be.user_call(inputs)
    assert name == "torch.nn.functional.scaled_dot_product_attention"
    dec = be.run(inputs, NullClock())
    be.run = None  # the call the user makes does not go through run()
    out = call()
    assert out.shape == dec.shape == inputs.q.shape
    assert torch.equal(out.contiguous().view(torch.uint8), dec.contiguous().view(torch.uint8))
    pinned = SdpaBackend({"backend": "math"})  # its sdpa_kernel context is part of its call
    assert pinned.user_call(inputs)[0]().shape == inputs.q.shape
