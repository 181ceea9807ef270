"""Latency summaries with the reference reports' fields.

Percentiles use numpy's default "linear" method (Hyndman & Fan type 7: the value at rank
(n - 1) * p, interpolated between neighbours). The phase-breakdown report's own p90/p95/p99 fit that
method exactly, so summaries written here and there mean the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SUMMARY_FIELDS = ("count", "mean_s", "p50_s", "p90_s", "p95_s", "p99_s", "min_s", "max_s")
PERCENTILES = {"p50_s": 50, "p90_s": 90, "p95_s": 95, "p99_s": 99}


def summarize(samples: Sequence[float] | np.ndarray) -> dict[str, float | int]:
    """count, mean, p50, p90, p95, p99, min and max of latencies in seconds."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        raise ValueError("cannot summarise zero samples")
    q = np.percentile(x, list(PERCENTILES.values()), method="linear")
    out: dict[str, float | int] = {"count": int(x.size), "mean_s": float(x.mean())}
    out.update({k: float(v) for k, v in zip(PERCENTILES, q, strict=True)})
    out["min_s"] = float(x.min())
    out["max_s"] = float(x.max())
    return out


def p50(samples: Sequence[float] | np.ndarray) -> float:
    """The p50 that summarize() reports, alone."""
    return float(np.percentile(np.asarray(samples, dtype=np.float64), 50, method="linear"))


def merge_round_summaries(rounds: Sequence[dict]) -> dict[str, float | int]:
    """The overall count, mean, min and max implied by per-round summaries.

    Percentiles cannot be recovered from summaries; they need the raw samples.
    """
    counts = np.array([r["count"] for r in rounds], dtype=np.float64)
    means = np.array([r["mean_s"] for r in rounds], dtype=np.float64)
    return {
        "count": int(counts.sum()),
        "mean_s": float((counts * means).sum() / counts.sum()),
        "min_s": float(min(r["min_s"] for r in rounds)),
        "max_s": float(max(r["max_s"] for r in rounds)),
    }
