"""One variant as the console shows it: its samples (live or from a report), summaries,
verdict and drift, and its phase table's rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sagetui.core.phases import PARENTS
from sagetui.tui.phase_stats import PhaseRow, PhaseStore, ci_half, summary_stats
from sagetui.tui.phase_stats import phase_rows as build_rows
from sagetui.tui.series import MinMaxSeries


@dataclass
class RoundPoint:
    round: int
    median_s: float
    min_s: float | None = None
    max_s: float | None = None


@dataclass
class VariantView:
    name: str
    index: int  # its series colour
    backend: str | None = None
    path: str | None = None
    kernel: str | None = None
    status: str = "pending"
    error: str | None = None
    enabled: bool = True
    phases: list[tuple[str, str | None]] = field(default_factory=list)
    total: PhaseStore = field(default_factory=PhaseStore)
    totals: MinMaxSeries = field(init=False)  # over total's values (shared: see __post_init__)
    phase_store: dict[str, PhaseStore] = field(default_factory=dict)
    # from a report without raw samples (reference 001): per-round summaries only
    round_summaries: list[RoundPoint] = field(default_factory=list)
    phase_summaries: dict[str, dict[str, float]] = field(default_factory=dict)
    timing: dict[str, float] | None = None
    round_telemetry: dict[int, dict[str, Any]] = field(default_factory=dict)
    block_telemetry: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    verdict: dict[str, Any] | None = None
    verdict_computed: bool = False  # derived by sagetui from a report that had none
    drift: dict[str, Any] | None = None
    speedup_percent: float | None = None
    byte_exact: bool | None = None
    output_sha256: str | None = None
    deterministic: bool | None = None
    outliers: int | None = None
    accuracy: dict[str, Any] | None = None  # against fp32 attention (runner/accuracy.py)
    sdpa_backend: str | None = None  # the backend torch's SDPA ran
    completed_rounds: list[int] = field(default_factory=list)
    # round_points' cache: the points of completed_rounds[:n] (a completed round is final)
    _points: list[RoundPoint] = field(default_factory=list, repr=False, compare=False)
    _points_of: tuple[list[int] | None, int] = field(default=(None, 0), repr=False,
                                                      compare=False)

    def __post_init__(self) -> None:
        # the iteration plot's min/max pyramid reads the total's samples: one copy of them
        self.totals = MinMaxSeries(self.total.values)

    # -- derived ----------------------------------------------------------------------------
    def round_points(self) -> list[RoundPoint]:
        """Every completed round's (median, min, max), in completion order. Computed once per
        round: a redraw of a run of 50,000 rounds does not walk them all (do not modify the
        list returned)."""
        if self.round_summaries:
            return self.round_summaries
        rounds = self.completed_rounds
        of, n = self._points_of
        if of is not rounds or n > len(rounds):  # a new list (a report loaded): start again
            self._points, n = [], 0
        for r in rounds[n:]:
            if r in self.total.round_start:
                stats = self.total.round_stats(r)
                if stats is not None:
                    self._points.append(RoundPoint(r, *stats))
        self._points_of = (rounds, len(rounds))
        return self._points

    def p50_s(self) -> float | None:
        if self.timing:
            return self.timing.get("p50_s")
        return self.total.quantiles()[0] if len(self.total.values) else None

    def p90_s(self) -> float | None:
        if self.timing:
            return self.timing.get("p90_s")
        return self.total.quantiles()[1] if len(self.total.values) else None

    def throttled_rounds(self) -> dict[int, list[str]]:
        return {r: t["throttle_reasons"] for r, t in self.round_telemetry.items()
                if t.get("throttle_reasons")}

    def has_samples(self) -> bool:
        return len(self.totals) > 0


def rows_for(v: VariantView) -> list[PhaseRow]:
    tree = v.phases or [(n, PARENTS.get(n)) for n in v.phase_summaries]
    stats: dict[str, tuple[float | None, float | None, float | None, int | None]] = {}
    for name, _ in tree:
        store = v.phase_store.get(name)
        if store is not None and len(store.values):
            p50, p90 = store.quantiles()
            stats[name] = (p50, p90, ci_half(store), len(store.values))
        elif name in v.phase_summaries:
            stats[name] = summary_stats(v.phase_summaries[name])
    return build_rows(tree, stats)
