"""Accuracy against fp32 attention of the same inputs, outside the timed regions.

The exact reference is computed once per run on the inputs' device, one query head and one
block of query rows at a time (the score block stays under CHUNK_ELEMENTS floats: 1 GiB), with
TF32 off, and kept in fp32; every variant's first output is then compared with it head by head,
the sums accumulated in float64 (core.accuracy defines the metrics), and each head's metrics
are kept besides the whole output's. At the reference shape (1 x 37,810 x 56 x 128) the
reference is 1.1 GB and covers every row and head. When it would not fit in
REFERENCE_BUDGET_BYTES, an evenly spaced subset of query heads is used, all rows of each, and
the report names those heads. Packed sequences (`--seqlens`) attend each to itself. Each row's
fp32 log-sum-exp of the scores is kept too, for return_lse's figure.

On a GPU the reference is started at set-up, behind the inputs, on a stream of its own
(start_reference): its kernels are enqueued in milliseconds and the GPU computes it (1.5-2 s at
the reference shape) while the host loads the variants, which needs no GPU. It is waited for
before anything is timed, and kept through the rounds where it needs at most 1/EARLY_SHARE of
the free memory; elsewhere it is computed after the last round, as on the CPU, where it would
hold up the first round for all its time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from sagetui.core import accuracy
from sagetui.runner.backends.base import Inputs, segments_of, to_hnd

CHUNK_ELEMENTS = 1 << 28  # fp32 scores per block: 1 GiB
REFERENCE_BUDGET_BYTES = 8 << 30
EARLY_SHARE = 4


def plan_heads(h_q: int, bytes_per_head: int, budget: int = REFERENCE_BUDGET_BYTES) -> list[int]:
    """Every query head when the reference fits in `budget`, else an evenly spaced subset."""
    fit = max(1, budget // max(1, bytes_per_head))
    if fit >= h_q:
        return list(range(h_q))
    step = h_q / fit
    return sorted({int(i * step) for i in range(fit)})


@contextlib.contextmanager
def _full_fp32() -> Iterator[None]:
    old = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old[0]
        torch.set_float32_matmul_precision(old[1])


def _bytes_per_head(inputs: Inputs) -> int:
    """The reference's fp32 output and log-sum-exp of one query head."""
    b, _, n_q, d = to_hnd(inputs.q, inputs.layout).shape
    return b * n_q * (d + 1) * 4


def held_bytes(inputs: Inputs) -> int:
    """What computing the reference of `inputs` holds at once: its output and log-sum-exp, one
    block of scores, and one head's k and [v, 1] in fp32."""
    b, _, n_kv, d = to_hnd(inputs.k, inputs.layout).shape
    h_q = to_hnd(inputs.q, inputs.layout).shape[1]
    per_head = _bytes_per_head(inputs)
    return len(plan_heads(h_q, per_head)) * per_head + CHUNK_ELEMENTS * 4 + \
        b * n_kv * (2 * d + 1) * 4


@dataclass(frozen=True)
class StartedReference:
    """A reference whose kernels are enqueued on a stream of their own; `done` is recorded
    behind them."""

    reference: ExactReference
    done: torch.cuda.Event

    def wait(self) -> ExactReference:
        self.done.synchronize()
        return self.reference


def start_reference(inputs: Inputs) -> StartedReference | None:
    """The reference of `inputs` (on a GPU) enqueued on a stream of its own, behind the work
    that made the inputs, or None where it would need more than 1/EARLY_SHARE of the free
    memory (or that memory could not be had): it is computed late then."""
    device = inputs.q.device
    free, _ = torch.cuda.mem_get_info(device)
    if held_bytes(inputs) * EARLY_SHARE > free:
        return None
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))  # behind the inputs' making
    try:
        with torch.cuda.stream(side):
            reference = ExactReference(inputs)
            done = torch.cuda.Event()
            done.record(side)
    except torch.OutOfMemoryError:
        return None
    return StartedReference(reference, done)


class ExactReference:
    """fp32 attention of `inputs` for `heads` (HND, [B, len(heads), N, D])."""

    def __init__(self, inputs: Inputs) -> None:
        q = to_hnd(inputs.q, inputs.layout)
        b, h_q, n_q, d = q.shape
        self.heads = plan_heads(h_q, _bytes_per_head(inputs))
        self.all_heads = len(self.heads) == h_q
        self.lse = torch.empty((b, len(self.heads), n_q), dtype=torch.float32, device=q.device)
        self.out = self._compute(inputs)

    def _compute(self, inputs: Inputs) -> torch.Tensor:
        """Each sequence (packed ones each on its own: block diagonal) in blocks of rows."""
        q, k, v = (to_hnd(t, inputs.layout) for t in (inputs.q, inputs.k, inputs.v))
        b, h_q, n_q, d = q.shape
        group = h_q // k.shape[1]
        out = torch.empty((b, len(self.heads), n_q, d), dtype=torch.float32, device=q.device)
        with _full_fp32():
            for q0, q1, k0, k1 in segments_of(inputs):
                rows = max(1, CHUNK_ELEMENTS // max(1, b * (k1 - k0)))
                for i, h in enumerate(self.heads):
                    kh, vh = k[:, h // group, k0:k1].float(), v[:, h // group, k0:k1].float()
                    # v with a column of ones: one product gives the output and the row sums
                    vh = torch.cat([vh, torch.ones_like(vh[..., :1])], dim=-1)
                    for r0 in range(q0, q1, rows):
                        r1 = min(r0 + rows, q1)
                        # the scale on the rows of q, not on the scores: one pass less over
                        # the block (5.7 GB a head at the reference shape)
                        s = torch.matmul(q[:, h, r0:r1].float() * inputs.sm_scale,
                                         kh.transpose(-1, -2))
                        if inputs.causal:  # top-left aligned in each sequence, as SageAttention
                            idx = torch.arange(r0 - q0, r1 - q0, device=q.device)
                            cols = torch.arange(k1 - k0, device=q.device)
                            s.masked_fill_(cols[None, :] > idx[:, None], float("-inf"))
                        # softmax by hand, in place: its max, exp(s - max) over the block
                        # itself, and one product with [v, 1] for the output and the row
                        # sums; 1/sum applied to the (small) output, and the log-sum-exp from
                        # max and sum. Eight passes over the block where logsumexp and softmax
                        # took about thirteen (each pass 320 GB at the reference shape).
                        m = s.amax(dim=-1, keepdim=True)
                        s.sub_(m).exp_()
                        o = torch.matmul(s, vh)
                        total = o[..., -1:]
                        self.lse[:, i, r0:r1] = (m + total.log()).squeeze(-1)
                        out[:, i, r0:r1] = o[..., :-1] / total
                        del s, m, o, total
        return out

    def compare(self, output: torch.Tensor, layout: str,
                lse: torch.Tensor | None = None) -> dict[str, Any]:
        """The metrics of `output` (in `layout`) against this reference, head by head: each
        head's own, the whole output's from their sums, and the worst heads; with `lse`
        (return_lse) its largest difference from fp32's log-sum-exp."""
        o = to_hnd(output, layout)
        rows = []
        for i, h in enumerate(self.heads):
            oh, rh = o[:, h].float(), self.out[:, i]
            diff = oh - rh
            sums = {"dot": (oh * rh).sum(), "out_sq": (oh * oh).sum(), "ref_sq": (rh * rh).sum(),
                    "abs_diff": diff.abs().sum(), "ref_abs": rh.abs().sum(),
                    "sq_diff": (diff * diff).sum()}
            rows.append(torch.stack([*(sums[k] for k in accuracy.SUMS),
                                     diff.abs().max()]).double())
        # every head's sums in one copy to the host: one synchronisation, not seven a head
        table = torch.stack(rows).cpu().tolist()
        per_head = []
        for h, row in zip(self.heads, table, strict=True):
            per_head.append(accuracy.head_entry(h, dict(zip(accuracy.SUMS, row[:-1], strict=True)),
                                               row[-1], self.out[:, 0].numel()))
        result: dict[str, Any] = accuracy.combine(per_head)
        if lse is not None:  # [B, Hq, Nq], natural log: the compared heads' rows
            d = (lse[:, self.heads].float() - self.lse).abs().max()
            result["lse_max_abs_error"] = float(d.item())
        result.update(reference="fp32 attention of the same inputs (TF32 off)",
                      rows="all", elements=self.out.numel(),
                      heads="all" if self.all_heads else list(self.heads), per_head=per_head,
                      worst_heads=accuracy.worst_heads({e["head"]: e["relative_l1"]
                                                   for e in per_head}))
        return result
