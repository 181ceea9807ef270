"""One analysis of a comparison, used by the session, the console and every export.

Per variant against the baseline: the two-build report's `speedup_vs_baseline_percent` (p50s,
core/derived.py), the paired verdict on log ratios of round medians with its 95 % interval
(verdict.paired_speedup), the threshold that verdict used and where the
threshold came from, drift of the round medians and outlier flags. The two speedups are
different estimates and are always labelled apart: "p50 speedup" (the two-build report's field) and
"paired estimate" (the verdict's, the centre of its interval).

The threshold and where it came from: threshold.py.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sagetui.core.derived import speedup_percent
from sagetui.core.statistics.drift import Drift, drift
from sagetui.core.statistics.outliers import outliers
from sagetui.core.statistics.threshold import Threshold
from sagetui.core.statistics.verdict import Verdict, paired_speedup


@dataclass(frozen=True)
class VariantAnalysis:
    speedup_p50_percent: float | None = None  # the two-build report's field: from the p50s
    verdict: Verdict | None = None  # paired: its estimate is the interval's centre
    drift: Drift | None = None
    outliers: list[int] | None = None  # indices into the samples given


@dataclass(frozen=True)
class Analysis:
    baseline: str | None
    threshold: Threshold
    variants: dict[str, VariantAnalysis] = field(default_factory=dict)

    def verdict_dict(self, name: str) -> dict[str, Any] | None:
        """A variant's verdict as the report's Verdict fields, threshold source included."""
        v = self.variants.get(name)
        if v is None or v.verdict is None:
            return None
        return {**v.verdict.to_dict(), **self.threshold.fields()}

    def verdict_dicts(self) -> dict[str, dict[str, Any]]:
        return {n: d for n in self.variants if (d := self.verdict_dict(n)) is not None}

    def drift_dicts(self) -> dict[str, dict[str, Any]]:
        return {n: v.drift.to_dict() for n, v in self.variants.items() if v.drift is not None}

    def speedups(self) -> dict[str, float | None]:
        return {n: v.speedup_p50_percent for n, v in self.variants.items()}

    def verdicts(self) -> dict[str, Verdict]:
        return {n: v.verdict for n, v in self.variants.items() if v.verdict is not None}


def analyse(round_medians: Mapping[str, Mapping[int, float]],
            p50s: Mapping[str, float | None], baseline: str | None, threshold: Threshold, *,
            samples: Mapping[str, Sequence[float] | np.ndarray] | None = None,
            drift_of: Collection[str] | None = None, verdicts: bool = True) -> Analysis:
    """round_medians: per variant, round number -> median seconds; rounds pair by number.
    p50s: per variant, the p50 of all its samples. baseline None: no verdicts, no speedups.
    samples: per variant, the flat samples to flag outliers in. drift_of: the variants whose
    drift to compute (None: every variant with 2 rounds or more)."""
    base = round_medians.get(baseline) if baseline is not None else None
    bp = p50s.get(baseline) if baseline is not None else None
    out: dict[str, VariantAnalysis] = {}
    for name in dict.fromkeys([*round_medians, *p50s]):
        rm = round_medians.get(name) or {}
        p50 = p50s.get(name)
        speedup = speedup_percent(bp, p50) if bp and p50 else None
        verdict = None
        if verdicts and base and name != baseline:
            common = sorted(set(base) & set(rm))
            if common:
                verdict = paired_speedup([base[r] for r in common], [rm[r] for r in common],
                                         threshold_percent=threshold.percent)
        run_drift = None
        if len(rm) >= 2 and (drift_of is None or name in drift_of):
            run_drift = drift([rm[r] for r in sorted(rm)])
        flat = (samples or {}).get(name)
        flags = outliers(flat) if flat is not None else None
        out[name] = VariantAnalysis(speedup, verdict, run_drift, flags)
    return Analysis(baseline, threshold, out)
