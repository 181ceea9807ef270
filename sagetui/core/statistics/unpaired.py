"""The verdict of one variant across two separate runs (`sagetui compare`, B against A).

Within a run the variants' rounds are interleaved, so round r of A and round r of B share
their drift and are paired (verdict.paired_speedup). Two reports are two runs: their round r
were measured minutes or days apart, so nothing pairs them. The comparison is then of two
independent samples of round medians, on logs (times are skewed and compared as ratios):

    d = mean(ln a) - mean(ln b)                       (> 0: B is faster)
    se = sqrt(s_a^2 / n_a + s_b^2 / n_b)
    df = se^4 / ((s_a^2/n_a)^2 / (n_a - 1) + (s_b^2/n_b)^2 / (n_b - 1))   (Welch-Satterthwaite)
    CI = d ± t(1 - alpha/2, df) · se

in percent as (exp(x) - 1) · 100, the compare table's `faster %` sign, judged by verdict.decide
with the SAME threshold. Welch, not Student's pooled variance: two runs need not be equally
noisy (another day, another load), and Welch does not assume they are.

What it cannot see: a shift of a whole run (clocks pinned differently, another GPU of the
model, a warmer room) moves every round of that run alike, so it looks like a difference
between the variants. The interval is of the rounds' noise only; the threshold (at least
1 %, 2 x the noise floor) is what keeps a small run-to-run shift from being called a change,
and an A/A of two runs of one build says how large that shift is on a machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sagetui.core.derived import percent_of_log
from sagetui.core.statistics.intervals import CONFIDENCE, welch_half_width
from sagetui.core.statistics.verdict import (
    Verdict,
    VerdictState,
    decide,
    positive_array,
)

UNPAIRED_METHOD = "Welch t on log round medians of two runs (unpaired)"


def unpaired_speedup(a_round_medians: Sequence[float] | np.ndarray,
                     b_round_medians: Sequence[float] | np.ndarray, *,
                     threshold_percent: float, confidence: float = CONFIDENCE) -> Verdict:
    """B's speedup over A from each run's round medians (seconds); positive = B faster.
    `rounds` is the smaller side's count (what limits the interval). Under two rounds on a
    side there is no spread to judge by: the estimate alone, INCONCLUSIVE."""
    if not (math.isfinite(threshold_percent) and threshold_percent > 0):
        raise ValueError("threshold_percent must be finite and > 0")
    la = np.log(positive_array(a_round_medians, "A's round medians"))
    lb = np.log(positive_array(b_round_medians, "B's round medians"))
    na, nb = int(la.size), int(lb.size)
    nan = float("nan")
    if not na or not nb:
        return Verdict(VerdictState.INCONCLUSIVE, nan, nan, nan, threshold_percent, confidence,
                       0, UNPAIRED_METHOD)
    d = float(la.mean() - lb.mean())
    if na < 2 or nb < 2:
        return Verdict(VerdictState.INCONCLUSIVE, percent_of_log(d), nan, nan, threshold_percent,
                       confidence, min(na, nb), UNPAIRED_METHOD)
    welch = welch_half_width([(float(la.var(ddof=1)) / na, na),
                              (float(lb.var(ddof=1)) / nb, nb)], confidence)
    half = welch[0] if welch is not None else 0.0
    lo, hi = percent_of_log(d - half), percent_of_log(d + half)
    return Verdict(decide(lo, hi, threshold_percent), percent_of_log(d), lo, hi, threshold_percent,
                   confidence, min(na, nb), UNPAIRED_METHOD)
