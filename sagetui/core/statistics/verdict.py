"""Verdicts on variant speed, the A/A noise floor and adaptive stopping (drift of round medians:
drift.py; outlier flags: outliers.py).

The unit of inference is the round (docs/statistics.md): each round runs the variants interleaved
(ABBA, then BAAB), so drift that is slow compared with a round hits both variants of a round
alike and cancels in the per-round ratio. Iterations inside a round are not independent (they
share the round's clocks and temperature), so they are summarised by their median first.

Paired speedup, per round r with round medians b_r (baseline) and v_r (variant):

    d_r = ln(b_r / v_r)                       (> 0: the variant is faster)
    estimate = mean(d),  CI = mean(d) ± t(1 - alpha/2, n - 1) · sd(d) / sqrt(n)

reported in percent as (exp(x) - 1) · 100, the sign convention of the two-build report's
`speedup_vs_baseline_percent` = (baseline_p50 / variant_p50 - 1) · 100.

Decision rule (threshold T > 0, interval [lo, hi] in percent, n >= 2 rounds), checked in order:

    SAME          -T < lo and hi < T       every value the rounds allow is within ±T
    FASTER        lo > 0                   (and hi >= T: a difference that matters is plausible)
    SLOWER        hi < 0                   (and lo <= -T)
    INCONCLUSIVE  anything else, or fewer than 2 rounds: run more rounds

SAME is tested first on purpose. A consistent but tiny order effect is "significant" with few
rounds yet says nothing about the kernels: the two-build report's round p50s give the variant slower
by 0.08 % with a 95 % interval of [-0.12, -0.04] %, which a bare significance rule would call
SLOWER; here it is SAME. FASTER/SLOWER need the interval to exclude zero, so in an A/A comparison
(no true difference) they happen at most at rate 1 - confidence (5 % two-sided at the default 0.95)
when the per-round log ratios are roughly normal, and less because some of those intervals are
inside ±T. tests/test_verdict_simulation.py measures it; docs/statistics.md has the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from sagetui.core.derived import percent_of_log
from sagetui.core.statistics.intervals import t_half_width
from sagetui.core.statistics.summary import median

# 1 / Phi^-1(3/4): turns a median absolute deviation into a normal-consistent standard deviation.
MAD_TO_SD = 1.482602218505602
PAIRED_METHOD = "paired-t on log ratios of round medians"
MIN_THRESHOLD_PERCENT = 1.0


class VerdictState(StrEnum):
    FASTER = "FASTER"
    SLOWER = "SLOWER"
    SAME = "SAME"
    INCONCLUSIVE = "INCONCLUSIVE"


def json_float(x: float) -> float | None:
    # JSON has no NaN; a missing number is null.
    return x if math.isfinite(x) else None


def positive_array(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64).ravel()
    if a.size and not (np.all(np.isfinite(a)) and np.all(a > 0)):
        raise ValueError(f"{what} must be finite and positive")
    return a


@dataclass(frozen=True)
class Verdict:
    state: VerdictState
    estimate_percent: float
    ci_low_percent: float
    ci_high_percent: float
    threshold_percent: float
    confidence: float
    rounds: int
    method: str = PAIRED_METHOD

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["state"] = str(self.state)
        for k in ("estimate_percent", "ci_low_percent", "ci_high_percent"):
            d[k] = json_float(d[k])
        return d


def decide(ci_low_percent: float, ci_high_percent: float, threshold_percent: float) -> VerdictState:
    """The four-state rule of the module docstring, on an interval already in percent."""
    if not (math.isfinite(ci_low_percent) and math.isfinite(ci_high_percent)):
        return VerdictState.INCONCLUSIVE
    t = threshold_percent
    if -t < ci_low_percent and ci_high_percent < t:
        return VerdictState.SAME
    if ci_low_percent > 0:
        return VerdictState.FASTER
    if ci_high_percent < 0:
        return VerdictState.SLOWER
    return VerdictState.INCONCLUSIVE


def paired_speedup(
    baseline_round_medians: Sequence[float] | np.ndarray,
    variant_round_medians: Sequence[float] | np.ndarray,
    *,
    threshold_percent: float,
    confidence: float = 0.95,
) -> Verdict:
    """Paired speedup of a variant over the baseline from per-round medians (seconds).

    Round r of both lists must come from the same interleaved round. Positive = variant faster.
    """
    if not (math.isfinite(threshold_percent) and threshold_percent > 0):
        raise ValueError("threshold_percent must be finite and > 0")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    b = positive_array(baseline_round_medians, "baseline round medians")
    v = positive_array(variant_round_medians, "variant round medians")
    if b.size != v.size:
        raise ValueError(f"paired rounds differ in number: {b.size} vs {v.size}")
    n = int(b.size)
    nan = float("nan")
    if n == 0:
        return Verdict(VerdictState.INCONCLUSIVE, nan, nan, nan, threshold_percent, confidence, 0)
    d = np.log(b) - np.log(v)
    mean = float(d.mean())
    if n < 2:
        # One round has no spread to judge it by: report it, claim nothing.
        return Verdict(VerdictState.INCONCLUSIVE, percent_of_log(mean), nan, nan,
                       threshold_percent, confidence, n)
    half = t_half_width(d, confidence)
    assert half is not None  # n >= 2
    lo, hi = percent_of_log(mean - half), percent_of_log(mean + half)
    return Verdict(decide(lo, hi, threshold_percent), percent_of_log(mean), lo, hi,
                   threshold_percent, confidence, n)


def default_threshold_percent(noise_floor_percent: float | None) -> float:
    """max(1 %, 2 x the A/A noise floor): below that, a difference is not worth a claim."""
    if noise_floor_percent is None or not math.isfinite(noise_floor_percent):
        return MIN_THRESHOLD_PERCENT
    return max(MIN_THRESHOLD_PERCENT, 2.0 * noise_floor_percent)


def noise_floor_percent(
    round_medians_a: Sequence[float] | np.ndarray, round_medians_b: Sequence[float] | np.ndarray
) -> float:
    """Round-to-round paired noise of an A/A calibration (the baseline against itself), in %.

    The robust SD of one round's log ratio d_r = ln(a_r / b_r) about zero:
    1.4826 · median(|d_r|), as a percentage. About zero, not about the median of d, because in
    an A/A run any systematic offset (say, a slot-position effect) is noise too. One round-sized
    SD, not an SD of the mean: it does not shrink with more rounds.
    """
    a = positive_array(round_medians_a, "round medians a")
    b = positive_array(round_medians_b, "round medians b")
    if a.size != b.size or a.size == 0:
        raise ValueError("need equally many rounds (at least one) on both sides")
    d = np.log(a) - np.log(b)
    return percent_of_log(MAD_TO_SD * median(np.abs(d)))


def ci_width_percent(v: Verdict) -> float:
    """Full width of the verdict's interval in percentage points (inf when there is none)."""
    w = v.ci_high_percent - v.ci_low_percent
    return w if math.isfinite(w) else math.inf


def should_stop(verdicts: Iterable[Verdict], target_ci_percent: float) -> bool:
    """`--until-ci`: stop when every verdict's full interval width is below the target."""
    vs = list(verdicts)
    return bool(vs) and all(ci_width_percent(v) < target_ci_percent for v in vs)
