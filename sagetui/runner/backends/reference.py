"""SageAttention2's algorithm in plain torch on the CPU: the embedded default and the numerical
oracle for the GPU kernels.

It follows `sageattn_qk_int8_pv_fp8_cuda` (per_warp granularity, pv_accum fp32+fp32) step by
step, with the same phase names: K smoothing by its per-head mean (the `smooth_k` option, on by
default as in SageAttention's functions; off, K is quantized as it is and the leaf is named
`k_int8_quantization`), Q int8 per 32-row warp block,
K-minus-mean int8 per 64-row block, V transposed to [B, H, D, N] padded to the 64-token tile and
permuted within 16-token groups for the fp8 MMA layout, V scaled per channel into fp8 e4m3, and
the main loop as the kernel runs it: online and blockwise, one 64-key block at a time, with a
running row maximum, P quantized to fp8 against that running maximum, P V in fp32, normalised
at the end. Packed sequences (`--seqlens`) are quantized and attended each on its own (block
diagonal, causal within each), K's mean taken over every packed token as `sageattn_varlen` does;
with `return_lse` it keeps each row's log-sum-exp (running maximum plus log of the row sum, plus
q·mean(K)·sm_scale, which smoothing took away, as the public functions add it back). The error it
keeps against exact fp32 attention is measured in tests/test_reference_backend.py and stated
in docs/running-and-comparing.md, "The reference backend".
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import torch

from sagetui.core.options import SIMULATED_DEVICE, option
from sagetui.core.phases import SAGE2_PHASES, PhaseSpec, k_leaf, with_smooth_k
from sagetui.runner.backends.base import (
    Backend,
    Inputs,
    NullClock,
    PhaseClock,
    segments_of,
    to_hnd,
)
from sagetui.runner.timing import SimStream

WARP_Q = 32  # Q quantization granularity (rows), as per_warp_int8 with WARPQ=32
BLOCK_K = 64  # K quantization block (rows) and the K tile the V padding rounds up to
FP8_MAX = 448.0  # e4m3's largest finite value: the V scale for pv_accum fp32+fp32
LOG2E = 1.44269504
SCORE_CHUNK = 1 << 26  # score-matrix elements per main-loop chunk (256 MiB of fp32)

# transpose_pad_permute: token m of each 16-token group goes to row PERM[m] (fused.cu).
PERM = [(m // 8) * 2 + ((m // 2) % 4) * 4 + (m % 2) for m in range(16)]


def quantize_int8_blocks(x: torch.Tensor, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per block of `rows` tokens (all of head_dim), round to nearest even.
    x: [B, H, N, D] float32 -> int8 [B, H, N, D], scale [B, H, ceil(N / rows)]."""
    b, h, n, d = x.shape
    nb = math.ceil(n / rows)
    padded = torch.nn.functional.pad(x, (0, 0, 0, nb * rows - n))
    blocks = padded.view(b, h, nb, rows, d)
    amax = blocks.abs().amax(dim=(-2, -1)).clamp_min(1e-7)  # the kernel's own epsilon
    q = torch.round(blocks * (127.0 / amax)[..., None, None]).clamp_(-127, 127)
    return q.to(torch.int8).view(b, h, nb * rows, d)[:, :, :n], amax / 127.0


def online_softmax_pv(q_i8: torch.Tensor, q_row_scale: torch.Tensor, k_i8: torch.Tensor,
                      k_deq: torch.Tensor, v: torch.Tensor, causal: bool,
                      lse_out: list[torch.Tensor] | None = None) -> torch.Tensor:
    """The kernel's main loop, one 64-key block at a time: scores in base 2, a running row
    maximum, P = exp2(S - running max) quantized to fp8 e4m3 (scaled by 448) for the P V
    product, the row sum from P before quantization, the accumulator rescaled when the maximum
    grows. q_i8, k_i8: the int8 values as float [B, H, N, D]; q_row_scale: Q's dequantization
    times sm_scale·log2(e) [B, H, Nq, 1]; k_deq [B, H, Nkv]; v [B, H, Nkv, D]. `lse_out`: a
    list that gets each row's log-sum-exp in base 2 [B, H, Nq]."""
    b, h, n_q, d = q_i8.shape
    n_kv = k_i8.shape[2]
    dev = q_i8.device  # the CPU as a rule; `--device cuda` runs it there too
    m = torch.full((b, h, n_q, 1), float("-inf"), device=dev)
    denom = torch.zeros((b, h, n_q, 1), device=dev)
    acc = torch.zeros((b, h, n_q, d), device=dev)
    rows = torch.arange(n_q, device=dev)[:, None]
    for j0 in range(0, n_kv, BLOCK_K):
        j1 = min(j0 + BLOCK_K, n_kv)
        # int8 products are exact in fp32 up to head_dim 128 (|sum| < 2^24): the kernel's int32
        # accumulation, then the per-block dequantization
        s = torch.matmul(q_i8, k_i8[:, :, j0:j1].transpose(-1, -2))
        s *= q_row_scale
        s *= k_deq[:, :, None, j0:j1]
        if causal:
            s.masked_fill_(torch.arange(j0, j1, device=dev)[None, :] > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        # rows whose keys are all masked so far keep a -inf maximum: nothing to rescale
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        alpha = torch.exp2(m - safe)
        p = torch.exp2(s - safe)
        denom = denom * alpha + p.sum(dim=-1, keepdim=True)
        p_fp8 = (p * FP8_MAX).to(torch.float8_e4m3fn).float() / FP8_MAX
        acc = acc * alpha + torch.matmul(p_fp8, v[:, :, j0:j1])
        m = m_new
    if lse_out is not None:
        lse_out.append((m + torch.log2(denom)).squeeze(-1))
    return acc / denom


def online_softmax_lse(q_i8: torch.Tensor, q_row_scale: torch.Tensor, k_i8: torch.Tensor,
                       k_deq: torch.Tensor, v: torch.Tensor,
                       causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """online_softmax_pv's output and each row's log-sum-exp of the scores it saw, in base 2
    (running maximum + log2 of the row sum: what the kernels return with return_lse)."""
    lse: list[torch.Tensor] = []
    out = online_softmax_pv(q_i8, q_row_scale, k_i8, k_deq, v, causal, lse)
    return out, lse[0]


def transpose_pad_permute(v: torch.Tensor) -> torch.Tensor:
    """V [B, H, N, D] transposed to [B, H, D, N] padded to the 64-token tile and permuted
    within 16-token groups, as the fp8 MMA layout wants it."""
    b, hkv, n_kv, d = v.shape
    padded = math.ceil(n_kv / BLOCK_K) * BLOCK_K
    vt = torch.zeros((b, hkv, d, padded), dtype=v.dtype, device=v.device)
    groups = vt.view(b, hkv, d, padded // 16, 16)
    src = torch.nn.functional.pad(v.transpose(2, 3), (0, padded - n_kv))
    groups[..., PERM] = src.reshape(b, hkv, d, padded // 16, 16)
    return vt


def scale_fp8(vt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """V scaled per channel into fp8 e4m3: the values and their scale [B, H, D]."""
    v_amax = vt.float().abs().amax(dim=-1).clamp_min(1e-7)
    v_scale = v_amax / FP8_MAX
    return (vt.float() / v_scale[..., None]).to(torch.float8_e4m3fn), v_scale


class ReferenceBackend(Backend):
    name: ClassVar[str] = "reference"
    kernel: ClassVar[str | None] = "sm89"  # it models the sm89 kernel's tiles
    needs_gpu: ClassVar[bool] = False
    description: ClassVar[str] = "SageAttention2's algorithm in plain torch on the CPU"

    @classmethod
    def check_available(cls, device: str) -> None:
        return None  # plain torch: runs anywhere

    @property
    def smooth_k(self) -> bool:
        return bool(option(self.name, self.options, "smooth_k"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # test knobs (`reference[host_us=...,device_us=...]`): a simulated device whose host and
        # device work per call are controlled, so that the timed path's host time, drained
        # blocks and back-to-back loop are tested on the CPU
        if any(k in self.options for k in SIMULATED_DEVICE):
            self.stream = SimStream()

    def run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        if self.stream is None:
            return self._run(inputs, clock)
        # on the simulated device: the host computes the output and spends host_us, then
        # enqueues each leaf's share of device_us between the clock's events
        out = self._run(inputs, NullClock())
        _spin(float(option(self.name, self.options, "host_us")) * 1e-6)
        leaves = self.leaves()
        device_s = float(option(self.name, self.options, "device_us")) * 1e-6
        clock.start()
        for leaf in leaves:
            self.stream.work(device_s / len(leaves))
            clock.mark(leaf)
        return out

    def phases(self) -> list[PhaseSpec]:
        return with_smooth_k(SAGE2_PHASES, self.smooth_k)

    def _run(self, inputs: Inputs, clock: PhaseClock) -> torch.Tensor:
        layout = inputs.layout
        q, k, v = (to_hnd(t, layout) for t in (inputs.q, inputs.k, inputs.v))
        smooth_k = self.smooth_k
        # packed sequences: each quantized and attended on its own, as sageattn_varlen's kernels
        # do; one sequence of every token otherwise
        segs = segments_of(inputs)
        clock.start()

        # in the input dtype, as sageattn does (sageattn_varlen: over every packed token); without
        # smooth_k nothing is subtracted
        km = k.mean(dim=2, keepdim=True) if smooth_k else None
        correction = None
        if self.return_lse and km is not None:  # the scores K's mean took away: q·km per row
            group = q.shape[1] // k.shape[1]
            correction = torch.matmul(q.float(), km.float().repeat_interleave(group, 1)
                                      .transpose(-1, -2)).squeeze(-1)
        clock.mark("k_mean_and_smoothing_preparation")

        qs = [quantize_int8_blocks(q[:, :, q0:q1].float(), WARP_Q) for q0, q1, _, _ in segs]
        clock.mark("q_int8_quantization")
        k_sm = k.float() - km.float() if km is not None else k.float()
        ks = [quantize_int8_blocks(k_sm[:, :, k0:k1], BLOCK_K) for _, _, k0, k1 in segs]
        clock.mark(k_leaf(smooth_k))

        vts = [transpose_pad_permute(v[:, :, k0:k1]) for _, _, k0, k1 in segs]
        clock.mark("v_transpose_pad_permute")

        vs = [scale_fp8(vt) for vt in vts]
        clock.mark("v_scale_fp8_quantization")

        started = time.perf_counter()
        parts = [self._mainloop(qi, qsc, ki, ksc, vf, vsc, k1 - k0, inputs)
                 for (qi, qsc), (ki, ksc), (vf, vsc), (_, _, k0, k1) in zip(qs, ks, vs, segs,
                                                                           strict=True)]
        out = torch.cat([o for o, _ in parts], dim=2)
        if self.return_lse:  # natural log, with the correction, as the public functions return
            lse = torch.cat([lse for _, lse in parts], dim=2) * math.log(2.0)
            self.last_lse = lse + correction * inputs.sm_scale if correction is not None else lse
        self._slow_down(started)
        clock.mark("fused_mainloop")
        return to_hnd(out.to(inputs.q.dtype), layout)  # back to the layout

    def _mainloop(self, q_i8, q_scale, k_i8, k_scale, v_fp8, v_scale, n_kv, inputs: Inputs
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """One sequence's main loop: its output [B, Hq, N, D] fp32 and each row's lse in base 2
        [B, Hq, N]."""
        h_q, h_kv = q_i8.shape[1], k_i8.shape[1]
        group = h_q // h_kv
        b, _, d, padded = v_fp8.shape
        # undo the token permutation; V dequantised per channel, [B, Hkv, N, D]
        v = v_fp8.float().view(b, h_kv, d, padded // 16, 16)[..., PERM].reshape(b, h_kv, d, padded)
        v = (v[..., :n_kv] * v_scale[..., None]).transpose(2, 3)
        k_deq = k_scale.repeat_interleave(BLOCK_K, -1)[..., :n_kv]  # [B, Hkv, N]
        q_deq = q_scale.repeat_interleave(WARP_Q, -1)[..., : q_i8.shape[2]]  # [B, Hq, N]
        out = torch.empty(q_i8.shape, dtype=torch.float32, device=q_i8.device)
        lse = torch.empty(q_i8.shape[:3], dtype=torch.float32, device=q_i8.device)
        # query heads in chunks whose score blocks stay under SCORE_CHUNK elements
        per_head = q_i8.shape[0] * q_i8.shape[2] * BLOCK_K
        step = max(1, SCORE_CHUNK // per_head)
        for h0 in range(0, h_q, step):
            hs = torch.arange(h0, min(h0 + step, h_q), device=q_i8.device)
            kv_h = hs // group
            out[:, hs], lse[:, hs] = online_softmax_lse(
                q_i8[:, hs].float(), q_deq[:, hs, :, None] * (inputs.sm_scale * LOG2E),
                k_i8[:, kv_h].float(), k_deq[:, kv_h], v[:, kv_h], inputs.causal)
        return out, lse

    def _slow_down(self, started: float) -> None:
        slowdown = float(option(self.name, self.options, "slowdown"))
        if slowdown > 1.0:
            # Test-only knob (`reference[slowdown=1.05]`): spin for (factor - 1) x this main
            # loop's own duration, so a copy of this backend is measurably and steadily slower.
            end = time.perf_counter() + (time.perf_counter() - started) * (slowdown - 1.0)
            while time.perf_counter() < end:
                pass


def _spin(seconds: float) -> None:
    """Host work of `seconds` (a sleep: the simulated device's thread runs meanwhile)."""
    if seconds > 0:
        time.sleep(seconds)
