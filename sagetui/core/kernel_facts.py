"""Kernel facts of a variant: the main-loop kernel's registers per thread, spills
(local memory), stack and static shared memory as its binary says (`cuobjdump
--dump-resource-usage`), its launch (threads per CTA and dynamic shared memory, core/scheduler.py's
formula), and the CTAs per SM and theoretical occupancy these allow, by the CUDA occupancy
calculator's rules, with the limiting factor named.

Pure: the runner runs cuobjdump and c++filt (runner/kernel_facts.py) and hands the text here;
`sagetui check` recomputes the occupancy from the raw figures with `occupancy` below, the one
place it is computed. docs/kernel_facts.md has the rules and their sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from sagetui.core import scheduler
from sagetui.core.profile.rules import FAMILIES

NonNeg = Annotated[int, Field(ge=0)]

# -- cuobjdump --dump-resource-usage ----------------------------------------------------------
# Its text, one ELF per architecture:
#   Fatbin elf code:
#   ================
#   arch = sm_90a
#   ...
#   Resource usage:
#    Common:
#     GLOBAL:0
#    Function _Z...:
#     REG:128 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:588 TEXTURE:0 SURFACE:0 SAMPLER:0

_ARCH = re.compile(r"^\s*arch\s*=\s*(\S+)\s*$")
_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):\s*$")
_FIELD = re.compile(r"([A-Z]+)(?:\[(\d+)\])?:(\d+)")
_FIELDS = {"REG": "registers", "STACK": "stack_bytes", "SHARED": "static_shared_bytes",
           "LOCAL": "local_bytes", "TEXTURE": "textures", "SURFACE": "surfaces",
           "SAMPLER": "samplers"}


class ResourceFormatError(ValueError):
    """cuobjdump's text is not what --dump-resource-usage prints."""


class KernelUsage(BaseModel):
    """One function's line of `cuobjdump --dump-resource-usage`, as printed."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    function: str  # the mangled name
    arch: str | None  # the ELF's `arch = ` (sm_90a)
    registers: NonNeg  # REG: per thread
    stack_bytes: NonNeg  # STACK: per thread
    static_shared_bytes: NonNeg  # SHARED: per CTA, static only (the launch adds the dynamic)
    local_bytes: NonNeg  # LOCAL: per thread; register spills live here
    constant_bytes: dict[str, NonNeg] = {}  # CONSTANT[bank]
    textures: NonNeg = 0
    surfaces: NonNeg = 0
    samplers: NonNeg = 0


def function_names(text: str) -> list[str]:
    """The mangled names of the functions in cuobjdump's text, each once, in order."""
    return list(dict.fromkeys(m.group(1) for line in text.splitlines()
                              if (m := _FUNCTION.match(line))))


def parse_resource_usage(text: str) -> list[KernelUsage]:
    """Every function of every ELF in cuobjdump's text, in its order. A function line must be
    followed by its figures; ResourceFormatError names the line that is not."""
    out: list[KernelUsage] = []
    arch: str | None = None
    pending: str | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if m := _ARCH.match(line):
            arch = m.group(1)
            continue
        if m := _FUNCTION.match(line):
            if pending is not None:
                raise ResourceFormatError(f"line {n}: function {pending} has no figures")
            pending = m.group(1)
            continue
        if pending is None:
            continue
        fields = _FIELD.findall(line)
        if not fields or "REG" not in {f[0] for f in fields}:
            raise ResourceFormatError(f"line {n}: no REG: figures after function {pending}: "
                                      f"{line.strip()!r}")
        values: dict[str, Any] = {"function": pending, "arch": arch, "constant_bytes": {}}
        for key, bank, value in fields:
            if key == "CONSTANT":
                values["constant_bytes"][bank] = int(value)
            elif key in _FIELDS:
                values[_FIELDS[key]] = int(value)
        for key in ("STACK", "SHARED", "LOCAL"):
            values.setdefault(_FIELDS[key], 0)
        out.append(KernelUsage(**values))
        pending = None
    if pending is not None:
        raise ResourceFormatError(f"the text ends after function {pending}, without its figures")
    return out


# -- which instantiation a backend launches ------------------------------------------------------
# The main-loop kernels' template parameters at SageAttention d1a57a5 (csrc/qattn): the
# demangled name's arguments, in order.
#  sm89 qk_int_sv_f8_attn_kernel<CTA_Q, CTA_K, WARP_Q, WARP_K, head_dim, DTypeQK, Q_GRAN, K_GRAN,
#       DTypeSVAccum, use_inst_buffer, DTypeOut, DenominatorAccumUnit, mask_mode, return_lse,
#       fuse_v_scale, fuse_v_mean, use_pv_fp16_accu>
#  sm90 qk_int8_sv_f8_attn_kernel<CTA_Q, CTA_K, NUM_THREADS, head_dim, Q_GRAN, K_GRAN, DTypeOut,
#       mask_mode, return_lse, fuse_v_scale>
#  sm80 qk_int_sv_f16_attn_kernel<CTA_Q, CTA_K, WARP_Q, WARP_K, head_dim, DTypeQK, Q_GRAN,
#       K_GRAN, DTypeSVAccum, use_inst_buffer, DTypeOut, DenominatorAccumUnit, mask_mode,
#       return_lse, fuse_v_mean>
# and the fixed arguments each pybind function (the backend's kernel function) passes.

GRAN = {"per_warp": "(QuantGranularity)2", "per_thread": "(QuantGranularity)3"}
OUT_TYPE = {"fp16": "__half", "bf16": "__nv_bfloat16"}
FALSE, TRUE = "false", "true"

# function -> (DTypeSVAccum, use_inst_buffer, fuse_v_scale, fuse_v_mean, use_pv_fp16_accu)
SM89_FUNCTIONS: dict[str, tuple[str, str, str, str, str]] = {
    "qk_int8_sv_f8_accum_f32_attn": ("float", FALSE, FALSE, FALSE, FALSE),
    "qk_int8_sv_f8_accum_f32_attn_inst_buf": ("float", TRUE, FALSE, FALSE, FALSE),
    "qk_int8_sv_f8_accum_f16_attn_inst_buf": ("float", TRUE, FALSE, FALSE, TRUE),
    "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn": ("float", FALSE, TRUE, FALSE, FALSE),
    "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf": ("float", TRUE, TRUE, FALSE, FALSE),
    "qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf": ("float", TRUE, TRUE, FALSE, TRUE),
    "qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn": ("float", FALSE, TRUE, TRUE, FALSE),
}
# function -> fuse_v_scale
SM90_FUNCTIONS: dict[str, str] = {
    "qk_int8_sv_f8_accum_f32_attn_inst_buf": FALSE,
    "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf": TRUE,
}
# function -> (DTypeSVAccum, use_inst_buffer, fuse_v_mean)
SM80_FUNCTIONS: dict[str, tuple[str, str, str]] = {
    "qk_int8_sv_f16_accum_f32_attn": ("float", FALSE, FALSE),
    "qk_int8_sv_f16_accum_f16_attn": ("__half", FALSE, FALSE),
    "qk_int8_sv_f16_accum_f16_attn_inst_buf": ("float", TRUE, FALSE),
    "qk_int8_sv_f16_accum_f16_fuse_v_mean_attn": ("__half", FALSE, TRUE),
}


@dataclass(frozen=True)
class Launch:
    """What selects the instantiation: the tile configuration (core/scheduler.py's), the
    pybind function the backend calls, and the call's shape and options."""

    kernel: str  # a TILES key
    function: str  # the pybind function (runner/backends/sage2*.py's kernel function)
    head_dim: int
    dtype: str  # fp16, bf16: the output's type
    causal: bool
    qk_quant_gran: str  # per_warp, per_thread


def _u(n: int) -> str:
    return f"{n}u"


def expected_arguments(launch: Launch) -> list[str] | None:
    """The main-loop kernel's template arguments as c++filt prints them, or None for a
    function the table does not know."""
    d = scheduler.padded_head_dim(launch.head_dim)
    t = scheduler.tiles(launch.kernel, d)
    gran, out = GRAN[launch.qk_quant_gran], OUT_TYPE[launch.dtype]
    mask = "(MaskMode)1" if launch.causal else "(MaskMode)0"
    tiles = [_u(t.cta_q), _u(t.cta_k), _u(t.warp_q), _u(t.warp_k), _u(d), "(DataType)1", gran,
             gran]
    if launch.kernel == "sm89" and launch.function in SM89_FUNCTIONS:
        acc, buf, v_scale, v_mean, fp16_acc = SM89_FUNCTIONS[launch.function]
        return [*tiles, acc, buf, out, "(ComputeUnit)1", mask, FALSE, v_scale, v_mean, fp16_acc]
    if launch.kernel == "sm90" and launch.function in SM90_FUNCTIONS:
        return [_u(t.cta_q), _u(t.cta_k), _u(t.threads_per_cta), _u(d), gran, gran, out, mask,
                FALSE, SM90_FUNCTIONS[launch.function]]
    if launch.kernel.startswith("sm80") and launch.function in SM80_FUNCTIONS:
        acc, buf, v_mean = SM80_FUNCTIONS[launch.function]
        return [*tiles, acc, buf, out, "(ComputeUnit)0", mask, FALSE, v_mean]
    return None


def template_of(demangled: str) -> tuple[str, list[str]] | None:
    """(function name, template arguments) of a demangled `void name<a, b, ...>(params)`;
    None for a name without template arguments."""
    start = demangled.find("<")
    if start < 0 or "(" in demangled[:start]:
        return None
    name = demangled[:start].split()[-1]
    args, depth, cur = [], 0, ""
    for ch in demangled[start + 1:]:
        if ch == "<" or ch == "(":
            depth += 1
        elif ch == ">" or ch == ")":
            if depth == 0:
                args.append(cur.strip())
                return name, args
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        cur += ch
    return None


def select_main_loop(usage: Iterable[KernelUsage], names: Mapping[str, str],
                     launch: Launch, arch: str | None = None) -> KernelUsage | str:
    """The main-loop instantiation `launch` runs (for `arch`: the GPU's, sm_90; its ELF may say
    sm_90a), or one line saying why none can be named. `names`: mangled -> demangled."""
    want = expected_arguments(launch)
    family = FAMILIES.get(launch.kernel.removesuffix("-inst-buf"))
    kernel = family.kernel if family is not None else None
    if want is None or kernel is None:
        return f"not available: {launch.function} is not a main-loop function sagetui knows"
    usage = list(usage)
    if usage and not names:
        return "not available: no c++filt to demangle the kernels' names"
    same = [u for u in usage if (t := template_of(names.get(u.function, u.function)))
            and t[0] == kernel]
    if arch is not None:
        on_arch = [u for u in same if u.arch is None or arch_key(u.arch) == arch_key(arch)]
        if same and not on_arch:
            archs = ", ".join(sorted({u.arch or "?" for u in same}))
            return f"not available: the module has no {arch_key(arch)} code of {kernel} ({archs})"
        same = on_arch
    hits = [u for u in same if template_of(names.get(u.function, u.function)) == (kernel, want)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        return (f"not available: none of the {len(same)} instantiations of {kernel} "
                f"matches <{', '.join(want)}>")
    return f"not available: {len(hits)} instantiations of {kernel} match <{', '.join(want)}>"


# -- the occupancy calculator ----------------------------------------------------------------------


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability.

    Sources: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
    (resident CTAs, warps and threads per SM; 32-bit registers per SM and per thread; shared
    memory per SM and the most one CTA may use) and "Shared Memory" of the compute capability
    8.x / 9.0 sections (1 KiB of shared memory reserved by the system per CTA); the
    allocation units (registers per warp in units of 256, shared memory in units of 128 bytes,
    4 warp schedulers each holding a quarter of the register file) from cuda_occupancy.h, the
    occupancy calculator the toolkit ships.

    `binary_counts_reserved`: cuobjdump's SHARED already holds the reserved KiB (measured:
    cuobjdump 13.0 on sm_90a ELFs prints SHARED:1152 for the kernel Nsight Compute shows with
    128 B of static shared memory and 1.02 KB of driver shared memory; SHARED:1024 for one
    with none; SHARED:0 for a kernel that uses no shared memory)."""

    max_ctas: int
    max_warps: int
    regs_per_sm: int = 65536
    max_regs_per_thread: int = 255
    reg_unit: int = 256  # registers allocated per warp in units of this
    sub_partitions: int = 4  # the register file is split among the warp schedulers
    smem_per_sm: int = 228 * 1024
    max_smem_per_cta: int = 227 * 1024
    reserved_smem_per_cta: int = 1024
    smem_unit: int = 128
    binary_counts_reserved: bool = False


ARCH_LIMITS: dict[str, ArchLimits] = {
    "sm_80": ArchLimits(max_ctas=32, max_warps=64, smem_per_sm=164 * 1024,
                        max_smem_per_cta=163 * 1024),
    "sm_86": ArchLimits(max_ctas=16, max_warps=48, smem_per_sm=100 * 1024,
                        max_smem_per_cta=99 * 1024),
    "sm_87": ArchLimits(max_ctas=16, max_warps=48, smem_per_sm=164 * 1024,
                        max_smem_per_cta=163 * 1024),
    "sm_89": ArchLimits(max_ctas=24, max_warps=48, smem_per_sm=100 * 1024,
                        max_smem_per_cta=99 * 1024),
    "sm_90": ArchLimits(max_ctas=32, max_warps=64, binary_counts_reserved=True),
    "sm_100": ArchLimits(max_ctas=32, max_warps=64),
    "sm_120": ArchLimits(max_ctas=32, max_warps=48, smem_per_sm=100 * 1024,
                         max_smem_per_cta=99 * 1024),
}
LIMITS = ("registers", "shared memory", "warps", "CTAs")


def arch_key(arch: str) -> str:
    """sm_90a, sm90, 9.0 -> sm_90."""
    a = arch.strip().lower().removeprefix("sm").lstrip("_").rstrip("af")
    if "." in a:
        major, minor = a.split(".", 1)
        a = f"{major}{minor}"
    return f"sm_{a}"


class Occupancy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    arch: str  # the limits' key (sm_90)
    ctas_per_sm: NonNeg
    # CTAs per SM each resource alone allows (ncu's Block Limit Registers, Shared Mem, Warps,
    # SM)
    limits: dict[str, NonNeg]
    limited_by: list[str]  # the resources at the minimum
    warps_per_cta: NonNeg
    active_warps: NonNeg
    max_warps: NonNeg
    theoretical_occupancy: Annotated[float, Field(ge=0, le=1)]  # active / max warps
    shared_per_cta_bytes: NonNeg  # static + dynamic + reserved, in allocation units


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def occupancy(arch: str, *, registers: int, threads_per_cta: int, static_shared_bytes: int,
              dynamic_shared_bytes: int, smem_per_sm: int | None = None) -> Occupancy | None:
    """CTAs per SM and theoretical occupancy; None for an architecture the table lacks.
    `static_shared_bytes` is cuobjdump's SHARED; `smem_per_sm` the shared-memory carveout
    (default: the SM's whole shared memory, the calculator's default preference)."""
    lim = ARCH_LIMITS.get(arch_key(arch))
    if lim is None:
        return None
    warps = -(-threads_per_cta // 32)
    regs_per_warp = _round_up(max(registers, 1) * 32, lim.reg_unit)
    if registers > lim.max_regs_per_thread:
        by_regs = 0
    else:
        per_partition = lim.regs_per_sm // lim.sub_partitions // regs_per_warp
        by_regs = per_partition * lim.sub_partitions // warps
    reserved = lim.reserved_smem_per_cta
    counted = lim.binary_counts_reserved and static_shared_bytes >= reserved
    smem_cta = _round_up(static_shared_bytes + dynamic_shared_bytes + (0 if counted else reserved),
                         lim.smem_unit)
    per_sm = lim.smem_per_sm if smem_per_sm is None else smem_per_sm
    by_smem = 0 if smem_cta - reserved > lim.max_smem_per_cta else per_sm // smem_cta
    limits = {"registers": by_regs, "shared memory": by_smem,
              "warps": lim.max_warps // warps, "CTAs": lim.max_ctas}
    ctas = min(limits.values())
    return Occupancy(arch=arch_key(arch), ctas_per_sm=ctas, limits=limits,
                     limited_by=[k for k in LIMITS if limits[k] == ctas], warps_per_cta=warps,
                     active_warps=ctas * warps, max_warps=lim.max_warps,
                     theoretical_occupancy=ctas * warps / lim.max_warps,
                     shared_per_cta_bytes=smem_cta)


# -- a variant's block ----------------------------------------------------------------------------


class KernelFacts(BaseModel):
    """A variant's `kernel_facts`: the raw figures of its main-loop kernel and its launch, and
    the occupancy computed from them (`sagetui check` computes it again). When the facts could
    not be read, `unavailable` says why and the rest is empty."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    unavailable: str | None = None  # "not available: no cuobjdump", ...
    module: str | None = None  # the .so that holds the kernel
    module_sha256: str | None = None
    cuobjdump: str | None = None  # its version line
    arch: str | None = None  # the GPU's compute capability (sm_90)
    function: str | None = None  # the pybind function that launches it
    kernel: KernelUsage | None = None
    kernel_name: str | None = None  # demangled
    threads_per_cta: NonNeg | None = None
    dynamic_shared_bytes: NonNeg | None = None
    occupancy: Occupancy | None = None


def derive(kernel: KernelUsage, arch: str, threads_per_cta: int,
           dynamic_shared_bytes: int) -> Occupancy | None:
    """A block's occupancy from its raw figures: the one call the runner and check make."""
    return occupancy(arch, registers=kernel.registers, threads_per_cta=threads_per_cta,
                     static_shared_bytes=kernel.static_shared_bytes,
                     dynamic_shared_bytes=dynamic_shared_bytes)


def kernel_facts(text: str, names: Mapping[str, str], launch: Launch, arch: str, *,
                 module: str, module_sha256: str | None, cuobjdump: str | None) -> KernelFacts:
    """The block for one variant from cuobjdump's text of its module (never raises on the
    text: a text it cannot read is `unavailable`, with why)."""
    base: dict[str, Any] = {"module": module, "module_sha256": module_sha256,
                            "cuobjdump": cuobjdump, "arch": arch_key(arch),
                            "function": launch.function}
    try:
        usage = parse_resource_usage(text)
    except ResourceFormatError as exc:
        return KernelFacts(unavailable=f"not available: cuobjdump's text: {exc}", **base)
    hit = select_main_loop(usage, names, launch, arch_key(arch))
    if isinstance(hit, str):
        return KernelFacts(unavailable=hit, **base)
    t = scheduler.tiles(launch.kernel, scheduler.padded_head_dim(launch.head_dim))
    dynamic = t.shared_memory(scheduler.padded_head_dim(launch.head_dim))
    return KernelFacts(kernel=hit, kernel_name=names.get(hit.function),
                       threads_per_cta=t.threads_per_cta, dynamic_shared_bytes=dynamic,
                       occupancy=derive(hit, arch, t.threads_per_cta, dynamic), **base)
