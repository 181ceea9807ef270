"""Verdicts on variant speed, drift of round medians, outlier flags and adaptive stopping.

The unit of inference is the round (DESIGN.md §4): each round runs the variants interleaved
(ABBA, then BAAB), so drift that is slow compared with a round hits both variants of a round
alike and cancels in the per-round ratio. Iterations inside a round are not independent (they
share the round's clocks and temperature), so they are summarised by their median first.

Paired speedup, per round r with round medians b_r (baseline) and v_r (variant):

    d_r = ln(b_r / v_r)                       (> 0: the variant is faster)
    estimate = mean(d),  CI = mean(d) ± t(1 - alpha/2, n - 1) · sd(d) / sqrt(n)

reported in percent as (exp(x) - 1) · 100, the sign convention of report 001's
`speedup_vs_baseline_percent` = (baseline_p50 / variant_p50 - 1) · 100.

Decision rule (threshold T > 0, interval [lo, hi] in percent, n >= 2 rounds), checked in order:

    SAME          -T < lo and hi < T       every value the rounds allow is within ±T
    FASTER        lo > 0                   (and hi >= T: a difference that matters is plausible)
    SLOWER        hi < 0                   (and lo <= -T)
    INCONCLUSIVE  anything else, or fewer than 2 rounds: run more rounds

SAME is tested first on purpose. A consistent but tiny order effect is "significant" with few
rounds yet says nothing about the kernels: report 001's round p50s give the variant slower by
0.08 % with a 95 % interval of [-0.12, -0.04] %, which a bare significance rule would call
SLOWER; here it is SAME. FASTER/SLOWER need the interval to exclude zero, so in an A/A
comparison (no true difference) they happen at most at rate 1 - confidence (5 % two-sided at
the default 0.95) when the per-round log ratios are roughly normal, and less because some of
those intervals are inside ±T. tests/test_verdict_simulation.py measures it; docs/statistics.md
has the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any

import numpy as np

# 1 / Phi^-1(3/4): turns a median absolute deviation into a normal-consistent standard deviation.
MAD_TO_SD = 1.482602218505602
PAIRED_METHOD = "paired-t on log ratios of round medians"
MIN_THRESHOLD_PERCENT = 1.0
# Drift is flagged only when its fitted size exceeds this many per-round noise SDs.
DRIFT_NOISE_FACTOR = 2.0
# ... and the round medians trend (Mann-Kendall, two-sided) at this level.
DRIFT_TREND_ALPHA = 0.05


class VerdictState(StrEnum):
    FASTER = "FASTER"
    SLOWER = "SLOWER"
    SAME = "SAME"
    INCONCLUSIVE = "INCONCLUSIVE"


def _pct(log_ratio: float) -> float:
    return math.expm1(log_ratio) * 100.0


def _json_float(x: float) -> float | None:
    # JSON has no NaN; a missing number is null.
    return x if math.isfinite(x) else None


def _positive_array(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64).ravel()
    if a.size and not (np.all(np.isfinite(a)) and np.all(a > 0)):
        raise ValueError(f"{what} must be finite and positive")
    return a


# scipy.special, not scipy.stats: importing scipy.stats costs the console 60 MB resident (its
# distributions, optimize, linalg) for one quantile, one median of slopes and one p-value;
# scipy.special costs 13 MB. tests/test_verdict_units.py checks all three against scipy.stats.
@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """Student t quantile (scipy.stats.t.ppf is this function); cached because adaptive
    stopping asks for the same few repeatedly."""
    from scipy.special import stdtrit  # lazy: scipy costs startup time the UI does not want

    return float(stdtrit(df, p))


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
            d[k] = _json_float(d[k])
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
    b = _positive_array(baseline_round_medians, "baseline round medians")
    v = _positive_array(variant_round_medians, "variant round medians")
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
        return Verdict(
            VerdictState.INCONCLUSIVE, _pct(mean), nan, nan, threshold_percent, confidence, n
        )
    half = t_quantile(0.5 + confidence / 2, n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
    lo, hi = _pct(mean - half), _pct(mean + half)
    return Verdict(
        decide(lo, hi, threshold_percent), _pct(mean), lo, hi, threshold_percent, confidence, n
    )


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
    a = _positive_array(round_medians_a, "round medians a")
    b = _positive_array(round_medians_b, "round medians b")
    if a.size != b.size or a.size == 0:
        raise ValueError("need equally many rounds (at least one) on both sides")
    d = np.log(a) - np.log(b)
    return _pct(MAD_TO_SD * float(np.median(np.abs(d))))


@dataclass(frozen=True)
class Drift:
    """Drift of one variant's round medians over a run.

    flagged rule: |fitted change over the run| > 2 x noise_percent AND the round medians trend
    (Mann-Kendall two-sided p < 0.05, exact for small runs). The first part says the drift is
    bigger than round-to-round noise; the second that it is a trend, not a noisy round or two.
    Mann-Kendall cannot reach p < 0.05 below 5 rounds, so shorter runs are never flagged.
    """

    slope_percent_per_round: float  # Theil-Sen slope / median of the round medians
    run_change_percent: float  # fitted change over the run: slope x (rounds - 1)
    first_to_last_percent: float  # observed: (last / first - 1) x 100
    noise_percent: float  # per-round noise it is compared with (NaN: unknown)
    noise_source: str  # "given", "residuals" or "unavailable"
    trend_p_value: float  # Mann-Kendall (Kendall's tau against round index)
    rounds: int
    flagged: bool

    @property
    def rule(self) -> str:
        """The flag rule with this run's numbers, for a report or a tooltip."""
        rule = (
            f"flagged if |fitted change over the run| > {DRIFT_NOISE_FACTOR:g} x noise "
            f"and Mann-Kendall p < {DRIFT_TREND_ALPHA:g}"
        )
        if self.rounds < 2:
            return f"{rule}; not assessed: fewer than 2 rounds"
        noise = (
            f"{self.noise_percent:.2f} % ({self.noise_source})"
            if math.isfinite(self.noise_percent)
            else "unknown (under 4 rounds)"
        )
        return (
            f"{rule}; change {self.run_change_percent:+.2f} % over {self.rounds} rounds, "
            f"noise {noise}, p {self.trend_p_value:.3g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The report's drift fields (core.report.Drift)."""
        return {
            "slope_percent_per_round": _json_float(self.slope_percent_per_round),
            "first_to_last_percent": _json_float(self.first_to_last_percent),
            "noise_percent": _json_float(self.noise_percent),
            "flagged": self.flagged,
            "rule": self.rule,
            "run_change_percent": _json_float(self.run_change_percent),
            "noise_source": self.noise_source,
            "trend_p_value": _json_float(self.trend_p_value),
            "rounds": self.rounds,
        }


# Theil-Sen over every pair up to this many rounds (500,000 slopes); beyond, over this many
# pairs drawn at random (seeded), so that 100,000 rounds cost what 1,000 do, not 10^10 slopes.
THEIL_SEN_ALL_PAIRS = 1_000
THEIL_SEN_PAIRS = THEIL_SEN_ALL_PAIRS * (THEIL_SEN_ALL_PAIRS - 1) // 2


def _theil_sen(y: np.ndarray) -> tuple[float, float]:
    """Theil-Sen slope (the median of the slopes of all pairs: scipy.stats.theilslopes) and
    Sen's intercept median(y - slope·x) over x = 0..n-1."""
    n = y.size
    if n <= THEIL_SEN_ALL_PAIRS:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(0)
        i, j = rng.integers(0, n, THEIL_SEN_PAIRS), rng.integers(0, n, THEIL_SEN_PAIRS)
        i, j = np.minimum(i, j), np.maximum(i, j)
        i, j = i[i != j], j[i != j]
    slope = float(np.median((y[j] - y[i]) / (j - i)))
    return slope, float(np.median(y - slope * np.arange(n)))


def _mann_kendall_s(y: np.ndarray, block: int = 1024) -> int:
    """S = sum over i < j of sign(y_j - y_i), exactly, in O(n^2 / block + n log n · n / block)
    numpy work and O(block^2) memory: each block's pairs by broadcasting, its pairs with
    every earlier value by binary search in their sorted copy."""
    s, before = 0, np.empty(0)
    for start in range(0, y.size, block):
        b = y[start: start + block]
        s += int(np.sign(b[None, :] - b[:, None])[np.triu_indices(b.size, k=1)].sum())
        s += int((np.searchsorted(before, b, side="left")).sum())  # earlier and smaller
        s -= int((before.size - np.searchsorted(before, b, side="right")).sum())
        before = np.sort(np.concatenate([before, b]), kind="stable")
    return s


def mann_kendall_p(y: np.ndarray) -> float:
    """Two-sided p-value of the Mann-Kendall trend test of y against its order: what
    scipy.stats.kendalltau(range(n), y).pvalue gives (method "auto"): exact when y has no
    ties and n <= 33 (or all but one pair agree), else the normal approximation with the
    variance corrected for ties in y. 1.0 when every value is equal (scipy: NaN)."""
    n = int(y.size)
    tot = n * (n - 1) // 2
    _, counts = np.unique(y, return_counts=True)
    t = counts[counts > 1].astype(np.int64)
    ytie = int((t * (t - 1) // 2).sum())
    if n < 2 or ytie == tot:
        return 1.0
    s = _mann_kendall_s(y)
    dis = (tot - ytie - s) // 2
    if ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1):
        return _kendall_p_exact(n, min(dis, tot - dis))
    var = (n * (n - 1.0) * (2 * n + 5) - float((t * (t - 1.0) * (2 * t + 5)).sum())) / 18
    return float(min(1.0, math.erfc(abs(s) / math.sqrt(var) / math.sqrt(2))))


def _kendall_p_exact(n: int, c: int) -> float:
    """Two-sided exact p-value of c discordant pairs (c at most half the pairs) among n values
    without ties: twice the probability of c or fewer, counting the permutations of n by
    inversions (Kendall, Rank Correlation Methods, 1970), as scipy does."""
    if n <= 2:
        return 1.0
    if c == 0:
        return 2.0 / math.factorial(n) if n < 171 else 0.0
    if c == 1:
        return 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    if 4 * c == n * (n - 1):
        return 1.0
    new = np.zeros(c + 1)
    new[0:2] = 1.0
    for j in range(3, n + 1):
        new = np.cumsum(new) if n < 171 else np.cumsum(new) / j
        if j <= c:
            new[j:] -= new[: c + 1 - j]
    p = 2.0 * float(np.sum(new)) / math.factorial(n) if n < 171 else float(np.sum(new))
    return min(1.0, max(0.0, p))


def drift(
    round_medians: Sequence[float] | np.ndarray, *, noise_percent: float | None = None
) -> Drift:
    """Theil-Sen drift of round medians, in % of the median round, with a flag (see Drift).

    Without noise_percent the per-round noise is the robust scatter of the residuals about the
    Theil-Sen line: 1.4826 · median(|residual|) · n / (n - 2), needs >= 4 rounds. The n / (n - 2)
    factor offsets the line having been fitted to the same few points: without it the estimate's
    median is about half the true SD at 5 rounds, with it within ~20 % of it from 4 to 20 rounds
    (simulated normal noise).
    """
    y = _positive_array(round_medians, "round medians")
    n = int(y.size)
    nan = float("nan")
    if n < 2:
        src = "given" if noise_percent is not None else "unavailable"
        noise = float(noise_percent) if noise_percent is not None else nan
        return Drift(nan, nan, nan, noise, src, nan, n, False)
    center = float(np.median(y))
    slope, intercept = _theil_sen(y)
    slope_pct = slope / center * 100.0
    run_change = slope_pct * (n - 1)
    first_to_last = (float(y[-1]) / float(y[0]) - 1.0) * 100.0
    if noise_percent is not None:
        noise, src = float(noise_percent), "given"
    elif n >= 4:
        resid = (y - (intercept + slope * np.arange(n))) / center * 100.0
        noise = MAD_TO_SD * float(np.median(np.abs(resid))) * n / (n - 2)
        src = "residuals"
    else:
        noise, src = nan, "unavailable"
    p = mann_kendall_p(y)
    flagged = (
        math.isfinite(noise)
        and abs(run_change) > DRIFT_NOISE_FACTOR * noise
        and p < DRIFT_TREND_ALPHA
    )
    return Drift(slope_pct, run_change, first_to_last, noise, src, p, n, bool(flagged))


def outliers(samples: Sequence[float] | np.ndarray, threshold: float = 3.5) -> list[int]:
    """Indices whose modified z-score |0.6745 (x - median) / MAD| exceeds threshold.

    Iglewicz & Hoaglin (1993). Flags only; the caller keeps every sample. When MAD is 0 (more
    than half the samples share one value, common with coarse timers), the score falls back to
    (x - median) / (1.253314 · mean absolute deviation), the usual substitute that is also
    normal-consistent; if that is 0 too, every sample equals the median and none is flagged.
    Non-finite samples are always flagged.
    """
    x = np.asarray(samples, dtype=np.float64).ravel()
    finite = np.isfinite(x)
    bad = [int(i) for i in np.flatnonzero(~finite)]
    xf = x[finite]
    if xf.size < 3:  # no spread to judge against
        return bad
    med = float(np.median(xf))
    dev = np.abs(x - med)
    mad = float(np.median(dev[finite]))
    if mad > 0:
        score = 0.6745 * dev / mad
    else:
        mean_ad = float(np.mean(dev[finite]))
        if mean_ad == 0:
            return bad
        score = dev / (1.253314 * mean_ad)
    hits = np.flatnonzero(finite & (score > threshold))
    return sorted(bad + [int(i) for i in hits])


def ci_width_percent(v: Verdict) -> float:
    """Full width of the verdict's interval in percentage points (inf when there is none)."""
    w = v.ci_high_percent - v.ci_low_percent
    return w if math.isfinite(w) else math.inf


def should_stop(verdicts: Iterable[Verdict], target_ci_percent: float) -> bool:
    """`--until-ci`: stop when every verdict's full interval width is below the target."""
    vs = list(verdicts)
    return bool(vs) and all(ci_width_percent(v) < target_ci_percent for v in vs)
