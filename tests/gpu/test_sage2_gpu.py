"""GPU backends on a real device: decomposition == public API byte for byte, phases timed with
CUDA events, the sm89/sm90 kernels close to the CPU reference, and a variant loaded from an
explicit .so giving the same bytes as the installed module.

Run on the GPU machine with SageAttention built (its package first on PYTHONPATH). Optional:
SAGETUI_SM89_VARIANT=<a .so or prefix of another _qattn_sm89 build> adds that variant;
SAGETUI_GPU_STATS=<file.json> records the measured errors and phase times.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from gpu_stats import GPU_MARKS, stats_fixture

from sagetui.runner.backends import backend_class
from sagetui.runner.backends.base import Backend, BackendUnavailable, Inputs, NullClock
from sagetui.runner.backends.reference import ReferenceBackend
from sagetui.runner.timing import CudaEventClock, gate_stream

pytestmark = GPU_MARKS

STATS: dict[str, Any] = {}
_write_stats = stats_fixture(STATS)


@dataclass(frozen=True)
class Case:
    id: str
    b: int
    n_q: int
    n_kv: int
    h_q: int
    h_kv: int
    d: int
    dtype: torch.dtype
    layout: str
    causal: bool


CASES = [
    Case("hnd-fp16-d128", 1, 1000, 1000, 4, 4, 128, torch.float16, "HND", False),
    Case("nhd-bf16-d128-causal", 1, 1000, 1000, 4, 4, 128, torch.bfloat16, "NHD", True),
    Case("nhd-bf16-d64", 1, 1000, 1000, 4, 4, 64, torch.bfloat16, "NHD", False),
    Case("hnd-fp16-d64-causal", 1, 1000, 1000, 4, 4, 64, torch.float16, "HND", True),
    Case("gqa-nhd-bf16-d128", 1, 1000, 1000, 8, 2, 128, torch.bfloat16, "NHD", False),
    Case("gqa-hnd-fp16-d64-causal", 2, 1000, 1000, 8, 2, 64, torch.float16, "HND", True),
    # head dim 96 (padded to 128 by SageAttention2) and kv_len != q_len, not a tile multiple
    Case("nhd-bf16-d96-kv777", 1, 1000, 777, 4, 4, 96, torch.bfloat16, "NHD", False),
]
CASE_IDS = [c.id for c in CASES]

# backend name, options
FP8_BACKENDS = [
    ("sage2-sm89", {"pv_accum": "fp32+fp32"}),
    ("sage2-sm89", {"pv_accum": "fp32+fp16"}),
    ("sage2-sm90", {}),
]
DECOMPOSED = [*FP8_BACKENDS, ("sage-triton", {})]


def _bid(name: str, options: dict[str, str]) -> str:
    return name + "".join(f"[{v}]" for v in options.values())


def make_inputs(case: Case, seed: int = 0, device: str = "cuda") -> Inputs:
    gen = torch.Generator(device="cpu").manual_seed(seed)

    def tensor(heads: int, n: int, shift: float = 0.0) -> torch.Tensor:
        x = torch.randn(case.b, heads, n, case.d, generator=gen) + shift  # HND
        x = x.transpose(1, 2) if case.layout == "NHD" else x
        return x.contiguous().to(device=device, dtype=case.dtype)

    # K gets a per-channel offset, as real keys have: the smoothing has something to remove
    k_shift = torch.randn(case.d, generator=gen) * 2.0
    q = tensor(case.h_q, case.n_q)
    k = tensor(case.h_kv, case.n_kv, 0.0) + k_shift.to(device=device, dtype=case.dtype)
    v = tensor(case.h_kv, case.n_kv)
    return Inputs(q=q, k=k, v=v, layout=case.layout, causal=case.causal,
                  sm_scale=case.d ** -0.5)


def backend(name: str, options: dict[str, str] | None = None, **kw: Any) -> Backend:
    cls = backend_class(name)
    try:
        cls.check_available("cuda")
    except BackendUnavailable as exc:
        pytest.skip(f"{name}: {exc}")
    b = cls(options=options, **kw)
    b.load()
    return b


def raw(x: torch.Tensor) -> bytes:
    return x.contiguous().view(torch.uint8).cpu().numpy().tobytes()


def run(b: Backend, inputs: Inputs) -> torch.Tensor:
    out = b.run(inputs, NullClock())
    torch.cuda.synchronize()
    return out


def test_backends_report_available() -> None:
    from sagetui.runner.backends import availability

    reasons = availability("cuda")
    STATS["availability"] = reasons
    assert reasons["sdpa"] is None
    assert all(r is None or r for r in reasons.values())  # a reason is never empty


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.parametrize(("name", "options"), DECOMPOSED,
                         ids=[_bid(n, o) for n, o in DECOMPOSED])
def test_decomposition_equals_public(name: str, options: dict[str, str], case: Case) -> None:
    b = backend(name, options)
    inputs = make_inputs(case)
    k_before = raw(inputs.k)
    out = run(b, inputs)
    public = b.public(inputs)
    assert public is not None
    torch.cuda.synchronize()
    assert raw(inputs.k) == k_before, "the inputs must not be modified"
    assert out.shape == inputs.q.shape and out.dtype == inputs.q.dtype
    assert torch.isfinite(out).all()
    same = raw(out) == raw(public)
    if not same:
        diff = (out.float() - public.float()).abs()
        pytest.fail(f"decomposed != public: max {diff.max().item():.3g}, "
                    f"mean {diff.mean().item():.3g}")
    assert raw(run(b, inputs)) == raw(out), "not deterministic across calls"


@pytest.mark.parametrize(("name", "options"), [*DECOMPOSED, ("sdpa", {}), ("sage2-auto", {})],
                         ids=[_bid(n, o) for n, o in [*DECOMPOSED, ("sdpa", {}),
                                                      ("sage2-auto", {})]])
def test_phases_timed_with_cuda_events(name: str, options: dict[str, str]) -> None:
    b = backend(name, options)
    inputs = make_inputs(Case("t", 1, 4096, 4096, 8, 8, 128, torch.bfloat16, "NHD", False))
    leaves = b.leaves()
    run(b, inputs)  # warm-up: JIT, allocator
    per_iter: list[dict[str, float]] = []
    clocks = [CudaEventClock(leaves, torch) for _ in range(5)]
    # outer events around each call: the leaves must account for all of its GPU time
    outer = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in clocks]
    # a gate long enough for the host to enqueue all five calls first: were the GPU to idle
    # between them, host time would fall between the outer events and the clock's own
    gate_stream(torch, 0.05, 1.5e9)
    for clock, (begin, end) in zip(clocks, outer, strict=True):
        begin.record()
        b.run(inputs, clock)
        end.record()
    torch.cuda.synchronize()
    for clock, (begin, end) in zip(clocks, outer, strict=True):
        times = clock.result()
        assert list(times) == leaves
        assert all(t >= 0.0 for t in times.values())
        per_iter.append(times)
        span = begin.elapsed_time(end) * 1e-3
        assert sum(times.values()) == pytest.approx(span, rel=0.02, abs=20e-6)
    main = "fused_mainloop" if "fused_mainloop" in leaves else "attention"
    assert min(t[main] for t in per_iter) > 0.0
    STATS.setdefault("phase_median_ms_1x4096x8x128_bf16_nhd", {})[_bid(name, options)] = {
        leaf: sorted(t[leaf] for t in per_iter)[len(per_iter) // 2] * 1e3 for leaf in leaves
    }


def _errors(out: torch.Tensor, ref: torch.Tensor) -> dict[str, float]:
    diff = (out.float().cpu() - ref.float()).abs()
    scale = ref.float().abs().mean().item()
    return {"max_abs": diff.max().item(), "mean_abs": diff.mean().item(),
            "mean_rel": diff.mean().item() / scale, "ref_mean_abs": scale}


def _exact(inputs: Inputs) -> torch.Tensor:
    q, k, v = (t.double().cpu() for t in (inputs.q, inputs.k, inputs.v))
    if inputs.layout == "NHD":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = q @ k.transpose(-1, -2) * inputs.sm_scale
    if inputs.causal:
        s.masked_fill_(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(s, dim=-1) @ v
    return out.transpose(1, 2) if inputs.layout == "NHD" else out


# mean |GPU - CPU reference| / mean |reference|, measured on the H200 over CASES (d 64/128):
# sm89 fp32+fp32 1.4-2.2 %, sm89 fp32+fp16 4.1-4.7 %, sm90 2.6-3.2 %; each kernel is 3.5-3.9 %
# from exact fp64 attention, as close as the reference itself is (ratio 0.97-0.99). The limits
# below are about 1.5-2x those. The reference is not byte-exact with sm89, most likely because
# it quantizes P to fp8 against the row's final max and the kernel against its running
# (online-softmax) max (a reading of the source, not isolated by a test); sm90 also
# quantizes Q per 16 rows and K per 128 (the reference models sm89's 32 / 64), and fp32+fp16
# scales V to 2.25 instead of 448.
REFERENCE_MEAN_REL = {"sage2-sm89[fp32+fp32]": 0.04, "sage2-sm89[fp32+fp16]": 0.08,
                      "sage2-sm90": 0.06}


@pytest.mark.parametrize("case", [c for c in CASES if c.d in (64, 128)],
                         ids=[c.id for c in CASES if c.d in (64, 128)])
@pytest.mark.parametrize(("name", "options"), FP8_BACKENDS,
                         ids=[_bid(n, o) for n, o in FP8_BACKENDS])
def test_close_to_cpu_reference(name: str, options: dict[str, str], case: Case) -> None:
    b = backend(name, options)
    inputs = make_inputs(case)
    out = run(b, inputs)
    cpu = Inputs(q=inputs.q.cpu(), k=inputs.k.cpu(), v=inputs.v.cpu(), layout=inputs.layout,
                 causal=inputs.causal, sm_scale=inputs.sm_scale)
    ref = ReferenceBackend().run(cpu, NullClock())
    vs_ref = _errors(out, ref)
    vs_exact = _errors(out, _exact(inputs))
    ref_vs_exact = _errors(ref, _exact(inputs))
    key = _bid(name, options)
    STATS.setdefault("vs_cpu_reference", {}).setdefault(key, {})[case.id] = {
        "gpu_vs_reference": vs_ref, "gpu_vs_exact": vs_exact, "reference_vs_exact": ref_vs_exact}
    assert vs_ref["mean_rel"] < REFERENCE_MEAN_REL[key], vs_ref
    # and the GPU kernel is no further from exact attention than the reference is (+10 %)
    assert vs_exact["mean_rel"] < 1.1 * ref_vs_exact["mean_rel"], (vs_exact, ref_vs_exact)


def _variant_paths() -> list[tuple[str, str]]:
    paths = []
    try:
        import sageattention._qattn_sm89 as installed

        paths.append(("same-file", str(installed.__file__)))
        # the installed package's folder as an install prefix: its _fused is loaded from there
        paths.append(("prefix", str(Path(str(installed.__file__)).parent)))
    except ImportError:
        pass
    extra = os.environ.get("SAGETUI_SM89_VARIANT")
    if extra:
        paths.append(("env-variant", extra))
    return paths


@pytest.mark.parametrize("case", [CASES[1], CASES[4]], ids=[CASES[1].id, CASES[4].id])
def test_variant_from_explicit_so_gives_same_bytes(case: Case) -> None:
    default = backend("sage2-sm89", {"pv_accum": "fp32+fp32"})
    paths = _variant_paths()
    if not paths:
        pytest.skip("no _qattn_sm89 build")
    inputs = make_inputs(case)
    expected = raw(run(default, inputs))
    for label, path in paths:
        variant = backend("sage2-sm89", {"pv_accum": "fp32+fp32"}, module_path=path,
                          variant_name=label)
        assert isinstance(variant, backend_class("sage2-sm89"))
        mods = variant.modules  # type: ignore[attr-defined]
        assert mods.qattn.__name__ == f"variant_{label}._qattn_sm89"
        assert mods.qattn is not default.modules.qattn  # type: ignore[attr-defined]
        STATS.setdefault("variants", {})[label] = mods.files
        if label == "prefix":
            assert mods.fused.__name__ == "variant_prefix._fused"
        assert raw(run(variant, inputs)) == expected, f"{label} ({path}) gives other bytes"


def test_auto_dispatch_kernel_and_output() -> None:
    b = backend("sage2-auto")
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) == (9, 0):
        assert b.kernel == "sm90"
    elif (major, minor) == (8, 9):
        assert b.kernel == "sm89"
    inputs = make_inputs(CASES[4])
    out = run(b, inputs)
    err = _errors(out, _exact(inputs))
    STATS.setdefault("auto_vs_exact", {})[CASES[4].id] = err
    assert err["mean_rel"] < 0.05


@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[5]],
                         ids=[CASES[0].id, CASES[1].id, CASES[5].id])
def test_sdpa_matches_exact_attention(case: Case) -> None:
    b = backend("sdpa")
    inputs = make_inputs(case)
    out = run(b, inputs)
    assert out.shape == inputs.q.shape
    err = _errors(out, _exact(inputs))
    STATS.setdefault("sdpa_vs_exact", {})[case.id] = err
    assert err["mean_rel"] < 0.01
