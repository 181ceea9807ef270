"""The one Student-t interval: of a mean, on logs where times are concerned.

Every interval sagetui shows comes from `t_half_width`: the verdict's paired estimate (on log
ratios of round medians, verdict.py), a p50's interval from its round medians (`log_interval`:
the sweep's points, node-check's GPUs, the console's phase table), the round being the unit of
inference (docs/statistics.md); or, where independent parts add their variances (two runs
unpaired, a workload's calls), from `welch_half_width`. Times are skewed and compared as
ratios, so their intervals are taken on logs and given back in percent.

The quantile is scipy's (`scipy.special.stdtrit` is what `scipy.stats.t.ppf` calls): imported
when first needed, since scipy.stats would cost the console 60 MB resident and scipy.special
costs 13 (tests/test_verdict_units.py checks it against scipy.stats).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sagetui.core.derived import percent_of_log

CONFIDENCE = 0.95


@lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """Student t quantile; cached, since adaptive stopping asks for the same few repeatedly.
    `df` need not be whole: Welch's interval (unpaired.py) has fractional degrees of
    freedom."""
    from scipy.special import stdtrit  # lazy: scipy costs start-up time the UI does not want

    return float(stdtrit(df, p))


def t_half_width(x: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE
                 ) -> float | None:
    """Half-width of the Student-t interval of the mean of x: t · sd / sqrt(n). None under two
    values (no spread to judge by)."""
    a = np.asarray(x, dtype=np.float64)
    n = int(a.size)
    if n < 2:
        return None
    return t_quantile(0.5 + confidence / 2, n - 1) * float(a.std(ddof=1)) / math.sqrt(n)


def welch_half_width(parts: Sequence[tuple[float, int]], confidence: float = CONFIDENCE
                     ) -> tuple[float, float] | None:
    """Half-width and degrees of freedom of a Student-t interval whose variance adds up from
    independent parts, each (variance of its mean, its n): se² = Σ s², Welch-Satterthwaite's
    df = se⁴ / Σ s⁴ / (n - 1), half = t · se (two runs' round medians, unpaired.py; a
    workload's calls, weighted_total.py). None when the parts have no spread (se² = 0); a part
    that is not a number makes both not a number."""
    se2 = math.fsum(s for s, _ in parts)
    if se2 == 0.0:
        return None
    df = se2 ** 2 / math.fsum(s ** 2 / (n - 1) for s, n in parts)
    return t_quantile(0.5 + confidence / 2, df) * math.sqrt(se2), df


@dataclass(frozen=True)
class LogInterval:
    """A time's interval from its round medians: the geometric mean and the bounds (seconds),
    and the half-width in percent (exp(half) - 1, on logs)."""

    center_s: float
    low_s: float
    high_s: float
    half_percent: float
    rounds: int


def log_interval(round_medians: Sequence[float] | np.ndarray,
                 confidence: float = CONFIDENCE) -> LogInterval | None:
    """The interval of the typical round median (the geometric mean), on log seconds; None
    under two rounds or with a median that is not a positive number."""
    x = np.asarray(round_medians, dtype=np.float64)
    if x.size < 2 or not (np.all(np.isfinite(x)) and np.all(x > 0)):
        return None
    logs = np.log(x)
    half = t_half_width(logs, confidence)
    if half is None or not math.isfinite(half):
        return None
    mean = float(logs.mean())
    return LogInterval(math.exp(mean), math.exp(mean - half), math.exp(mean + half),
                       percent_of_log(half), int(x.size))


def around(center: float, half_percent: float | None) -> tuple[float, float]:
    """The bounds of an interval of `half_percent` (log_interval's, exp(half) - 1) about
    `center`: symmetric in log, center / (1 + h) to center x (1 + h)."""
    h = (half_percent or 0.0) / 100.0
    return center / (1 + h), center * (1 + h)


def half_percent(round_medians: Sequence[float] | np.ndarray,
                 confidence: float = CONFIDENCE) -> float | None:
    """log_interval's half-width in percent alone (the sweep's p50_ci_percent)."""
    iv = log_interval(round_medians, confidence)
    return iv.half_percent if iv is not None else None
