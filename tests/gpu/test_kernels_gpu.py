"""Issue 13 on a GPU: the sm80 path and the new options of sm89/sm90 decomposed byte for byte
like the public functions, SDPA pinned to each backend and the backend it picks on its own, and
the accuracy, provenance and peak fields of a real run.

SAGETUI_GPU_STATS=<file.json> records what was measured (accuracy per variant, SDPA's choice).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from gpu_stats import GPU_MARKS, stats_fixture
from test_sage2_gpu import CASES, _errors, _exact, backend, make_inputs, raw, run

from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.runner.accuracy import ExactReference
from sagetui.runner.backends.sdpa import SdpaBackend, which_backend_ran
from sagetui.session.session import Session

pytestmark = GPU_MARKS

STATS: dict[str, Any] = {}
_write_stats = stats_fixture(STATS, "_kernels")  # test_sage2_gpu.py writes the file itself


OPTIONED = [
    ("sage2-sm80", {"pv_accum": "fp32"}),
    ("sage2-sm80", {"pv_accum": "fp16+fp32"}),
    ("sage2-sm80", {"pv_accum": "fp16"}),
    ("sage2-sm80", {"pv_accum": "fp16", "smooth_v": True}),
    ("sage2-sm80", {"pv_accum": "fp32", "qk_quant_gran": "per_thread"}),
    ("sage2-sm80", {"pv_accum": "fp16+fp32", "qk_quant_gran": "per_thread"}),
    ("sage2-sm89", {"pv_accum": "fp32"}),
    ("sage2-sm89", {"pv_accum": "fp32", "smooth_v": True}),
    ("sage2-sm89", {"pv_accum": "fp32+fp32", "qk_quant_gran": "per_thread"}),
    ("sage2-sm90", {"qk_quant_gran": "per_thread"}),
]
CASE_SUBSET = [CASES[0], CASES[1], CASES[4], CASES[5], CASES[6]]


def _bid(name: str, options: dict[str, Any]) -> str:
    return name + "[" + ",".join(f"{k}={v}" for k, v in options.items()) + "]"


@pytest.mark.parametrize("case", CASE_SUBSET, ids=[c.id for c in CASE_SUBSET])
@pytest.mark.parametrize(("name", "options"), OPTIONED, ids=[_bid(n, o) for n, o in OPTIONED])
def test_decomposition_is_byte_identical_to_the_public_call(name, options, case):
    b = backend(name, options)
    inputs = make_inputs(case)
    out = run(b, inputs)
    public = b.public(inputs)
    torch.cuda.synchronize()
    assert public is not None and out.shape == inputs.q.shape and out.dtype == inputs.q.dtype
    assert torch.isfinite(out).all()
    if raw(out) != raw(public):
        d = (out.float() - public.float()).abs()
        pytest.fail(f"decomposed != public: max {d.max().item():.3g}, mean {d.mean().item():.3g}")
    err = _errors(out, _exact(inputs))
    STATS.setdefault("vs_exact_mean_rel", {}).setdefault(_bid(name, options), {})[case.id] = \
        err["mean_rel"]
    assert err["mean_rel"] < 0.08, err


def test_sm80_scheduler_kernel_follows_the_accumulation():
    assert backend("sage2-sm80", {"pv_accum": "fp32"}).kernel == "sm80"
    assert backend("sage2-sm80", {"pv_accum": "fp16+fp32"}).kernel == "sm80-inst-buf"


@pytest.mark.parametrize("pinned", ["cudnn", "flash", "efficient", "math"])
def test_sdpa_pinned_backends_run_and_say_so(pinned):
    case = CASES[0]  # HND fp16 d128 (EFFICIENT takes no GQA: torch has no kernel for it)
    inputs = make_inputs(case)
    b = backend("sdpa", {"backend": pinned})
    out = run(b, inputs)
    assert b.facts(inputs, out)["sdpa_backend"] == pinned
    err = _errors(out, _exact(inputs))
    STATS.setdefault("sdpa_pinned_vs_exact", {})[pinned] = err["mean_rel"]
    assert err["mean_rel"] < 0.01


def test_plain_sdpa_records_the_backend_torch_ran():
    inputs = make_inputs(CASES[4])
    b = SdpaBackend()
    out = run(b, inputs)
    facts = which_backend_ran(b, inputs, out)
    STATS["sdpa_choice"] = facts
    assert facts["sdpa_backend"] in ("cudnn", "flash", "efficient", "math"), facts
    assert "confirmed" in facts["sdpa_backend_method"] and "NOT" not in \
        facts["sdpa_backend_method"], facts


def test_exact_reference_on_the_gpu_matches_float64():
    case = CASES[1]  # causal NHD bf16
    inputs = make_inputs(case)
    ref = ExactReference(inputs)
    exact = _exact(inputs)  # float64 on the CPU, in the inputs' layout
    got = ref.out.transpose(1, 2) if inputs.layout == "NHD" else ref.out
    d = (got.double().cpu() - exact).abs()
    assert d.max().item() < 1e-4  # TF32 is off: fp32 accuracy, not 10-bit mantissas
    same = ref.compare(exact.to(inputs.q.dtype).cuda(), inputs.layout)
    assert same["cosine_similarity"] > 0.99999 and same["relative_l1"] < 0.005


def test_a_run_reports_accuracy_provenance_and_peak():
    cfg = RunConfig(shape=Shape(heads=4, q_len=1000, head_dim=128),
                    variants=[VariantSpec.parse(s) for s in (
                        "sm80=sage2-sm80[pv_accum=fp16]", "sm89=sage2-sm89",
                        "sdpa", "flash=sdpa[backend=flash]")],
                    warmup=1, rounds=2, iterations=3)
    report = Session(cfg).run()
    assert report.status == "complete", report.faults
    sm80, sm89, sdpa, flash = report.variants
    assert report.manual_decomposition_vs_public_sage2.equal  # sm80 is the baseline here
    assert report.scheduler is None  # each variant has its own grid (schema 3)
    assert sm80.kernel == "sm80" and sm80.scheduler.kernel == "sm80"
    assert sm89.scheduler.kernel == "sm89" and sm89.scheduler.cta_q == 128
    assert sdpa.scheduler is None and flash.kernel is None  # no SageAttention tiles
    for v in report.variants:
        a = v.accuracy
        assert a is not None and a.heads == "all" and a.rows == "all", v.name
        assert 0.99 < a.cosine_similarity <= 1.0 and 0 < a.relative_l1 < 0.1
        assert 0 < a.rmse <= a.max_abs_error
        STATS.setdefault("run_accuracy", {})[v.name] = a.model_dump()
    assert sdpa.sdpa_backend in ("cudnn", "flash", "efficient", "math")
    assert flash.sdpa_backend == "flash"
    for v in (sm80, sm89):
        files = {f.module: f for f in v.provenance.files}
        assert set(files) >= {"_fused"} and all(f.sha256 and f.size_bytes for f in files.values())
    assert sm80.peak.qk_type == "int8" and sm80.peak.pv_type == "fp16_f16acc"
    if "H200" in report.environment["gpu"]["name"]:
        assert sm80.achieved["peak_tops"] == pytest.approx(2 / (1 / 1979.0 + 1 / 989.5))
    assert check_report(report) == []


def test_sm80_variant_from_an_explicit_so_gives_the_same_bytes():
    default = backend("sage2-sm80", {"pv_accum": "fp16"})
    import sageattention._qattn_sm80 as installed

    inputs = make_inputs(CASES[4])
    expected = raw(run(default, inputs))
    variant = backend("sage2-sm80", {"pv_accum": "fp16"}, module_path=str(installed.__file__),
                      variant_name="again")
    assert variant.modules.qattn.__name__ == "variant_again._qattn_sm80"
    assert variant.modules.qattn is not default.modules.qattn
    assert raw(run(variant, inputs)) == expected
