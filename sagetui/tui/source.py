"""One thing the console shows: a live run or a saved report, as a run model (core/run/) and the
console's own state around it (which variants are shown, the run's wall clock, the fast views
of its samples).

A live run's model is fed the session's events by the one fold (run_control.py calls
core.run.fold.apply); a saved report is loaded into a model by core.run.load. The panels read
the model and the figures computed from it (core/run/figures.py), the same functions the
report is built with, so what a panel shows is what the report says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sagetui.core import distributions
from sagetui.core.blocks.workload import Workload
from sagetui.core.config import RunConfig
from sagetui.core.format import printable
from sagetui.core.phases import PARENTS
from sagetui.core.report.model import Report
from sagetui.core.run import figures
from sagetui.core.run.fold import new_model
from sagetui.core.run.load import from_report
from sagetui.core.run.model import TOTAL, RunModel, VariantModel
from sagetui.core.statistics.threshold import Threshold
from sagetui.core.telemetry import merge_blocks
from sagetui.tui.progress import RunClock
from sagetui.tui.sample_views import TotalsView
from sagetui.tui.series import MinMaxSeries


def live_source(config: RunConfig) -> Source:
    """The live run's source before its first run: the configured variants, nothing measured."""
    return Source("live run", live=True, model=new_model(config))


def saved_source(report: Report, label: str, path: str | None = None) -> Source:
    """A saved report, loaded into the run model (core/run/load.py)."""
    return Source(label, live=False, path=path, model=from_report(report))


@dataclass
class PhaseRow:
    name: str
    depth: int
    p50_s: float | None
    p90_s: float | None
    share: float | None  # of the sum of the leaves' p50
    ci_half_percent: float | None  # 95 % half-width, from the round medians (on logs)
    count: int | None
    bytes_moved: int | None = None  # its compulsory bytes, read + written (core/sol.py)
    gbps: float | None = None  # bytes_moved / p50
    share_of_copy: float | None = None  # of the GPU's measured copy bandwidth


@dataclass
class RoundPoint:
    round: int
    median_s: float
    min_s: float | None = None
    max_s: float | None = None


class Source:
    """A live run or a saved report, as the console shows it."""

    def __init__(self, label: str, *, live: bool, path: str | None = None,
                 model: RunModel | None = None) -> None:
        self.label = label
        self.live = live
        self.path = path
        self.model = model if model is not None else new_model()
        self.enabled: dict[str, bool] = {}  # a variant turned off is neither run nor shown
        self.clock = RunClock()  # a live run's wall clock (the model holds none)
        self._version = 0  # the console's own changes (toggles, a new baseline, derived...)
        self._totals: dict[str, TotalsView] = {}
        self._telemetry: tuple[Any, dict[int, dict[str, Any]]] | None = None
        self._round_telemetry: dict[str, dict[int, dict[str, Any]]] = {}
        self._points: dict[str, list[RoundPoint]] = {}
        # a live run's report once it finished (the app's run control holds it)
        self.final: Callable[[], Report | None] = lambda: None

    # -- what changed -------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """Moves whenever anything but single iterations changed what the panels show."""
        return self.model.version + self._version

    @property
    def sample_version(self) -> int:
        return self.model.sample_version

    def touch(self) -> None:
        self._version += 1

    def reset(self, model: RunModel) -> None:
        """Show another model (a new run, a run editor's configuration): the views of the old
        one's samples go; the toggles of the variants kept stay."""
        self.model = model
        self._totals.clear()
        self._telemetry = None
        self._round_telemetry.clear()
        self._points.clear()
        self.enabled = {n: self.enabled.get(n, True) for n in model.variants}
        self.touch()

    # -- the run's facts, for the panels ------------------------------------------------------
    @property
    def variants(self) -> dict[str, VariantModel]:
        return self.model.variants

    @property
    def baseline(self) -> str | None:
        return self.model.baseline

    @property
    def status(self) -> str:
        """The run model's status; "idle" for a live source whose run has not started."""
        return "idle" if self.live and self.model.status == "pending" else self.model.status

    @property
    def threshold(self) -> Threshold | None:
        return self.model.threshold

    @property
    def rounds_done(self) -> int:
        if self.model.completed_rounds:
            return len(self.model.completed_rounds)
        report = self.model.report
        return (report.rounds or 0) if report is not None else 0

    @property
    def report(self) -> Any:
        """The saved report this source shows (None for a live run)."""
        return self.model.report

    def points_block(self) -> Any:
        """A report of points' block (a workload's calls, a sweep's points), whose variants
        the Overview lists: a saved workload or sweep report's, or a live workload's or
        sweep's once it finished (`final`); else None."""
        report = self.report if self.report is not None else self.final()
        return None if report is None else (report.workload or report.sweep)

    def points_done(self) -> str | None:
        """A finished live workload's or sweep's measure, as its header and its notice say it
        ("8/8 calls"): each call or point ran rounds of its own, and the source's own model
        holds none of them (it once read "COMPLETE 0/5 rounds"); None for a run of rounds."""
        if not self.live:
            return None
        block = self.points_block()
        if block is None:
            return None
        what = "calls" if isinstance(block, Workload) else "points"
        return f"{sum(p.status == 'ok' for p in block.points)}/{len(block.points)} {what}"

    @property
    def iterations_per_round(self) -> int | None:
        cfg, report = self.model.config, self.model.report
        if report is not None:
            return report.iterations_per_round or report.iterations
        return cfg.iterations if cfg is not None else None

    @property
    def warmup(self) -> int | None:
        cfg, report = self.model.config, self.model.report
        if report is not None:
            return report.warmup
        return cfg.warmup if cfg is not None else None

    @property
    def device(self) -> str | None:
        return self.model.ready.get("device") or self.model.runner.get("device")

    @property
    def gpu(self) -> dict[str, Any]:
        gpu = self.model.ready.get("gpu")
        return gpu if isinstance(gpu, dict) else {}

    @property
    def torch(self) -> str | None:
        return self.model.runner.get("torch")

    @property
    def shape(self) -> str | None:
        """The shape measured, as a line: 1x37810x56x128 bf16 NHD."""
        report = self.model.report
        if report is not None:
            return shape_text(report)
        cfg = self.model.config
        return cfg.shape.describe() if cfg is not None else None

    @property
    def metadata(self) -> dict[str, Any]:
        report, cfg = self.model.report, self.model.config
        if report is not None:
            return dict(report.metadata or {})
        return dict(cfg.metadata) if cfg is not None else {}

    def is_enabled(self, name: str) -> bool:
        return self.enabled.get(name, True)

    def shown(self) -> list[VariantModel]:
        return [v for n, v in self.variants.items() if self.is_enabled(n)]

    def plotted(self) -> list[VariantModel]:
        """The variants the plots and the phase view draw: those on; with every one off, all
        of them (turning the only variant off must not empty a finished run's plots)."""
        return self.shown() or list(self.variants.values())

    def kind(self) -> str:
        if self.live:
            return "live run"
        if len(self.variants) > 1:
            return "variant comparison"
        report = self.model.report
        if report is not None and not self.variants:
            if report.mainloop_profiles and not report.phase_timings:
                return "main-loop profile"
            if report.phase_timings:
                return "phase breakdown"
        return "report"

    # -- a variant's numbers --------------------------------------------------------------------
    def quantiles(self, v: VariantModel, phase: str = TOTAL) -> tuple[float, float] | None:
        """(p50, p90) of a phase: a saved report's as recorded, a live run's from its
        completed rounds (exactly the summary the report will hold)."""
        return figures.of(self.model, v).quantiles(phase)

    def p50_s(self, v: VariantModel) -> float | None:
        q = self.quantiles(v)
        return q[0] if q else None

    def count(self, v: VariantModel, phase: str = TOTAL) -> int | None:
        return figures.of(self.model, v).count(phase)

    def interval(self, v: VariantModel, phase: str = TOTAL) -> float | None:
        """The 95 % half-width (percent) of the phase's typical round median (completed
        rounds: the report's `intervals`)."""
        return figures.interval(v, phase)

    def totals(self, v: VariantModel) -> MinMaxSeries:
        """Every iteration's whole-call latency so far, for the iteration plot."""
        view = self._totals.get(v.name)
        if view is None:
            view = self._totals[v.name] = TotalsView(self.model.planned_samples())
        return view.sync(v.samples.get(TOTAL))

    def round_points(self, v: VariantModel) -> list[RoundPoint]:
        """Each completed round's (median, min, max) of the whole call; a round's once, when
        it completes (do not modify the list returned)."""
        got = self._points.setdefault(v.name, [])
        if v.recorded is not None and not v.round_medians:
            if not got:
                got += [RoundPoint(i, s.p50_s, s.min_s, s.max_s)
                        for i, s in enumerate(v.recorded.rounds or [])]
            return got
        rounds = v.completed_rounds
        for r in rounds[len(got):]:
            s = v.round_summaries.get(r)
            if s is not None:
                got.append(RoundPoint(r, s["p50_s"], s["min_s"], s["max_s"]))
            else:
                got.append(RoundPoint(r, v.round_medians.get(r, float("nan"))))
        return got

    def phase_rows(self, name: str | None) -> tuple[str, list[PhaseRow]]:
        """(whose phases, rows) for the phase table and the phase bars: the variant's own when
        it has any, else a report's top-level phase_timings (a phase breakdown made
        elsewhere: the phase-breakdown report)."""
        v = self.variants.get(name) if name else None
        if v is not None and v.phases:
            stats: dict[str, Stats] = {}
            for n, _ in v.phases:
                q = self.quantiles(v, n)
                if q is not None:
                    stats[n] = (q[0], q[1], self.interval(v, n), self.count(v, n))
            if stats:
                sol = figures.of(self.model, v).sol or {}
                return v.name, phase_rows(v.phases, stats, sol.get("phases") or {})
        report = self.model.report
        if report is not None and report.phase_timings and not self.variants:
            tree = [(n, PARENTS.get(n)) for n in report.phase_timings]
            return "report", phase_rows(tree, {n: (s.p50_s, s.p90_s, None, s.count)
                                               for n, s in report.phase_timings.items()})
        return name or "-", []

    def total_row(self, name: str | None) -> PhaseRow | None:
        v = self.variants.get(name) if name else None
        q = self.quantiles(v) if v is not None else None
        if v is None or q is None:
            return None
        return PhaseRow("total (one call)", 0, q[0], q[1], None, self.interval(v),
                        self.count(v))

    # -- telemetry ------------------------------------------------------------------------------
    def gpu_telemetry(self) -> dict[int, dict[str, Any]]:
        """Per round, in order, the telemetry of every variant merged (the variants share the
        GPU); computed again only when a round was added."""
        key = (id(self.model), tuple((n, len(self.round_telemetry(v)))
                                     for n, v in self.variants.items()))
        if self._telemetry is None or self._telemetry[0] != key:
            per: dict[int, list[dict[str, Any]]] = {}
            for v in self.variants.values():
                for r, t in self.round_telemetry(v).items():
                    per.setdefault(r, []).append(t)
            self._telemetry = (key, {r: merge_blocks(ts) for r, ts in sorted(per.items())})
        return self._telemetry[1]

    def round_telemetry(self, v: VariantModel) -> dict[int, dict[str, Any]]:
        """A variant's telemetry per completed round, its blocks merged: a round once, when it
        completes (a redraw of a run of 50,000 rounds does not merge them all again)."""
        if v.recorded is not None:
            got = self._round_telemetry.get(v.name)
            if got is None:
                got = self._round_telemetry[v.name] = figures.round_telemetry(v)
            return got
        got = self._round_telemetry.setdefault(v.name, {})
        for r in v.completed_rounds[len(got):]:
            got[r] = figures.merged_telemetry(v, r)
        return got

    def has_gpu_telemetry(self) -> bool:
        return any(t.get("available") for t in self.gpu_telemetry().values())

    def throttled_rounds(self, v: VariantModel) -> dict[int, list[str]]:
        return {r: t["throttle_reasons"] for r, t in self.round_telemetry(v).items()
                if t.get("throttle_reasons")}


Stats = tuple[float | None, float | None, float | None, int | None]  # p50, p90, CI %, n


def phase_rows(tree: list[tuple[str, str | None]], stats: dict[str, Stats],
               sol: dict[str, dict[str, Any]] | None = None) -> list[PhaseRow]:
    parents = {p for _, p in tree if p}
    leaves_total = sum((stats.get(n, (None,))[0] or 0.0) for n, _ in tree if n not in parents)
    depth: dict[str, int] = {}
    rows = []
    for name, parent in tree:
        depth[name] = depth.get(parent, -1) + 1 if parent else 0
        if name not in stats:
            continue
        p50, p90, half, count = stats[name]
        share = p50 / leaves_total if p50 is not None and leaves_total > 0 else None
        bw = (sol or {}).get(name) or {}
        moved = bw["bytes_read"] + bw["bytes_written"] if bw else None
        rows.append(PhaseRow(name, depth[name], p50, p90, share, half, count, moved,
                             bw.get("gbps"), bw.get("share_of_copy")))
    return rows



def shape_text(report: Any) -> str | None:
    """A report's q shape as a line (its layout read), with kv length and dtype when known."""
    q = report.q_shape
    if not q:
        return None
    layout = report.layout or "NHD"
    b, n, h, d = q if layout == "NHD" else (q[0], q[2], q[1], q[3])
    cfg = (report.config or {}).get("shape")  # free-form JSON: any value, or none
    dtype = cfg.get("dtype") if isinstance(cfg, dict) else None
    extra = " ".join(x for x in (dtype if isinstance(dtype, str) else None, layout) if x)
    kv = report.k_shape
    kv_len = (kv[1] if layout == "NHD" else kv[2]) if kv else n
    kvs = f" kv {kv_len}" if kv_len != n else ""
    drawn = report.inputs.distribution if report.inputs else None  # as Shape.describe says it
    if drawn and drawn != distributions.DEFAULT:
        extra += f" {distributions.PREFIX}{printable(drawn)}"
    return f"{b}x{n}x{h}x{d}{kvs}" + (f" {extra.strip()}" if extra.strip() else "")
