"""Accuracy of an attention output against fp32 attention of the same inputs: the metrics of
SageAttention's papers, defined once here.

- cosine similarity: sum(o r) / sqrt(sum(o^2) sum(r^2))
- relative L1: sum|o - r| / sum|r|
- RMSE: sqrt(mean((o - r)^2))
- max absolute error: max|o - r|

The runner computes them on the GPU in chunks (runner/exact_reference.py): it accumulates the sums
below, chunk by chunk, in float64 on the host, and `from_sums` turns them into the metrics, so
that the chunked and the whole-array (`of_arrays`, numpy) computations share these formulas.

Per query head: each head's own sums give its metrics (`head_entry`), the heads'
sums added in head order give the whole output's (`combine`), and `worst_heads` names the few
worst; the report keeps each head's sums, so that `check` recomputes all of it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

SUMS = ("dot", "out_sq", "ref_sq", "abs_diff", "ref_abs", "sq_diff")


def from_sums(sums: dict[str, float], max_abs: float, count: int) -> dict[str, float]:
    denom = math.sqrt(sums["out_sq"] * sums["ref_sq"])
    return {
        "cosine_similarity": sums["dot"] / denom if denom > 0 else float("nan"),
        "relative_l1": sums["abs_diff"] / sums["ref_abs"] if sums["ref_abs"] > 0
        else float("nan"),
        "rmse": math.sqrt(sums["sq_diff"] / count) if count else float("nan"),
        "max_abs_error": max_abs,
    }


# how many of the worst heads a report names
WORST_HEADS = 3


def head_entry(head: int, sums: dict[str, float], max_abs: float, count: int) -> dict[str, Any]:
    """One head's report entry (report/model.HeadAccuracy): its metrics and the sums they
    come from."""
    return {"head": head, **from_sums(sums, max_abs, count), "elements": count,
            "sums": {k: sums[k] for k in SUMS}}


def combine(heads: list[dict[str, Any]]) -> dict[str, float]:
    """The whole output's metrics from its heads' entries: their sums added in head order (the
    order the runner adds them in, so that the floats agree to the last bit), the largest of
    their max errors (a NaN max error surfaces as Python's max meets it, as it always has)."""
    total = dict.fromkeys(SUMS, 0.0)
    max_abs = 0.0
    for h in heads:
        for key in SUMS:
            total[key] += h["sums"][key]
        max_abs = max(max_abs, h["max_abs_error"])
    return from_sums(total, max_abs, sum(h["elements"] for h in heads))


def worst_heads(relative_l1: dict[int, float | None], n: int = WORST_HEADS) -> list[int]:
    """The `n` heads with the largest relative L1, worst first; a head whose error is not
    finite (NaN, or None once a report has carried it) is worse than any, ties go to the lower
    head. Relative L1 rather than cosine similarity: it is SageAttention's headline error, it
    reads as a percent, and it sees an output that is off by a scale factor, which cosine
    similarity (blind to scale, and within 1e-3 of 1 on nearly every head) does not."""
    def badness(item: tuple[int, float | None]) -> tuple[bool, float, int]:
        head, x = item
        return (*error_rank(x), -head)

    return [h for h, _ in sorted(relative_l1.items(), key=badness, reverse=True)[:n]]


def error_rank(x: float | None) -> tuple[bool, float]:
    """How bad an error is, to rank by (larger: worse): one that is not finite (NaN, or None
    once a report has carried it) is worse than any; the rule of the worst head and of a
    workload's least accurate call and worst head."""
    value = x if x is not None and math.isfinite(x) else None
    return (value is None, value or 0.0)


def sums_of(out: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    o, r = out.astype(np.float64), ref.astype(np.float64)
    d = o - r
    return {"dot": float((o * r).sum()), "out_sq": float((o * o).sum()),
            "ref_sq": float((r * r).sum()), "abs_diff": float(np.abs(d).sum()),
            "ref_abs": float(np.abs(r).sum()), "sq_diff": float((d * d).sum())}


def of_arrays(out: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """The metrics of two whole arrays (numpy; the definition the chunked path is tested
    against)."""
    d = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    return from_sums(sums_of(out, ref), float(d.max()) if d.size else 0.0, out.size)


def problems(acc: dict[str, Any]) -> list[str]:
    """What is out of range or inconsistent in a report's accuracy block (for `check`)."""
    out = []
    cos = acc.get("cosine_similarity")
    if cos is not None and not -1.0 - 1e-9 <= cos <= 1.0 + 1e-9:
        out.append(f"cosine_similarity {cos} is outside [-1, 1]")
    for key in ("relative_l1", "rmse", "max_abs_error"):
        v = acc.get(key)
        if v is not None and v < 0:
            out.append(f"{key} {v} is negative")
    rmse, mx = acc.get("rmse"), acc.get("max_abs_error")
    if rmse is not None and mx is not None and rmse > mx * (1 + 1e-9) + 1e-12:
        # a root mean square never exceeds the largest of its terms
        out.append(f"rmse {rmse} exceeds max_abs_error {mx}")
    return out


__all__ = ["SUMS", "WORST_HEADS", "combine", "from_sums", "head_entry", "of_arrays",
           "problems", "sums_of", "worst_heads"]
