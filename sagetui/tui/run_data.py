"""What the console shows, fed either by a live run's events (live_fold.py) or by a saved
report (report_view.py).

One model for both, so that `sagetui view` and a live run use the same widgets. It lives on
the UI thread; the session's worker thread only posts messages. Samples are kept in numpy
arrays (see series.py); summaries are computed on demand, at most once per redraw.
"""

from __future__ import annotations

import itertools
from typing import Any

from sagetui.core.phases import PARENTS
from sagetui.core.profile.model import MainloopProfile
from sagetui.core.report.model import Report
from sagetui.core.statistics.threshold import Threshold
from sagetui.core.telemetry import merge_blocks
from sagetui.tui.phase_stats import PhaseRow, ci_half, summary_stats
from sagetui.tui.phase_stats import phase_rows as build_rows
from sagetui.tui.progress import Progress
from sagetui.tui.variant_view import VariantView, rows_for


class RunData:
    """Everything one source (a live run or a saved report) shows."""

    def __init__(self, label: str, *, live: bool, path: str | None = None) -> None:
        self.label = label
        self.live = live
        self.path = path
        self.status = "idle" if live else "saved"
        self.variants: dict[str, VariantView] = {}
        self.baseline: str | None = None
        self.iterations_per_round: int | None = None
        self.warmup: int | None = None
        self.rounds_done = 0
        self.shape: str | None = None
        self.device: str | None = None
        self.gpu_name: str | None = None
        self.gpu_state: dict[str, Any] | None = None  # runner/nvml.py's measurement_state
        self.torch: str | None = None
        self.source_commit: str | None = None
        self.scheduler: dict[str, Any] | None = None
        self.tail_rows: list[dict[str, Any]] = []
        self.decomposition: dict[str, Any] | None = None
        self.decomposition_skipped: str | None = None
        self.checksums: tuple[float | None, float | None] = (None, None)
        self.fused_notes: dict[str, str] | None = None
        self.mainloop_profiles: list[MainloopProfile] = []  # from a report (sagetui profile)
        self.achieved: dict[str, float | None] | None = None
        self.report_phases: dict[str, dict[str, float]] = {}  # top-level phase_timings (000)
        self.metadata: dict[str, Any] = {}
        self.faults: list[dict[str, Any]] = []
        self.threshold: Threshold | None = None  # what the verdicts were judged with
        self.report: Report | None = None
        self.progress = Progress()
        # bumped on every change but single iterations; tables recompute their percentiles
        # when it moves, so at most once per block of iterations, not per sample
        self.version = 0
        self.sample_version = 0  # bumped by every batch of iterations (the iteration plot)
        self._telemetry: dict[int, dict[str, Any]] = {}  # gpu_telemetry's cache
        self._telemetry_of: list[tuple[dict[int, dict[str, Any]], int]] = []
        self._telemetry_any = False

    def touch(self) -> None:
        self.version += 1

    # -- variants ---------------------------------------------------------------------------
    def variant(self, name: str) -> VariantView:
        if name not in self.variants:
            self.variants[name] = VariantView(name=name, index=len(self.variants))
        return self.variants[name]

    def kind(self) -> str:
        if self.live:
            return "live run"
        if self.variants and len(self.variants) > 1:
            return "variant comparison"
        if self.report_phases and not self.variants:
            return "phase breakdown"
        return "report"

    def phase_rows(self, variant: str | None) -> tuple[str, list[PhaseRow]]:
        """(whose phases, rows) for the phase table and the phase bars: the variant's own when
        it has any, else the report's top-level phase_timings."""
        v = self.variants.get(variant) if variant else None
        if v is not None and (v.phase_store or v.phase_summaries):
            return v.name, rows_for(v)
        if self.report_phases:
            tree = [(n, PARENTS.get(n)) for n in self.report_phases]
            return "report", build_rows(tree, {n: summary_stats(s)
                                               for n, s in self.report_phases.items()})
        return variant or "-", []

    def total_row(self, variant: str | None) -> PhaseRow | None:
        v = self.variants.get(variant) if variant else None
        if v is None or v.p50_s() is None:
            return None
        count = len(v.totals) or (v.timing or {}).get("count")
        return PhaseRow("total (one call)", 0, v.p50_s(), v.p90_s(), None,
                        ci_half(v.total), int(count) if count is not None else None)

    def gpu_telemetry(self) -> dict[int, dict[str, Any]]:
        """Per round, in order, the telemetry of every variant merged: the variants share the
        GPU. The status line asks on every tick: rounds are merged again only when a variant's
        telemetry of that round is new (do not modify what is returned)."""
        seen = [(v.round_telemetry, len(v.round_telemetry)) for v in self.variants.values()]
        old = self._telemetry_of
        fresh: set[int] = set()
        if len(old) != len(seen) or any(a is not b or n > m for (a, n), (b, m) in
                                         zip(old, seen, strict=True)):
            self._telemetry = {}  # other variants or other dicts (a report loaded): all again
            self._telemetry_any = False
            fresh = {r for d, _ in seen for r in d}
        else:
            for (d, n), (_, m) in zip(old, seen, strict=True):  # entries are only ever added
                fresh.update(itertools.islice(reversed(d), m - n))
        if fresh:
            merged = self._telemetry
            for r in sorted(fresh):
                merged[r] = merge_blocks(d[r] for d, _ in seen if r in d)
                self._telemetry_any = self._telemetry_any or bool(merged[r].get("available"))
            if any(a > b for a, b in itertools.pairwise(merged)):
                self._telemetry = dict(sorted(merged.items()))
        self._telemetry_of = seen
        return self._telemetry

    def has_gpu_telemetry(self) -> bool:
        """Whether any round has telemetry (a GPU's), without walking every round."""
        self.gpu_telemetry()
        return self._telemetry_any

    def round_medians(self, name: str) -> list[float]:
        v = self.variants[name]
        return [p.median_s for p in v.round_points()]
