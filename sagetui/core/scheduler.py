"""Scheduler grid facts of SageAttention2's kernels, derived from the tile configuration and the
shape exactly as the phase-breakdown report does, plus waves over the GPU's multiprocessors and
achieved throughput.

Tiles (csrc/qattn/*.cu at SageAttention d1a57a5):
- sm89 `qk_int8_sv_f8_attn_kernel`: CTA_Q 128, CTA_K 64, WARP_Q 32, WARP_K 64, so
  (128/32) x (64/64) = 4 warps, 128 threads; one Q, K and V tile of int8/fp8 in shared memory:
  (CTA_Q + 2 CTA_K) x head_dim bytes.
- sm90 (wgmma): CTA_Q 64, CTA_K 128, one warpgroup of 4 warps (each 16 query rows), same
  shared-memory formula.
- sm80 `qk_int_sv_f16_attn_kernel` (qk_int_sv_f16_cuda_sm80.cu's wrappers): CTA_Q 128, CTA_K 64,
  WARP_Q 32, WARP_K 64, 4 warps; its fp16+fp32 wrapper (`_inst_buf`) takes WARP_Q 16 at head
  dim 128 (8 warps, 256 threads) and 32 at 64. V stays fp16 in shared memory, and the output
  is staged there: max(CTA_Q·d + CTA_K·d + 2·CTA_K·d, 2·CTA_Q·d) bytes.
Head dims other than 64 and 128 are padded up to one of them, as SageAttention does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tiles:
    kernel: str
    cta_q: int
    cta_k: int
    warp_q: int
    warp_k: int
    pipeline_stages: int = 2
    v_bytes: int = 1  # bytes per V element in shared memory (fp8: 1, fp16: 2)
    o_stage_bytes: int = 0  # bytes per output element staged in shared memory (0: none)

    def shared_memory(self, head_dim: int) -> int:
        tiles = (self.cta_q + self.cta_k) * head_dim + self.cta_k * head_dim * self.v_bytes
        return max(tiles, self.cta_q * head_dim * self.o_stage_bytes)

    @property
    def warps_per_cta(self) -> int:
        return (self.cta_q // self.warp_q) * (self.cta_k // self.warp_k)

    @property
    def threads_per_cta(self) -> int:
        return self.warps_per_cta * 32


TILES = {
    "sm89": Tiles("sm89", cta_q=128, cta_k=64, warp_q=32, warp_k=64),
    "sm90": Tiles("sm90", cta_q=64, cta_k=128, warp_q=16, warp_k=128),
    "sm80": Tiles("sm80", cta_q=128, cta_k=64, warp_q=32, warp_k=64, v_bytes=2,
                  o_stage_bytes=2),
    "sm80-inst-buf": Tiles("sm80-inst-buf", cta_q=128, cta_k=64, warp_q=16, warp_k=64,
                           v_bytes=2, o_stage_bytes=2),
}
# the kernel taken for a report that names none: the reports made elsewhere ran sage2's sm89
# kernel (their scheduler blocks hold its CTA sizes, docs/reports.md)
FALLBACK_KERNEL = "sm89"


def tiles(kernel: str, head_dim: int) -> Tiles:
    """The tiles `kernel` runs with at this (padded) head dim."""
    t = TILES[kernel]
    if kernel == "sm80-inst-buf" and head_dim == 64:  # WARP_Q = (HEAD_DIM == 64) ? 32 : 16
        return Tiles(t.kernel, t.cta_q, t.cta_k, 32, t.warp_k, t.pipeline_stages, t.v_bytes,
                     t.o_stage_bytes)
    return t

# the tile configuration `sageattn`'s dispatch runs on each architecture (None: its Triton
# kernel, or no SageAttention CUDA kernel; runner/backends/sage2.py loads the matching module)
AUTO_KERNEL: dict[str, str | None] = {"sm80": None, "sm86": None, "sm89": "sm89", "sm90": "sm90",
                                      "sm120": "sm89", "sm121": "sm89"}


def kernel_of(backend: str | None, options: Mapping[str, Any] | None = None,
              arch: str | None = None) -> str | None:
    """The tile configuration (a TILES key) a backend's kernel runs with these options on an
    architecture ("sm90", or a capability "sm_90"); None when it runs no SageAttention CUDA
    kernel. The runner's backends and a report made before schema 3 both read it here."""
    opts = options or {}
    if backend == "sage2-sm80":
        return "sm80-inst-buf" if opts.get("pv_accum") == "fp16+fp32" else "sm80"
    if backend in ("sage2-sm89", "sage2-sm90"):
        return backend.removeprefix("sage2-")
    if backend == "sage2-auto" and arch:
        return AUTO_KERNEL.get(arch.replace("_", ""))
    return None


MAX_THREADS_PER_SM = 2048
MAX_CTAS_PER_SM = 32


def padded_head_dim(head_dim: int) -> int:
    if head_dim > 128:
        raise ValueError(f"head_dim {head_dim} > 128 is not supported")
    return 64 if head_dim <= 64 else 128


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def q_tail_rows(q_len: int, cta_q: int) -> int:
    return q_len % cta_q


def causal_k_iterations(q_len: int, kv_len: int, t: Tiles) -> list[int]:
    """K iterations of each query CTA under a causal mask (the kernel stops at its diagonal)."""
    return [ceil_div(min(kv_len, (bx + 1) * t.cta_q), t.cta_k)
            for bx in range(ceil_div(q_len, t.cta_q))]


def grid_facts(kernel: str, *, batch: int, heads: int, q_len: int, kv_len: int, head_dim: int,
               causal: bool = False, sm_count: int | None = None,
               smem_per_sm: int | None = None) -> dict:
    """The reference report's `scheduler` object for a shape, plus sagetui's additions."""
    d = padded_head_dim(head_dim)
    t = tiles(kernel, d)
    q_ctas = ceil_div(q_len, t.cta_q)
    if causal:
        per_cta = causal_k_iterations(q_len, kv_len, t)
        k_iters, k_total = max(per_cta), sum(per_cta) * heads * batch
    else:
        k_iters = ceil_div(kv_len, t.cta_k)
        k_total = k_iters * q_ctas * heads * batch
    smem = t.shared_memory(d)
    facts: dict[str, Any] = {
        "cta_q": t.cta_q,
        "cta_k": t.cta_k,
        "warp_q": t.warp_q,
        "warp_k": t.warp_k,
        "warps_per_cta": t.warps_per_cta,
        "threads_per_cta": t.threads_per_cta,
        "dynamic_shared_memory_bytes": smem,
        "q_ctas_per_head": q_ctas,
        "heads": heads,
        "grid_ctas": q_ctas * heads * batch,
        "k_iterations_per_cta": k_iters,
        "q_tail_rows": q_len % t.cta_q,
        "k_tail_rows": kv_len % t.cta_k,
        "explicit_pipeline_stages": t.pipeline_stages,
        "kernel": kernel,
        "batch": batch,
        "q_len": q_len,
        "kv_len": kv_len,
        "head_dim": d,
        "causal": causal,
        "k_iterations_total": k_total,
        "scheduled_q_rows": q_ctas * t.cta_q,
        "q_row_efficiency": q_len / (q_ctas * t.cta_q),
    }
    if sm_count and smem_per_sm:
        # resident CTAs per SM as shared memory and threads allow; registers are not counted,
        # so this is an upper bound
        per_sm = min(smem_per_sm // smem, MAX_THREADS_PER_SM // t.threads_per_cta,
                     MAX_CTAS_PER_SM)
        facts.update(sm_count=sm_count, ctas_per_sm=per_sm,
                     waves=facts["grid_ctas"] / (sm_count * per_sm))
    return facts


def tail_points(n: int, tile: int) -> list[int]:
    """The phase-breakdown report's tail-study rows: the largest multiple of the tile at or below n,
    that plus one, and n itself (deduplicated, ascending). When n is itself a multiple, the boundary
    below it is studied instead (n - tile, n - tile + 1, n), since the inputs end at n."""
    base = (n // tile) * tile
    if base == n:
        base -= tile
    return sorted({p for p in (base, base + 1, n) if p >= 1})


def tail_row(sweep: str, kernel: str, q_len: int, kv_len: int) -> dict:
    """The geometry columns of one tail-study row."""
    t = TILES[kernel]
    q_ctas = ceil_div(q_len, t.cta_q)
    return {
        "sweep": sweep,
        "q_len": q_len,
        "kv_len": kv_len,
        "q_ctas_per_head": q_ctas,
        "k_iterations_per_cta": ceil_div(kv_len, t.cta_k),
        "q_tail_rows": q_len % t.cta_q,
        "k_tail_rows": kv_len % t.cta_k,
        "scheduled_q_rows": q_ctas * t.cta_q,
        "q_row_efficiency": q_len / (q_ctas * t.cta_q),
    }


def tail_plan(kernel: str, q_len: int, kv_len: int) -> list[tuple[str, int, int]]:
    """(sweep, q_len, kv_len) for every row of the tail study."""
    t = TILES[kernel]
    rows = [("q_tail_fixed_kv", q, kv_len) for q in tail_points(q_len, t.cta_q)]
    rows += [("kv_tail_fixed_q", q_len, kv) for kv in tail_points(kv_len, t.cta_k)]
    return rows


__all__ = ["AUTO_KERNEL", "TILES", "Tiles", "grid_facts", "kernel_of", "padded_head_dim",
           "tail_plan", "tail_points", "tail_row"]
