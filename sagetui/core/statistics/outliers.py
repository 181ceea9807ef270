"""Outlier flags (modified z-score): flagged, never dropped."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sagetui.core.statistics.summary import median

THRESHOLD = 3.5  # |modified z| above it is flagged
METHOD = f"modified z-score (Iglewicz-Hoaglin), |z| > {THRESHOLD:g}"


def outliers(samples: Sequence[float] | np.ndarray, threshold: float = THRESHOLD) -> list[int]:
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
    med = median(xf)
    dev = np.abs(x - med)
    mad = median(dev[finite])
    if mad > 0:
        score = 0.6745 * dev / mad
    else:
        mean_ad = float(np.mean(dev[finite]))
        if mean_ad == 0:
            return bad
        score = dev / (1.253314 * mean_ad)
    hits = np.flatnonzero(finite & (score > threshold))
    return sorted(bad + [int(i) for i in hits])
