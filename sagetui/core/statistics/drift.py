"""Drift of a variant's round medians over a run: Theil-Sen slope, first-to-last change, and a
flag when the change exceeds the round noise and the medians trend (Mann-Kendall)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sagetui.core import format as fmt
from sagetui.core.derived import ratio_percent
from sagetui.core.statistics.summary import median
from sagetui.core.statistics.verdict import MAD_TO_SD, json_float, positive_array

# Drift is flagged only when its fitted size exceeds this many per-round noise SDs.
DRIFT_NOISE_FACTOR = 2.0
# ... and the round medians trend (Mann-Kendall, two-sided) at this level.
DRIFT_TREND_ALPHA = 0.05


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
            f"{fmt.percent(self.noise_percent)} ({self.noise_source})"
            if math.isfinite(self.noise_percent)
            else "unknown (under 4 rounds)"
        )
        return (
            f"{rule}; change {fmt.percent(self.run_change_percent, sign=True)} over "
            f"{self.rounds} rounds, "
            f"noise {noise}, p {self.trend_p_value:.3g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The report's drift fields (core.report.Drift)."""
        return {
            "slope_percent_per_round": json_float(self.slope_percent_per_round),
            "first_to_last_percent": json_float(self.first_to_last_percent),
            "noise_percent": json_float(self.noise_percent),
            "flagged": self.flagged,
            "rule": self.rule,
            "run_change_percent": json_float(self.run_change_percent),
            "noise_source": self.noise_source,
            "trend_p_value": json_float(self.trend_p_value),
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
    slope = median((y[j] - y[i]) / (j - i))
    return slope, median(y - slope * np.arange(n))


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
    y = positive_array(round_medians, "round medians")
    n = int(y.size)
    nan = float("nan")
    if n < 2:
        src = "given" if noise_percent is not None else "unavailable"
        noise = float(noise_percent) if noise_percent is not None else nan
        return Drift(nan, nan, nan, noise, src, nan, n, False)
    center = median(y)
    slope, intercept = _theil_sen(y)
    slope_pct = slope / center * 100.0
    run_change = slope_pct * (n - 1)
    first_to_last = ratio_percent(float(y[-1]), float(y[0]))
    if noise_percent is not None:
        noise, src = float(noise_percent), "given"
    elif n >= 4:
        resid = (y - (intercept + slope * np.arange(n))) / center * 100.0
        noise = MAD_TO_SD * median(np.abs(resid)) * n / (n - 2)
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
