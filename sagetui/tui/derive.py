"""Drift, verdicts and speedups a report did not record (reference 001 has none), or that a
new baseline changes. Pure functions of round medians; they import scipy, so the app calls
them from a thread worker, never on the UI thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sagetui.core import verdict as vd


@dataclass
class Derived:
    drift: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    speedups: dict[str, float | None] = field(default_factory=dict)


def derive(round_medians: dict[str, dict[int, float]], p50: dict[str, float | None],
           baseline: str | None, *, threshold_percent: float | None,
           missing_drift: set[str], with_verdicts: bool) -> Derived:
    """round_medians: per variant, round number -> median; rounds pair by number."""
    out = Derived()
    for name in missing_drift:
        rm = round_medians.get(name) or {}
        if len(rm) >= 2:
            out.drift[name] = vd.drift([rm[r] for r in sorted(rm)]).to_dict()
    base = round_medians.get(baseline or "")
    threshold = threshold_percent or vd.default_threshold_percent(None)
    bp = p50.get(baseline or "")
    for name, rm in round_medians.items():
        out.speedups[name] = (bp / p50[name] - 1.0) * 100.0 if bp and p50.get(name) else None
        if not with_verdicts or name == baseline or not base or not rm:
            continue
        common = sorted(set(base) & set(rm))
        out.verdicts[name] = vd.paired_speedup([base[r] for r in common], [rm[r] for r in common],
                                               threshold_percent=threshold).to_dict()
    return out
