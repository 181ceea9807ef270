"""A workload's total attention time per variant, its speedup against the baseline and the
interval of that speedup (docs/statistics.md, "A workload's total").

    T_v = sum over calls c of w_c · p50_{v,c}          (w_c: how often the program made call c)
    speedup = (T_b / T_v - 1) · 100                       (derived.speedup_percent, as a run's)

The interval is the delta method on L = ln(T_b / T_v), paired by round within each call. Every
call is its own point, measured in its own interleaved rounds (the round is the unit of
inference, as in verdict.py), and the calls are measured apart from one another, so their
errors add. L's gradient is w_c / T_b for the baseline's p50 of call c and -w_c / T_v for the
variant's; with round medians b_{c,r}, v_{c,r} standing in for those p50s, round r of call c
contributes

    z_{c,r} = w_c · (b_{c,r} / T_b - v_{c,r} / T_v)

and one round's drift, common to both variants, largely cancels inside it, as in the paired
verdict. Then

    se² = Σ_c s_c²,  s_c² = var(z_c) / n_c                    (n_c: call c's paired rounds)
    df  = se⁴ / Σ_c (s_c⁴ / (n_c - 1))                         (Welch-Satterthwaite)
    interval = L ± t(1 - α/2, df) · se, in percent as (exp(x) - 1) · 100

centred on the p50s' total (the figure shown), not on the round medians'. Why not a bootstrap:
`sagetui check` recomputes the interval from the report's samples, and this needs no random
stream (numpy's may change between versions). A call with under two paired rounds has no
spread to judge by: then no interval, the totals alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sagetui.core.derived import percent_of_log, speedup_percent
from sagetui.core.statistics.intervals import CONFIDENCE, welch_half_width
from sagetui.core.statistics.verdict import (
    Verdict,
    VerdictState,
    decide,
    json_float,
)

TOTAL_METHOD = "delta method on ln(total ratio), paired by round within each call " \
               "(Welch-Satterthwaite df)"


@dataclass(frozen=True)
class CallTimes:
    """One call of the workload as both variants measured it: its weight, each variant's p50
    and round medians (seconds; round r of one is round r of the other)."""

    weight: float
    baseline_p50: float
    variant_p50: float
    baseline_rounds: Sequence[float]
    variant_rounds: Sequence[float]


@dataclass(frozen=True)
class TotalSpeedup:
    baseline_s: float
    variant_s: float
    speedup_percent: float
    ci_low_percent: float | None
    ci_high_percent: float | None
    df: float | None


def total_seconds(weighted_p50s: Iterable[tuple[float, float]]) -> float:
    """Σ weight · p50 over (weight, p50) pairs: a variant's total attention time."""
    return math.fsum(w * p for w, p in weighted_p50s)


def total_speedup(calls: Sequence[CallTimes], confidence: float = CONFIDENCE) -> TotalSpeedup:
    """The module docstring's speedup of the variant's total over the baseline's, and its
    interval (None, None when a call has under two paired rounds)."""
    tb = total_seconds((c.weight, c.baseline_p50) for c in calls)
    tv = total_seconds((c.weight, c.variant_p50) for c in calls)
    centre = math.log(tb / tv)
    parts = []  # (s_c², n_c) per call
    for c in calls:
        n = min(len(c.baseline_rounds), len(c.variant_rounds))
        if n < 2:
            return TotalSpeedup(tb, tv, speedup_percent(tb, tv), None, None, None)
        z = c.weight * (np.asarray(c.baseline_rounds[:n], dtype=np.float64) / tb
                        - np.asarray(c.variant_rounds[:n], dtype=np.float64) / tv)
        parts.append((float(z.var(ddof=1)) / n, n))
    welch = welch_half_width(parts, confidence)
    if welch is None:  # every round alike: the interval is the estimate
        return TotalSpeedup(tb, tv, speedup_percent(tb, tv), percent_of_log(centre),
                            percent_of_log(centre), None)
    half, df = welch
    return TotalSpeedup(tb, tv, speedup_percent(tb, tv), json_float(percent_of_log(centre - half)),
                        json_float(percent_of_log(centre + half)), df)


UNPAIRED_TOTAL_METHOD = "delta method on ln(total ratio) of two replays (unpaired: Welch-" \
                        "Satterthwaite df over both replays' calls)"


@dataclass(frozen=True)
class ReplayedCallTimes:
    """One call of a workload as one replay measured one variant: its weight, p50 and round
    medians (seconds)."""

    weight: float
    p50: float
    rounds: Sequence[float]


def unpaired_total_speedup(a: Sequence[ReplayedCallTimes], b: Sequence[ReplayedCallTimes], *,
                           threshold_percent: float, confidence: float = CONFIDENCE) -> Verdict:
    """B's total over A's, two replays of one workload (`sagetui compare`): the speedup of
    T_b against T_a (+ = B faster) and its interval, as total_speedup's delta method on
    L = ln(T_a / T_b), but unpaired (the replays' rounds share nothing; unpaired.py): each
    call of each replay adds its own variance,

        se² = Σ_c w_c² (var(a_c) / (n_a,c T_a²) + var(b_c) / (n_b,c T_b²))

    with Welch-Satterthwaite df over those parts; judged by verdict.decide at the threshold.
    A call with under two rounds on a side: the estimate alone, INCONCLUSIVE."""
    ta = total_seconds((c.weight, c.p50) for c in a)
    tb = total_seconds((c.weight, c.p50) for c in b)
    centre = math.log(ta / tb)
    nan = float("nan")
    parts = []  # (s², n) per call and replay
    for calls, total in ((a, ta), (b, tb)):
        for c in calls:
            n = len(c.rounds)
            if n < 2:
                return Verdict(VerdictState.INCONCLUSIVE, percent_of_log(centre), nan, nan,
                               threshold_percent, confidence, n, UNPAIRED_TOTAL_METHOD)
            r = np.asarray(c.rounds, dtype=np.float64) * (c.weight / total)
            parts.append((float(r.var(ddof=1)) / n, n))
    rounds = min(n for _, n in parts) if parts else 0
    welch = welch_half_width(parts, confidence)
    half = welch[0] if welch is not None else 0.0
    lo, hi = percent_of_log(centre - half), percent_of_log(centre + half)
    return Verdict(decide(lo, hi, threshold_percent), percent_of_log(centre), lo, hi,
                   threshold_percent, confidence, rounds, UNPAIRED_TOTAL_METHOD)
