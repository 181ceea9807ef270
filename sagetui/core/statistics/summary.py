"""Latency summaries with the reference reports' fields, and the one median and the one
percentile rule every figure is computed with.

Percentiles use numpy's default "linear" method (Hyndman & Fan type 7: the value at rank
(n - 1) * p, interpolated between neighbours): `percentiles` is the one place they are taken.
The phase-breakdown report's own p90/p95/p99 fit that method exactly, so summaries written here and
there mean the same thing.

A round's median (the unit of inference, docs/statistics.md) is `median`: np.median, the mean
of the two middle samples of an even count. It is the linear p50 up to the last bit of a
float (numpy's percentile interpolates as b - (b - a) / 2, the median averages), which is why
the round medians the verdicts pair keep their own function rather than being read off a
round's summary. Only completed rounds count: a round being measured is in no figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

SUMMARY_FIELDS = ("count", "mean_s", "p50_s", "p90_s", "p95_s", "p99_s", "min_s", "max_s")
PERCENTILES = {"p50_s": 50, "p90_s": 90, "p95_s": 95, "p99_s": 99}


def median(values: Sequence[float] | np.ndarray) -> float:
    """The one median: of a round's samples (its round median), of round medians."""
    return float(np.median(np.asarray(values, dtype=np.float64)))


def round_medians(rounds: Iterable[Sequence[float] | np.ndarray]) -> list[float]:
    """Each non-empty round's median, in order (a phase's raw samples per round)."""
    return [median(r) for r in rounds if len(r)]


def medians_by_round(values: np.ndarray, bounds: Sequence[int] | np.ndarray) -> np.ndarray:
    """`median` of each round values[bounds[i]:bounds[i + 1]], bit for bit, the rounds of one
    length taken at once (nan for an empty one): a run of 10-iteration rounds has 50,000 of
    them a variant at 10^6 samples, and a np.median each took the console's phase table 12 s
    a tick."""
    bounds = np.asarray(bounds, dtype=np.int64)
    starts, lengths = bounds[:-1], np.diff(bounds)
    out = np.full(len(starts), np.nan)
    for n in np.unique(lengths[lengths > 0]):
        rows = np.flatnonzero(lengths == n)
        out[rows] = np.median(np.asarray(values, dtype=np.float64)[
            starts[rows, None] + np.arange(n)], axis=1)
    return out


def percentiles(samples: Sequence[float] | np.ndarray, qs: Sequence[float]) -> list[float]:
    """The percentiles `qs` (0-100) of the samples by the one rule, numpy's "linear"."""
    x = np.asarray(samples, dtype=np.float64)
    return [float(v) for v in np.percentile(x, list(qs), method="linear")]


def summarize(samples: Sequence[float] | np.ndarray) -> dict[str, float | int]:
    """count, mean, p50, p90, p95, p99, min and max of latencies in seconds."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        raise ValueError("cannot summarise zero samples")
    q = percentiles(x, list(PERCENTILES.values()))
    out: dict[str, float | int] = {"count": int(x.size), "mean_s": float(x.mean())}
    out.update(dict(zip(PERCENTILES, q, strict=True)))
    out["min_s"] = float(x.min())
    out["max_s"] = float(x.max())
    return out


def p50(samples: Sequence[float] | np.ndarray) -> float:
    """The p50 that summarize() reports, alone."""
    return percentiles(samples, (50,))[0]


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
