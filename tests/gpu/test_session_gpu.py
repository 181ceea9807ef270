"""The whole path on a GPU: session -> runner process -> CUDA backends -> report."""

import pytest

from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.session.session import Session

pytestmark = pytest.mark.gpu


def test_session_runs_gpu_backends_and_the_report_checks():
    cfg = RunConfig(shape=Shape(heads=4, q_len=1000, head_dim=128),
                    variants=[VariantSpec.parse(s) for s in
                              ("a=sage2-sm89", "b=sage2-sm89", "sm90=sage2-sm90", "sdpa")],
                    warmup=2, rounds=3, iterations=4, tail_study=True, tail_iterations=2)
    report = Session(cfg).run()
    assert report.status == "complete", report.faults
    assert report.environment["device"].startswith("cuda:")
    assert report.environment["gpu"]["sm_count"] > 0
    # the GPU's state, from NVML (issue 15): an H200 answers every field
    state = report.environment["gpu"]["state"]
    assert isinstance(state["persistence_mode"], bool) and isinstance(state["ecc"], bool)
    assert isinstance(state["mig"], bool) and state["application_clocks"]["sm_mhz"] > 0
    assert "other_processes" in state  # None where a container hides the other processes
    a, b, sm90, sdpa = report.variants
    assert all(v.status == "ok" for v in report.variants)
    assert b.byte_exact and b.max_abs_diff == 0.0 and a.deterministic
    assert not sdpa.byte_exact and sdpa.max_abs_diff < 0.5
    assert report.manual_decomposition_vs_public_sage2.equal
    # the late figures (issue 22), computed after the verdicts: each variant's accuracy, the
    # inputs' sha256, and the decomposition check above with its public API primed on a thread
    assert all(v.accuracy is not None and v.accuracy.cosine_similarity > 0.99
               for v in report.variants)
    assert len({v.input_sha256 for v in report.variants}) == 1 and a.input_sha256
    assert a.scheduler.kernel == "sm89" and a.scheduler.waves > 0
    assert sm90.scheduler.kernel == "sm90" and sm90.scheduler.cta_q == 64  # its own grid
    assert set(a.phase_timings) >= {"fused_mainloop", "qk_int8_quantization"}
    assert a.telemetry[0].available and a.telemetry[0].sm_clock_mhz.max > 0
    assert len(report.tail_study) == 6
    # each call allocates at least its bf16 output beyond what it was handed; SDPA needs
    # no int8 copies of Q and K, so its peak is the smaller
    out_bytes = 1 * 1000 * 4 * 128 * 2
    assert all(v.peak_memory_bytes >= out_bytes for v in report.variants)
    assert sdpa.peak_memory_bytes < a.peak_memory_bytes
    assert check_report(report) == []
