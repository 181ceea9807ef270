"""What the Sweep tab shows: a sweep's points (from a saved report, or streaming in from a
live SweepSession), with a version that changes whenever a point arrives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.format import percent
from sagetui.core.report.model import Report
from sagetui.core.sweep import plan


@dataclass
class SweepView:
    x_axis: str = "q_len"
    variants: list[str] = field(default_factory=list)
    points: list[SweepPoint] = field(default_factory=list)
    planned: int = 0
    version: int = 0
    sample_version: int = 0  # SeriesPlot's redraw key reads it; a sweep has no live samples
    # a workload's (its points are its calls): the totals and the worst call and head, as
    # `sagetui run --workload` prints them, shown in the crossovers' place
    totals: list[str] = field(default_factory=list)
    workload: bool = False  # the points are a capture's calls: plotted and listed by call
    # a workload's: each point's call, its index among the program's calls (the plot's x),
    # by the point's index
    calls: dict[int, int] = field(default_factory=dict)

    def add(self, point: SweepPoint, total: int | None = None) -> None:
        self.points.append(point)
        self.planned = total or self.planned
        self.version += 1

    def crossovers(self, metric: str = "kernel_tops") -> list[dict[str, Any]]:
        return [x for x in plan.all_crossovers(self.points) if x["metric"] == metric]

    def series(self, metric: str = "kernel_tops") -> dict[str, dict[str, list[tuple[int, float]]]]:
        return plan.series_of(self.points, metric)

    def crossover_lines(self) -> list[str]:
        """Where one backend overtakes another as the length grows: a line per metric and
        series ("end to end, D128 causal: sm90 overtakes sm80 at ≈1478 · ...")."""
        found = plan.all_crossovers(self.points)
        lines = []
        for metric, what in (("kernel_tops", "kernel"), ("e2e_tops", "end to end")):
            mine = [x for x in found if x["metric"] == metric]
            if not mine:
                lines.append(f"{what}: none" + (" so far" if self.planned > len(self.points)
                                                else ""))
            for group in dict.fromkeys(x["group"] for x in mine):
                lines.append(f"{what}, {group}: " + " · ".join(
                    f"{x['after']} overtakes {x['before']} at ≈{x['x']:.0f}"
                    for x in mine if x["group"] == group))
        return lines

    def call_of(self, point: SweepPoint) -> int:
        """A workload point's call: its index among the program's calls."""
        return self.calls.get(point.index, point.index)

    def call_series(self) -> dict[str, list[tuple[int, float]]]:
        """A workload's p50 per call in ms, by variant: the measured calls, in call order."""
        out: dict[str, list[tuple[int, float]]] = {name: [] for name in self.variants}
        for p in sorted(self.points, key=self.call_of):
            for v in p.variants:
                if v.status == "ok" and v.timing is not None:
                    out.setdefault(v.name, []).append((self.call_of(p), v.timing.p50_s * 1e3))
        return {name: line for name, line in out.items() if line}

    def noisy(self) -> list[tuple[SweepPoint, list[str]]]:
        """Each point with the variants whose interval is too wide to trust (plan.noisy)."""
        found = [(p, [f"{v.name} ±"
                      + percent(max(v.p50_ci_percent or 0, v.kernel_p50_ci_percent or 0), 1)
                      for v in p.variants if plan.noisy(v)]) for p in self.points]
        return [(p, names) for p, names in found if names]

    @classmethod
    def from_report(cls, report: Report | None) -> SweepView | None:
        if report is not None and report.workload is not None:
            from sagetui.core.workload import export
            w = report.workload
            totals = [f"{row[0]} total {row[1]} ms{f', {row[2]}' if row[2] else ''}"
                      + (f"; back to back {row[3]} ms{f', {row[4]}' if row[4] else ''}"
                         if len(row) > 3 else "")
                      for row in export.total_rows(w)] + export.worst_lines(w) \
                + [note for note in (export.pace_note(w),) if note]
            return cls(variants=list(w.variants), points=list(w.points),
                       planned=len(w.points), version=1, totals=totals, workload=True,
                       calls={c.point: c.index for c in w.calls if c.point is not None})
        if report is None or report.sweep is None:
            return None
        s = report.sweep
        return cls(x_axis=s.x_axis, variants=list(s.variants), points=list(s.points),
                   planned=len(s.points), version=1)
