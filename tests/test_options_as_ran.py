"""Every option that changes accuracy, and the options as they ran: smooth_k on every
SageAttention backend (default on, as SageAttention's functions), how the CUDA paths route it
(checked here against stand-in extension modules: the bytes are the H200's to check), the
options a variant's report lists (defaults included; for sage2-auto what its dispatch ran) and
the mark on those that are not the public function's default."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from sagetui.core import format as fmt
from sagetui.core.options import AUTO_CALLS, OPTIONS, PUBLIC, auto_call, validate_options
from sagetui.core.report.model import VariantFacts
from sagetui.core.run.figures import resolved_options
from sagetui.core.run.model import VariantModel
from sagetui.runner.backends.base import Inputs, PhaseClock
from sagetui.runner.backends.sage2 import (
    AUTO_DISPATCH,
    Sage2AutoBackend,
    Sage2Modules,
    Sage2Sm89Backend,
    Sage2Sm90Backend,
)
from sagetui.runner.backends.sage2_sm80 import Sage2Sm80Backend
from sagetui.runner.backends.triton import PYPI_106, UPSTREAM, SageTritonBackend, TritonApi

SAGE = ("reference", "sage-triton", "sage2-sm80", "sage2-sm89", "sage2-sm90")


def test_smooth_k_is_an_option_of_every_sageattention_backend_on_by_default() -> None:
    for backend in SAGE:
        assert OPTIONS[backend]["smooth_k"].default is True, backend
        validate_options(backend, {"smooth_k": False})
        with pytest.raises(ValueError, match="smooth_k=maybe is not one of true, false"):
            validate_options(backend, {"smooth_k": "maybe"})
    assert OPTIONS["sage2-auto"] == {}  # sageattn drops its **kwargs: nothing to pass on
    # smooth_v where a function takes it (sm80's fp16, sm89's fp32 accumulation), nowhere else
    assert {b for b, t in OPTIONS.items() if "smooth_v" in t} == {"sage2-sm80", "sage2-sm89"}


def test_a_bad_smooth_k_is_one_line_and_exit_2(cli_here) -> None:
    out = cli_here("run", "--variant", "x=sage2-sm89[smooth_k=yes]")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "smooth_k=yes is not one of true, false" in out.stderr


def test_options_as_they_ran_list_the_defaults_too() -> None:
    v = VariantModel(name="a", index=0, backend="sage2-sm89", options={"pv_accum": "fp32"})
    assert resolved_options(v) == {"pv_accum": "fp32", "qk_quant_gran": "per_warp",
                                   "smooth_k": True, "smooth_v": False, "return_lse": False}
    ref = VariantModel(name="r", index=1, backend="reference", options={"smooth_k": False})
    assert resolved_options(ref) == {"smooth_k": False, "return_lse": False, "slowdown": 1.0}


@pytest.mark.parametrize("arch", sorted(AUTO_CALLS))
def test_sage2_auto_records_the_function_and_options_its_dispatch_ran(arch: str) -> None:
    call = auto_call(arch)
    assert call is not None and call["arch"] == arch
    backend, passed = AUTO_CALLS[arch]
    assert call["function"] == PUBLIC[backend][0]
    assert call["options"] == {**PUBLIC[backend][1], **passed}
    # sageattn leaves qk_quant_gran to the functions' default (per_thread) except on sm12x
    if backend != "sage-triton":
        want = "per_warp" if arch.startswith("sm12") else "per_thread"
        assert call["options"]["qk_quant_gran"] == want
    v = VariantModel(name="auto", index=0, backend="sage2-auto",
                     facts=VariantFacts.model_validate({"dispatch": call}))
    assert resolved_options(v) == call["options"]
    assert AUTO_DISPATCH[arch] == {"sage2-sm80": "_qattn_sm80", "sage2-sm89": "_qattn_sm89",
                                   "sage2-sm90": "_qattn_sm90"}.get(backend)
    assert auto_call("sm75") is None


def test_options_not_the_public_functions_default_are_marked() -> None:
    text, note = fmt.options_text("sage2-sm89", {"pv_accum": "fp32+fp32",
                                                 "qk_quant_gran": "per_warp",
                                                 "smooth_k": True, "smooth_v": False})
    assert text == "pv_accum=fp32+fp32*, qk_quant_gran=per_warp*, smooth_k=true, smooth_v=false"
    assert note == ("* not sageattn_qk_int8_pv_fp8_cuda's default (pv_accum=fp32+fp16, "
                    "qk_quant_gran=per_thread)")
    assert fmt.options_text("sage2-sm90", {"qk_quant_gran": "per_thread", "smooth_k": True})[1] \
        is None
    text, note = fmt.options_text("sage2-sm80", {"smooth_k": False})  # a choice, marked too
    assert text == "smooth_k=false*" and note is not None and "smooth_k=true" in note
    # sage2-auto: against the function its dispatch called
    sm120 = auto_call("sm120")
    assert sm120 is not None
    text, note = fmt.options_text("sage2-auto", sm120["options"], sm120["function"])
    assert "qk_quant_gran=per_warp*" in text and "sageattn_qk_int8_pv_fp8_cuda" in (note or "")
    assert fmt.options_text("reference", {"smooth_k": True}) == ("smooth_k=true", None)


# -- the CUDA paths' routing of smooth_k, against stand-in modules ---------------------------
class Recorder(SimpleNamespace):
    """An extension module whose every function records its name and returns nothing."""

    def __init__(self) -> None:
        super().__init__(calls=[])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def fn(*args: Any, **kw: Any) -> None:
            self.calls.append(name)
        return fn


class Marks(PhaseClock):
    def __init__(self) -> None:
        self.marks: list[str] = []

    def start(self) -> None:
        pass

    def mark(self, phase: str) -> None:
        self.marks.append(phase)


def _inputs() -> Inputs:
    x = torch.zeros(1, 128, 2, 64, dtype=torch.float16)  # NHD
    return Inputs(q=x, k=x.clone(), v=x.clone(), layout="NHD", causal=False, sm_scale=0.125)


CUDA = [(Sage2Sm80Backend, {}), (Sage2Sm80Backend, {"pv_accum": "fp16", "smooth_v": True}),
        (Sage2Sm89Backend, {}), (Sage2Sm89Backend, {"pv_accum": "fp32", "smooth_v": True}),
        (Sage2Sm90Backend, {})]


@pytest.mark.parametrize(("cls", "options"), CUDA, ids=lambda x: getattr(x, "name", str(x)))
@pytest.mark.parametrize("smooth_k", [True, False])
def test_cuda_paths_skip_the_k_mean_without_smooth_k(monkeypatch, cls, options,
                                                     smooth_k: bool) -> None:
    """core.py with smooth_k=False: km = None, so per_warp_int8 quantizes K with
    `quant_per_block_int8_cuda` (no mean); the decomposition names that leaf
    `k_int8_quantization`, and the public call gets the same smooth_k."""
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    be = cls(options={**options, "smooth_k": smooth_k})
    fused, qattn = Recorder(), Recorder()
    be._mods = Sage2Modules(fused=fused, qattn=qattn)
    clock = Marks()
    be.run(_inputs(), clock)
    assert clock.marks == be.leaves()
    k_kernel = "quant_per_block_int8_fuse_sub_mean_cuda" if smooth_k \
        else "quant_per_block_int8_cuda"
    assert k_kernel in fused.calls
    assert ("quant_per_block_int8_cuda" in fused.calls) is not smooth_k
    assert ("k_int8_quantization" in be.leaves()) is not smooth_k
    assert qattn.calls == [be._kernel_fn()]

    seen: dict[str, Any] = {}
    public = SimpleNamespace(**{fn: (lambda *a, **kw: seen.update(kw)) for fn, _ in
                                PUBLIC.values()})
    monkeypatch.setattr(importlib, "import_module", lambda name: public)
    be.public(_inputs())
    assert seen["smooth_k"] is smooth_k
    assert seen["qk_quant_gran"] == "per_warp" and seen["pv_accum_dtype"] == be.pv_accum


@pytest.mark.parametrize("flavor", [UPSTREAM, PYPI_106])
@pytest.mark.parametrize("smooth_k", [True, False])
def test_triton_path_passes_no_k_mean_without_smooth_k(monkeypatch, flavor: str,
                                                       smooth_k: bool) -> None:
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    seen: dict[str, Any] = {}

    def quant(q, k, km=None, **kw):
        seen["km"] = km
        seen["k"] = k
        return q, None, k, None

    def attn(q, k, v, *a, **kw):
        return (q, None) if flavor == UPSTREAM else q

    def public(*a, **kw):
        seen["public"] = kw

    api = TritonApi(flavor=flavor, version="test", quant=quant, attn=attn, attn_causal=attn,
                    public=public)
    be = SageTritonBackend(options={"smooth_k": smooth_k})
    be._api = api
    inputs = _inputs()
    inputs.k[:, :, :, 0] = 1.0  # a channel with a mean to subtract
    be.run(inputs, Marks())
    if flavor == UPSTREAM:
        assert (seen["km"] is None) is not smooth_k
    else:  # 1.0.6 subtracts the mean itself before its quantization
        assert bool((seen["k"][..., 0] == 0).all()) is smooth_k
    be.public(inputs)
    assert seen["public"]["smooth_k"] is smooth_k


def test_sage2_auto_says_what_it_dispatched_to(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    facts = Sage2AutoBackend().facts(_inputs(), torch.zeros(1))
    assert facts["dispatch"]["function"] == "sageattn_qk_int8_pv_fp8_cuda_sm90"
    assert VariantFacts.model_validate(facts).dispatch is not None
