"""Drift, verdicts and speedups a source did not record (reference 001 has none), or that a
new baseline changes: the one analysis (core.analysis) applied to a source, with the source's
own threshold. analyse() imports scipy, so the console calls derive() from a thread worker,
never on the UI thread (`sagetui compare` derives what a report lacks in core/compare)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sagetui.core.statistics.analysis import analyse
from sagetui.core.statistics.threshold import resolve_threshold
from sagetui.tui.run_data import RunData


@dataclass
class Derived:
    drift: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    speedups: dict[str, float | None] = field(default_factory=dict)


def derive(round_medians: dict[str, dict[int, float]], p50: dict[str, float | None],
           baseline: str | None, *, threshold: Any, missing_drift: set[str],
           with_verdicts: bool) -> Derived:
    """round_medians: per variant, round number -> median; rounds pair by number."""
    an = analyse(round_medians, p50, baseline, threshold, drift_of=missing_drift,
                 verdicts=with_verdicts)
    return Derived(an.drift_dicts(), an.verdict_dicts(), an.speedups())


def derive_inputs(data: RunData, recompute: bool) -> dict[str, Any] | None:
    """derive()'s arguments for what a source lacks (recompute: all, for a new baseline);
    None when nothing is missing."""
    missing = set(data.variants) if recompute else {
        n for n, v in data.variants.items() if v.drift is None}
    need_verdicts = recompute or any(v.verdict is None and n != data.baseline
                                     for n, v in data.variants.items())
    if not data.variants or not (missing or need_verdicts):
        return None
    return {"round_medians": {n: {p.round: p.median_s for p in v.round_points()}
                              for n, v in data.variants.items()},
            "p50": {n: v.p50_s() for n, v in data.variants.items()},
            "baseline": data.baseline, "threshold": data.threshold or resolve_threshold(),
            "missing_drift": missing if not data.live else set(),
            "with_verdicts": need_verdicts}


def apply_derived(data: RunData, d: Derived, recompute: bool) -> None:
    """Fill what derive() found into the source (a computed verdict is marked as such)."""
    for name, v in data.variants.items():
        if name in d.drift:
            v.drift = d.drift[name]
        if name == data.baseline:
            v.verdict, v.verdict_computed = None, False
        elif name in d.verdicts and (recompute or v.verdict is None):
            v.verdict, v.verdict_computed = d.verdicts[name], not data.live
        if name in d.speedups and (recompute or v.speedup_percent is None):
            v.speedup_percent = d.speedups[name]
    data.touch()
