"""SageAttention2's CUDA kernels (int8 QK, fp8 PV), decomposed into the reference's phases.

`sage2-sm89` replays `sageattn_qk_int8_pv_fp8_cuda` and `sage2-sm90` replays
`sageattn_qk_int8_pv_fp8_cuda_sm90` (with the variant's `pv_accum`, `qk_quant_gran`,
`smooth_k` and, on sm89 with fp32 accumulation, `smooth_v`; core/options.py lists them) step by
step, calling the extension modules' functions directly (`_fused` for quantization, `_qattn_sm89` or
`_qattn_sm90` for the fused main loop; qk_quant.py the steps the sm80 path shares), with
core.py's head-dim padding, tile sizes, V padding and scale constants, so that the output
bytes equal the public function's (checked every run).

Extension modules come from the installed `sageattention` package, or, for a variant, from
`module_path` through `variants.load_extension` (never through a second copy of
`sm89_compile.py`, whose `torch.library` ops would collide with the installed ones).

`sage2-auto` is the public `sageattn` dispatch as one phase; its facts record the function and
the options the dispatch ran on this GPU (core/options.AUTO_CALLS).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import torch

from sagetui.core.options import AUTO_CALLS, auto_call, option, validate_options
from sagetui.core.phases import SAGE2_PHASES, SAGE2_SMOOTH_V_PHASES, PhaseSpec, with_smooth_k
from sagetui.core.scheduler import kernel_of
from sagetui.runner.backends.base import (
    Backend,
    BackendUnavailable,
    Inputs,
    PhaseClock,
    VariantLoadError,
    bound_public,
)
from sagetui.runner.backends.lse import natural_lse
from sagetui.runner.backends.qk_quant import GRAN_CODE, prepare, quantize, triton_available
from sagetui.runner.backends.sdpa import require_cuda
from sagetui.runner.backends.triton import sageattention_version
from sagetui.runner.variants import load_extension

FP8_E4M3_MAX = 448.0


@dataclass
class Sage2Modules:
    """The extension modules one backend instance calls, and the files they came from."""

    fused: ModuleType
    qattn: ModuleType
    files: dict[str, str] = field(default_factory=dict)


def _import_installed(module: str) -> ModuleType:
    try:
        return importlib.import_module(f"sageattention.{module}")
    except Exception as exc:  # the real reason: no such module, undefined symbol, ...
        version = sageattention_version()
        raise BackendUnavailable(f"cannot import sageattention.{module} (sageattention "
                                 f"{version}): {type(exc).__name__}: {exc}") from exc


def _has_build(folder: Path, module: str) -> bool:
    return any(p.name == f"{module}.so" or p.name.startswith(f"{module}.")
               for p in folder.rglob(f"{module}*.so"))


def load_modules(qattn_name: str, module_path: str | None, variant_name: str) -> Sage2Modules:
    """The installed package's modules, or a variant's: its `qattn_name` from `module_path`,
    and its `_fused` too when `module_path` is a folder (an install prefix) holding one."""
    if module_path is None:
        fused, qattn = _import_installed("_fused"), _import_installed(qattn_name)
    else:
        qattn = load_extension(module_path, qattn_name, variant_name)
        root = Path(module_path).expanduser()
        if root.is_dir() and _has_build(root, "_fused"):
            fused = load_extension(root, "_fused", variant_name)
        else:
            try:
                fused = _import_installed("_fused")
            except BackendUnavailable as exc:
                raise VariantLoadError(f"variant {variant_name}: {exc}") from exc
    files = {name: str(getattr(mod, "__variant_path__", getattr(mod, "__file__", "")))
             for name, mod in (("_fused", fused), (qattn_name, qattn))}
    return Sage2Modules(fused=fused, qattn=qattn, files=files)


@dataclass(frozen=True)
class Fp8Path:
    """What differs between core.py's sm89 and sm90 functions."""

    qattn_module: str
    blkq: int  # per_warp_int8's BLKQ (the kernel's CTA_Q)
    warpq: int  # per_warp_int8's WARPQ
    blkk: int  # K quantization block (the kernel's CTA_K)
    v_pad_multiple: int | None  # sm90 pads V with zero tokens to a multiple of 128 first
    min_capability: tuple[int, int]
    max_capability: tuple[int, int] | None
    # pv_accum -> (kernel function, V's fp8 scale_max)
    kernels: dict[str, tuple[str, float]]
    public: str


SM89 = Fp8Path(
    qattn_module="_qattn_sm89", blkq=128, warpq=32, blkk=64, v_pad_multiple=None,
    min_capability=(8, 9), max_capability=None,
    kernels={
        "fp32+fp32": ("qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", FP8_E4M3_MAX),
        # fp16 accumulation scales V into [-2.25, 2.25] so that P V cannot overflow fp16
        "fp32+fp16": ("qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf", 2.25),
        # fp32 without the buffer (with smooth_v: SMOOTH_V_KERNEL)
        "fp32": ("qk_int8_sv_f8_accum_f32_fuse_v_scale_attn", FP8_E4M3_MAX),
    },
    public="sageattn_qk_int8_pv_fp8_cuda",
)

# sm89's pv_accum fp32 with smooth_v: V's mean is subtracted in the fp8 quantization and added
# back in the main loop (core.py ignores smooth_v for every other accumulation)
SMOOTH_V_KERNEL = "qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn"

SM90 = Fp8Path(
    qattn_module="_qattn_sm90", blkq=64, warpq=16, blkk=128, v_pad_multiple=128,
    # built for sm_90a (wgmma): that machine code runs on compute capability 9.0 only
    min_capability=(9, 0), max_capability=(9, 0),
    kernels={"fp32+fp32": ("qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", FP8_E4M3_MAX)},
    public="sageattn_qk_int8_pv_fp8_cuda_sm90",
)



def check_sage2(device: str, backend: str, qattn_module: str, public: str,
                min_cap: tuple[int, int], max_cap: tuple[int, int] | None) -> None:
    """BackendUnavailable with the real reason unless this CUDA path can run on `device`."""
    require_cuda(device)
    cap = torch.cuda.get_device_capability(device)
    name = torch.cuda.get_device_name(device)
    if cap < min_cap or (max_cap and cap > max_cap):
        want = f"{min_cap[0]}.{min_cap[1]}"
        want = f"exactly {want}" if max_cap else f"{want} or newer"
        raise BackendUnavailable(f"{backend} needs compute capability {want}; {name} is "
                                 f"{cap[0]}.{cap[1]}")
    _import_installed("_fused")
    _import_installed(qattn_module)
    sage = importlib.import_module("sageattention")
    if not hasattr(sage, public):
        raise BackendUnavailable(f"sageattention {sageattention_version()} has no {public}")


class Sage2CudaBackend(Backend):
    """What the CUDA paths (sm80, sm89, sm90) share: their options, and the `_fused` and
    `_qattn_*` modules they call, installed or a variant's."""

    qattn_module: ClassVar[str]

    def __init__(self, options: dict[str, Any] | None = None, module_path: str | None = None,
                 variant_name: str = "default") -> None:
        super().__init__(options, module_path, variant_name)
        validate_options(self.name, self.options)  # core refuses these first; never run one
        self.pv_accum = str(option(self.name, self.options, "pv_accum"))
        self.gran = str(option(self.name, self.options, "qk_quant_gran"))
        self.smooth_k = bool(option(self.name, self.options, "smooth_k"))
        self.smooth_v = bool(option(self.name, self.options, "smooth_v"))
        self._mods: Sage2Modules | None = None

    def _kernel_fn(self) -> str:
        raise NotImplementedError

    def load(self) -> None:
        if self.gran == "per_thread" and (why := triton_available()):
            raise VariantLoadError(why)
        self._mods = load_modules(self.qattn_module, self.module_path, self.variant_name)
        kernel_fn = self._kernel_fn()
        if not hasattr(self._mods.qattn, kernel_fn):
            where = self._mods.files.get(self.qattn_module, "?")
            raise VariantLoadError(f"{where} has no {kernel_fn}")

    @property
    def modules(self) -> Sage2Modules:
        if self._mods is None:
            self.load()
        assert self._mods is not None
        return self._mods

    def provenance_files(self) -> dict[str, str]:
        return dict(self.modules.files)

    def main_loop_kernel(self) -> tuple[str, str] | None:
        return self.modules.files[self.qattn_module], self._kernel_fn()


class _Sage2Fp8Backend(Sage2CudaBackend):
    path: ClassVar[Fp8Path]

    @classmethod
    def check_available(cls, device: str) -> None:
        p = cls.path
        check_sage2(device, cls.name, p.qattn_module, p.public, p.min_capability,
                    p.max_capability)

    def _kernel_fn(self) -> str:
        return SMOOTH_V_KERNEL if self.smooth_v else self.path.kernels[self.pv_accum][0]

    def phases(self) -> list[PhaseSpec]:
        return with_smooth_k(SAGE2_SMOOTH_V_PHASES if self.smooth_v else SAGE2_PHASES,
                             self.smooth_k)

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        fused, qattn = self.modules.fused, self.modules.qattn
        p = self.path
        scale_max = p.kernels[self.pv_accum][1]
        dtype = inputs.q.dtype
        prep = prepare(inputs.q, inputs.k, inputs.v, inputs.layout, clock, self.smooth_k,
                       self.return_lse)
        qk = quantize(fused, prep, self.gran, p.blkq, p.warpq, p.blkk, clock)
        v, tl = prep.v, prep.tl
        kv_len = prep.k.size(1 if tl == 0 else 2)
        if p.v_pad_multiple is not None and kv_len % p.v_pad_multiple != 0:
            # core.py's sm90 path: torch.cat V with zero tokens up to a multiple of 128
            pad = p.v_pad_multiple - kv_len % p.v_pad_multiple
            if tl == 1:
                zeros = torch.zeros(v.size(0), v.size(1), pad, v.size(3), dtype=v.dtype,
                                    device=v.device)
                v = torch.cat([v, zeros], dim=2)
            else:
                zeros = torch.zeros(v.size(0), pad, v.size(2), v.size(3), dtype=v.dtype,
                                    device=v.device)
                v = torch.cat([v, zeros], dim=1)
        # quant.per_channel_fp8(v, tensor_layout, scale_max, smooth_v)
        if tl == 1:
            vb, vh, v_len, vd = v.shape
            padded_len = (v_len + 63) // 64 * 64
            vt = torch.empty((vb, vh, vd, padded_len), dtype=v.dtype, device=v.device)
        else:
            vb, v_len, vh, vd = v.shape
            padded_len = (v_len + 63) // 64 * 64
            vt = torch.empty((vb, vd, vh, padded_len), dtype=v.dtype, device=v.device)
        fused.transpose_pad_permute_cuda(v, vt, tl)
        clock.mark("v_transpose_pad_permute")

        v_fp8 = torch.empty(vt.shape, dtype=torch.float8_e4m3fn, device=v.device)
        v_scale = torch.empty((vb, vh, vd), dtype=torch.float32, device=v.device)
        vm = torch.empty((vb, vh, vd), dtype=torch.float32, device=v.device)
        if self.smooth_v:
            fused.mean_scale_fuse_quant_cuda(vt, v_fp8, vm, v_scale, v_len, scale_max, tl)
            clock.mark("v_mean_scale_fp8_quantization")
        else:
            fused.scale_fuse_quant_cuda(vt, v_fp8, v_scale, v_len, scale_max, tl)
            clock.mark("v_scale_fp8_quantization")

        o = torch.empty(prep.q.size(), dtype=dtype, device=prep.q.device)
        extra = (vm,) if self.smooth_v else ()
        lse = getattr(qattn, self._kernel_fn())(
            qk.q_int8, qk.k_int8, v_fp8, o, qk.q_scale, qk.k_scale, v_scale, *extra, tl,
            1 if inputs.causal else 0, GRAN_CODE[self.gran], inputs.sm_scale,
            1 if self.return_lse else 0)
        o = o[..., :prep.head_dim_og]
        if self.return_lse:
            self.last_lse = natural_lse(lse, prep.lse_correction, inputs.sm_scale)
        clock.mark("fused_mainloop")
        return o

    def public_call(self, layout: str, causal: bool,
                    sm_scale: float) -> Callable[..., torch.Tensor] | None:
        fn = getattr(importlib.import_module("sageattention"), self.path.public)
        extra = {"smooth_v": True} if self.smooth_v else {}  # sm90's function takes no smooth_v
        return bound_public(fn, self.return_lse, tensor_layout=layout, is_causal=causal,
                            qk_quant_gran=self.gran, sm_scale=sm_scale,
                            pv_accum_dtype=self.pv_accum, smooth_k=self.smooth_k, **extra)


class Sage2Sm89Backend(_Sage2Fp8Backend):
    name: ClassVar[str] = "sage2-sm89"
    kernel: ClassVar[str | None] = "sm89"
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = "SageAttention2 int8 QK, fp8 PV, mma.sync (sm89 kernel)"
    path: ClassVar[Fp8Path] = SM89
    qattn_module: ClassVar[str] = SM89.qattn_module


class Sage2Sm90Backend(_Sage2Fp8Backend):
    name: ClassVar[str] = "sage2-sm90"
    kernel: ClassVar[str | None] = "sm90"
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = "SageAttention2 int8 QK, fp8 PV, wgmma (sm90 kernel)"
    path: ClassVar[Fp8Path] = SM90
    qattn_module: ClassVar[str] = SM90.qattn_module


# the extension module `sageattn` calls on each architecture (core/options.AUTO_CALLS: the
# function and its options; its tile configuration: core.scheduler.AUTO_KERNEL); None: the
# Triton kernel
QATTN_OF = {"sage2-sm80": "_qattn_sm80", "sage2-sm89": "_qattn_sm89", "sage2-sm90": "_qattn_sm90"}
AUTO_DISPATCH: dict[str, str | None] = {arch: QATTN_OF.get(backend)
                                        for arch, (backend, _) in AUTO_CALLS.items()}


def _arch(device: str | int | torch.device | None = None) -> str:
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm{major}{minor}"


class Sage2AutoBackend(Backend):
    name: ClassVar[str] = "sage2-auto"
    kernel: ClassVar[str | None] = None  # set per instance on load(): the kernel it dispatches to
    needs_gpu: ClassVar[bool] = True
    description: ClassVar[str] = "SageAttention2's public sageattn (dispatch by compute capability)"

    @classmethod
    def check_available(cls, device: str) -> None:
        require_cuda(device)
        try:
            sage = importlib.import_module("sageattention")
        except Exception as exc:
            raise BackendUnavailable(f"cannot import sageattention: {type(exc).__name__}: {exc}") \
                from exc
        if not hasattr(sage, "sageattn_qk_int8_pv_fp8_cuda"):
            version = sageattention_version()
            raise BackendUnavailable(f"sageattention {version} is Triton-only: its sageattn is "
                                     "not SageAttention2's dispatch")
        arch = _arch(device)
        if arch not in AUTO_DISPATCH:
            raise BackendUnavailable(f"sageattn has no kernel for {arch} "
                                     f"({torch.cuda.get_device_name(device)})")
        module = AUTO_DISPATCH[arch]
        if module is not None:
            _import_installed(module)

    def load(self) -> None:
        if self.module_path is not None:
            raise VariantLoadError("sage2-auto runs the installed package's dispatch; a variant "
                                   "of it is another install first on PYTHONPATH, not a .so")
        self._sageattn = importlib.import_module("sageattention").sageattn
        # the instance's tile configuration is whichever kernel sageattn picks on this device
        # (kernel is a ClassVar for the other backends: set on the instance here, on purpose)
        self.kernel = kernel_of(self.name, arch=_arch())  # type: ignore[misc]

    def provenance_files(self) -> dict[str, str]:
        """The installed modules the dispatch calls on this GPU (none for the Triton one)."""
        module = AUTO_DISPATCH.get(_arch())
        names = ("_fused", module) if module else ()
        return {n: str(getattr(_import_installed(n), "__file__", "")) for n in names}

    def phases(self) -> list[PhaseSpec]:
        return [PhaseSpec("attention")]

    def facts(self, inputs: Inputs, out: torch.Tensor) -> dict[str, Any]:
        """The function the dispatch called on this GPU and every option it ran with."""
        return {"dispatch": auto_call(_arch(inputs.q.device))}

    def public_name(self) -> str | None:
        return "sageattention.sageattn"  # its one phase is the public dispatch itself

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        if not hasattr(self, "_sageattn"):
            self.load()
        clock.start()
        out = self._sageattn(inputs.q, inputs.k, inputs.v, tensor_layout=inputs.layout,
                             is_causal=inputs.causal, sm_scale=inputs.sm_scale)
        clock.mark("attention")
        return out
