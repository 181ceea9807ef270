"""Speed of light per phase: the bytes each timed phase must move, its bandwidth against the
GPU's measured copy bandwidth, and the main loop's TOPS against the tensor-core ceiling at the
SM clock its rounds ran at. Computed here once: the report (core/run/figures.py) and `sagetui
check` (core/run/check_sol.py) both call `speed_of_light`.

The bytes model is the compulsory traffic of each phase: every tensor the phase's kernels take
is read once and every tensor they produce written once, at the sizes SageAttention allocates
(sageattention/quant.py and core.py at thu-ml/SageAttention d1a57a5, the commit core/scheduler.py
cites). A kernel that reads a tensor twice (MeanScaleKernel in csrc/fused/fused.cu reads V's
transposed copy in two passes) or re-reads K and V per CTA (the main loop) moves more than
this; the share of copy bandwidth is therefore a lower bound of what the phase achieved. A phase
whose kernels are not modelled here (the Triton backend, the CPU reference) gets no figure:
never a guess.

Notation: B batch, Hq / Hkv heads, Lq / Lkv lengths, D the head dim, Dp the head dim padded as
core.py pads it (64 or 128), e the input's bytes per element (2: fp16 or bf16); a "row" is one
token of one head. Q = B·Lq·Hq rows, K = V = B·Lkv·Hkv rows.

    GB/s            = (bytes read + bytes written) / phase p50 / 1e9
    share of copy   = GB/s / copy GB/s   (copy: a device-to-device copy, read + write counted)
    clock ceiling   = datasheet peak x mean SM clock of the rounds / the GPU's max SM clock
    share           = main-loop TOPS / clock ceiling  (beside main-loop TOPS / datasheet peak)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sagetui.core import scheduler
from sagetui.core.derived import share_of_peak, tops
from sagetui.core.options import option
from sagetui.core.phases import PARENTS
from sagetui.core.statistics.summary import median
from sagetui.core.telemetry import merge_blocks

F32 = 4  # bytes of a float32 scale or mean
ONE_PHASE = ("sdpa", "flash-attn", "sage2-auto")  # one timed phase: the whole call
SAGE2_CUDA = ("sage2-sm80", "sage2-sm89", "sage2-sm90")
DTYPE_BYTES = {"fp16": 2, "bf16": 2}
COPY_METHOD = ("device-to-device copy (torch Tensor.copy_) of a buffer of at least 1 GiB and "
               "8 x the L2 cache, timed with CUDA events, after 2 untimed copies; bytes = read + "
               "written; the median of the repeats")


@dataclass(frozen=True)
class Dims:
    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    elem: int  # bytes per element of q, k, v and the output

    @property
    def dp(self) -> int:
        return scheduler.padded_head_dim(self.head_dim)

    @property
    def q_rows(self) -> int:
        return self.batch * self.q_len * self.heads

    @property
    def kv_rows(self) -> int:
        return self.batch * self.kv_len * self.kv_heads

    @property
    def kv_channels(self) -> int:
        """B·Hkv·Dp: one per K mean, V scale or V mean entry."""
        return self.batch * self.kv_heads * self.dp


def dims_of(shape: Mapping[str, Any]) -> Dims | None:
    """A configuration's shape (a Shape's dump or a report's config.shape) as Dims; None when
    a field is missing or malformed, or its dtype has no byte size here."""
    def pos(key: str, default: Any = None) -> int | None:
        x = shape.get(key)
        x = default if x is None else x
        return x if isinstance(x, int) and not isinstance(x, bool) and x >= 1 else None

    heads, q_len, head_dim = pos("heads"), pos("q_len"), pos("head_dim")
    elem = DTYPE_BYTES.get(shape.get("dtype"))  # type: ignore[arg-type]
    if heads is None or q_len is None or head_dim is None or elem is None \
            or head_dim > 128:
        return None
    batch, kv_heads, kv_len = pos("batch", 1), pos("kv_heads", heads), pos("kv_len", q_len)
    if batch is None or kv_heads is None or kv_len is None:
        return None
    return Dims(batch, heads, kv_heads, q_len, kv_len, head_dim, elem)


Traffic = dict[str, tuple[int, int]]  # phase -> (bytes read, bytes written)


def _prep(d: Dims, smooth_k: bool) -> tuple[int, int]:
    """k_mean_and_smoothing_preparation: core.py's F.pad of q, k and v to Dp (only when D is
    not 64 or 128) and, with smooth_k, `km = k.mean(dim=seq_dim, keepdim=True)` (read K, write
    B·Hkv·Dp in k's dtype)."""
    rows = d.q_rows + 2 * d.kv_rows
    read = write = 0
    if d.dp != d.head_dim:
        read, write = rows * d.head_dim * d.elem, rows * d.dp * d.elem
    if smooth_k:
        read += d.kv_rows * d.dp * d.elem
        write += d.kv_channels * d.elem
    return read, write


def _qk(d: Dims, kernel: str, gran: str, smooth_k: bool) -> Traffic:
    """quant.per_warp_int8 (per_warp) or per_thread_int8 (per_thread) with the path's BLKQ,
    WARPQ, BLKK (core/scheduler.py's CTA_Q, WARP_Q, CTA_K): Q and K in int8, float32 scales of
    the shapes quant.py allocates."""
    t = scheduler.tiles(kernel, d.dp)
    blkq, warpq, blkk = t.cta_q, t.warp_q, t.cta_k
    q_blocks = scheduler.ceil_div(d.q_len, blkq) * (blkq // warpq)
    k_blocks = scheduler.ceil_div(d.kv_len, blkk)
    if gran == "per_thread":  # quant_per_thread.py: 8 scales per Q warp, 4 per K block
        q_blocks, k_blocks = q_blocks * 8, k_blocks * 4
    q_in, k_in = d.q_rows * d.dp * d.elem, d.kv_rows * d.dp * d.elem
    km = d.kv_channels * d.elem if smooth_k else 0
    q = (q_in, d.q_rows * d.dp + d.batch * d.heads * q_blocks * F32)
    k_out = d.kv_rows * d.dp + d.batch * d.kv_heads * k_blocks * F32
    if gran == "per_thread" and smooth_k:  # per_thread_int8's `k = k - km`, then its kernel
        k = (2 * k_in + km, k_in + k_out)
    else:  # quant_per_block_int8[_fuse_sub_mean]_cuda reads k (and km) once
        k = (k_in + km, k_out)
    return {"q_int8_quantization": q,
            ("k_int8_subtract_mean_quantization" if smooth_k else "k_int8_quantization"): k}


def _scales(d: Dims, kernel: str, gran: str) -> int:
    """The main loop's Q and K scales: what _qk wrote of them."""
    q = _qk(d, kernel, gran, False)
    return (q["q_int8_quantization"][1] - d.q_rows * d.dp
            + q["k_int8_quantization"][1] - d.kv_rows * d.dp)


def _fp8_v(d: Dims, kernel: str, smooth_v: bool) -> tuple[Traffic, int]:
    """quant.per_channel_fp8 after core.py's sm90 padding of V to a multiple of 128 tokens
    (torch.zeros and torch.cat); returns its phases and the fp8 V's bytes."""
    v_in = d.kv_rows * d.dp * d.elem
    per_token = d.batch * d.kv_heads * d.dp
    v_len = d.kv_len
    read = write = 0
    if kernel == "sm90" and d.kv_len % 128:
        v_len = scheduler.ceil_div(d.kv_len, 128) * 128
        zeros = (v_len - d.kv_len) * per_token * d.elem
        read, write = v_in + zeros, zeros + v_len * per_token * d.elem
    padded = scheduler.ceil_div(v_len, 64) * 64  # per_channel_fp8's padded_len
    # transpose_pad_permute_cuda reads v_len tokens, writes (B, Hkv, Dp, padded) in V's dtype
    transpose = (read + v_len * per_token * d.elem, write + padded * per_token * d.elem)
    # (mean_)scale_fuse_quant_cuda: reads the transposed copy, writes fp8, v_scale (and vm)
    quant = (padded * per_token * d.elem,
             padded * per_token + d.kv_channels * F32 * (2 if smooth_v else 1))
    name = "v_mean_scale_fp8_quantization" if smooth_v else "v_scale_fp8_quantization"
    return {"v_transpose_pad_permute": transpose, name: quant}, padded * per_token


def _sm80_v(d: Dims, dtype: str, smooth_v: bool) -> tuple[Traffic, int]:
    """core.py's sm80 V: `v.to(torch.float16)` (nothing to move when V is fp16 already), or
    with smooth_v quant.sub_mean: `vm = v.mean(...)` in V's dtype, then sub_mean_cuda into
    fp16. Returns its phases and the main loop's V and vm bytes."""
    v_in, v16 = d.kv_rows * d.dp * d.elem, d.kv_rows * d.dp * 2
    vm = d.kv_channels * d.elem
    if smooth_v:
        return {"v_mean": (v_in, vm), "v_subtract_mean_fp16": (v_in + vm, v16)}, v16 + vm
    return {"v_fp16_conversion": (0, 0) if dtype == "fp16" else (v_in, v16)}, v16


def phase_traffic(backend: str, kernel: str | None, options: Mapping[str, Any],
                  shape: Mapping[str, Any]) -> Traffic | None:
    """(bytes read, bytes written) of each timed phase, parents the sums of their children;
    None where the backend's kernels are not modelled (see the module's doc)."""
    d = dims_of(shape)
    if d is None:
        return None
    if backend in ONE_PHASE:  # the call's own inputs and output, each moved once
        return {"attention": ((d.q_rows + 2 * d.kv_rows) * d.head_dim * d.elem,
                              d.q_rows * d.head_dim * d.elem)}
    if backend not in SAGE2_CUDA or kernel not in scheduler.TILES:
        return None
    gran = str(option(backend, options, "qk_quant_gran"))
    smooth_k = bool(option(backend, options, "smooth_k"))
    smooth_v = bool(option(backend, options, "smooth_v"))
    out: Traffic = {"k_mean_and_smoothing_preparation": _prep(d, smooth_k),
                    **_qk(d, kernel, gran, smooth_k)}
    if backend == "sage2-sm80":
        v_phases, v_main = _sm80_v(d, str(shape.get("dtype")), smooth_v)
    else:
        v_phases, v_main = _fp8_v(d, kernel, smooth_v)
        v_main += d.kv_channels * F32 * (2 if smooth_v else 1)  # v_scale (and vm)
    out.update(v_phases)
    # the fused main loop: q_int8, k_int8, V, the scales in; o (B, Lq, Hq, Dp) out (core.py's
    # `o = torch.empty(q.size(), dtype=dtype)`, q padded)
    out["fused_mainloop"] = (d.q_rows * d.dp + d.kv_rows * d.dp + v_main
                             + _scales(d, kernel, gran), d.q_rows * d.dp * d.elem)
    for child, parent in PARENTS.items():
        if child in out and parent is not None:
            r, w = out.get(parent, (0, 0))
            out[parent] = (r + out[child][0], w + out[child][1])
    return out


def copy_gbps(seconds: Iterable[float], moved_bytes: int) -> float | None:
    """The measured copy bandwidth: the median over the repeats of moved bytes / seconds."""
    rates = [moved_bytes / s / 1e9 for s in seconds if s > 0]
    return median(rates) if rates else None


def mean_sm_clock(rounds: Iterable[Mapping[str, Any] | None]) -> float | None:
    """The mean SM clock over the measured rounds' telemetry (weighted by samples)."""
    clock = merge_blocks(rounds).get("sm_clock_mhz")
    return clock["mean"] if clock else None


def speed_of_light(traffic: Traffic | None, phase_p50s: Mapping[str, float],
                   copy: float | None, *, ops: float, compute_phase: str | None,
                   peak_tops: float | None, mean_clock_mhz: float | None,
                   max_clock_mhz: float | None) -> dict[str, Any] | None:
    """A variant's `sol` block: per phase its bytes, GB/s and share of the copy bandwidth;
    for its compute phase (the main loop, or the one phase) TOPS against the datasheet peak
    and against that peak at the clock its rounds ran at."""
    phases = {}
    for name, (read, written) in (traffic or {}).items():
        p50 = phase_p50s.get(name)
        if p50 is None:
            continue
        gbps = (read + written) / p50 / 1e9 if p50 > 0 and read + written else None
        entry = {"bytes_read": read, "bytes_written": written, "gbps": gbps,
                 "share_of_copy": gbps / copy if gbps is not None and copy else None}
        phases[name] = {k: x for k, x in entry.items() if x is not None}
    ceiling = (peak_tops * mean_clock_mhz / max_clock_mhz
               if peak_tops and mean_clock_mhz and max_clock_mhz else None)
    p50 = phase_p50s.get(compute_phase or "")
    t = tops(ops, p50) if p50 else None
    out: dict[str, Any] = {
        "phases": phases or None, "copy_gbps": copy, "compute_phase": compute_phase if t else None,
        "tops": t, "peak_tops": peak_tops, "share_of_peak": share_of_peak(t, peak_tops),
        "mean_sm_clock_mhz": mean_clock_mhz, "max_sm_clock_mhz": max_clock_mhz,
        "clock_ceiling_tops": ceiling, "share_of_clock_ceiling": share_of_peak(t, ceiling)}
    if not phases and ceiling is None and not peak_tops:  # nothing beyond `achieved`'s TOPS
        return None
    return {k: v for k, v in out.items() if v is not None}


def compute_phase(phases: Iterable[str]) -> str | None:
    """The phase whose TOPS is compared with the tensor-core ceiling: the fused main loop, or
    a one-phase backend's whole call."""
    names = list(phases)
    return next((p for p in ("fused_mainloop", "attention") if p in names), None)


def gpu_copy_gbps(gpu: Mapping[str, Any] | None) -> float | None:
    """The copy bandwidth of the ready event's (the report's environment) gpu block, from its
    raw repeats: `copy_bandwidth` {"seconds", "moved_bytes", ...}, absent on the CPU."""
    block = (gpu or {}).get("copy_bandwidth")
    if not isinstance(block, Mapping):
        return None
    seconds, moved = block.get("seconds"), block.get("moved_bytes")
    if not isinstance(seconds, list) or not isinstance(moved, int) or isinstance(moved, bool):
        return None
    return copy_gbps([float(s) for s in seconds if isinstance(s, int | float)], moved)


def max_clock(gpu: Mapping[str, Any] | None) -> float | None:
    x = (gpu or {}).get("max_sm_clock_mhz")
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and x > 0 else None
