"""What the console shows, fed either by a live run's events or by a saved report.

One model for both, so that `sagetui view` and a live run use the same widgets. It lives on
the UI thread; the session's worker thread only posts messages. Samples are kept in numpy
arrays (see series.py); summaries are computed on demand, at most once per redraw.
"""

from __future__ import annotations

import itertools
import time
from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sagetui.core.analysis import Threshold, report_threshold
from sagetui.core.phases import PARENTS
from sagetui.core.report import Report
from sagetui.core.telemetry import merge_blocks

from .phase_stats import PhaseRow, PhaseStore, ci_half
from .phase_stats import phase_rows as build_rows
from .series import MinMaxSeries


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
    accuracy: dict[str, Any] | None = None  # against fp32 attention (core/accuracy.py)
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


class IterationRun:
    """Iteration events of one variant and round with the same phases, as columns (arrays of
    doubles): what a block streams. The session's bridge builds them as events arrive, so that
    no event's dicts outlive it (10,000 events a second kept as dicts for a tenth of a second
    would be 40,000 objects a second for the cyclic GC to promote and walk)."""

    __slots__ = ("variant", "round", "phases", "total", "n", "first")

    def __init__(self, ev: dict[str, Any]) -> None:
        self.variant: str = ev["variant"]
        self.round: int = ev["round"]
        self.phases: dict[str, array] = {leaf: array("d") for leaf in ev.get("phases") or {}}
        self.total = array("d")
        self.n = 0
        self.first = ev  # the first event itself (its other fields, for whoever wants them)

    def takes(self, ev: dict[str, Any]) -> bool:
        return ev["variant"] == self.variant and ev["round"] == self.round \
            and (ev.get("phases") or {}).keys() == self.phases.keys()

    def add(self, ev: dict[str, Any]) -> None:
        phases = ev.get("phases") or {}
        for leaf, col in self.phases.items():
            col.append(phases[leaf])
        self.total.append(ev["total_s"])
        self.n += 1

    @classmethod
    def group(cls, events: list[dict[str, Any]]) -> list[IterationRun]:
        runs: list[IterationRun] = []
        for ev in events:
            if not runs or not runs[-1].takes(ev):
                runs.append(cls(ev))
            runs[-1].add(ev)
        return runs


@dataclass
class Progress:
    """Where a live run is: for the status line and the ETA."""

    round: int = -1
    rounds_planned: int | None = None
    iterations_per_round: int = 0
    variants_in_round: int = 0
    iteration_in_round: int = 0
    current_variant: str | None = None
    iterations_done: int = 0
    measured_s: float = 0.0  # time spent in rounds, for the iteration rate
    round_started: float | None = None
    started: float | None = None
    finished: float | None = None
    stage: str = "idle"  # idle, starting, warm-up, measuring, post-run, stopping, done
    until_ci_percent: float | None = None  # adaptive stopping: rounds_planned is its limit

    def eta_s(self) -> float | None:
        if self.rounds_planned is None or self.iterations_done == 0 or self.round < 0:
            return None
        spent = self.measured_s + (time.monotonic() - self.round_started
                                   if self.round_started is not None else 0.0)
        rate = self.iterations_done / max(spent, 1e-9)
        per_round = self.iterations_per_round * max(1, self.variants_in_round)
        left = per_round * (self.rounds_planned - self.round) - self.iteration_in_round
        return max(0.0, left / rate)


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
        self.torch: str | None = None
        self.source_commit: str | None = None
        self.scheduler: dict[str, Any] | None = None
        self.tail_rows: list[dict[str, Any]] = []
        self.decomposition: dict[str, Any] | None = None
        self.decomposition_skipped: str | None = None
        self.checksums: tuple[float | None, float | None] = (None, None)
        self.fused_notes: dict[str, str] | None = None
        self.mainloop_profiles: list = []  # core.profile.model.MainloopProfile, from a report
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
            return v.name, _rows_for(v)
        if self.report_phases:
            tree = [(n, PARENTS.get(n)) for n in self.report_phases]
            return "report", build_rows(tree, {n: (s.get("p50_s"), s.get("p90_s"), None,
                                              s.get("count")) for n, s in
                                          self.report_phases.items()})
        return variant or "-", []

    def total_row(self, variant: str | None) -> PhaseRow | None:
        v = self.variants.get(variant) if variant else None
        if v is None or v.p50_s() is None:
            return None
        return PhaseRow("total (one call)", 0, v.p50_s(), v.p90_s(), None,
                        ci_half(v.total), len(v.totals) or (v.timing or {}).get("count"))

    # -- a live run's events ------------------------------------------------------------------
    def begin_run(self, rounds: int, iterations: int, variants: list[tuple[str, str]]) -> None:
        names = {n for n, _ in variants}
        for stale in [n for n in self.variants if n not in names]:
            del self.variants[stale]  # a variant of an earlier run (a calibration's copy, say)
        for v in list(self.variants.values()):
            keep = v.enabled
            self.variants[v.name] = VariantView(name=v.name, index=v.index, enabled=keep,
                                                backend=v.backend)
        for name, backend in variants:
            self.variant(name).backend = backend
        self.status = "running"
        self.tail_rows, self.faults, self.decomposition = [], [], None
        self.decomposition_skipped = None
        self.rounds_done = 0
        self.progress = Progress(rounds_planned=rounds, iterations_per_round=iterations,
                                 started=time.monotonic(), stage="starting")
        self.touch()

    def on_event(self, kind: str, d: dict[str, Any]) -> None:
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(d)
            self.touch()

    def _on_hello(self, d: dict[str, Any]) -> None:
        self.device, self.torch = d.get("device"), d.get("torch")

    def _on_variant(self, d: dict[str, Any]) -> None:
        v = self.variant(d["name"])
        v.backend, v.path, v.kernel = d.get("backend"), d.get("path"), d.get("kernel")
        v.status = "ok" if d.get("status") == "ok" else "failed"
        v.error = d.get("error")
        v.phases = [(n, p) for n, p in d.get("phases", [])]

    def _on_ready(self, d: dict[str, Any]) -> None:
        # every variant event comes before "ready": one still pending was replaced by the
        # session's choice for this machine (an `auto` configuration), so forget it
        for name in [n for n, x in self.variants.items() if x.status == "pending"]:
            del self.variants[name]
        for i, x in enumerate(self.variants.values()):
            x.index = i
        if self.baseline not in self.variants and self.variants:
            self.baseline = next(iter(self.variants))
        self.device = d.get("device") or self.device
        self.gpu_name = (d.get("gpu") or {}).get("name")
        self.scheduler = d.get("scheduler")
        self.progress.stage = "warm-up"

    def _on_warmup(self, d: dict[str, Any]) -> None:
        self.progress.stage = "warm-up"

    def _on_round(self, d: dict[str, Any]) -> None:
        p = self.progress
        now = time.monotonic()
        if d.get("phase") == "start":
            p.round, p.iteration_in_round = d["round"], 0
            p.variants_in_round = len(d.get("variants") or []) or 1
            p.round_started, p.stage = now, "measuring"
            return
        if p.round_started is not None:
            p.measured_s += now - p.round_started
            p.round_started = None
        r = d["round"]
        self.rounds_done += 1
        for name, v in self.variants.items():
            if r in v.total.round_start and r not in v.completed_rounds:
                v.completed_rounds.append(r)
                # a round's blocks are its two halves (session/schedule.py): looked up, not
                # found by sorting every block of the run at every round
                blocks = [v.block_telemetry[k] for k in ((r, 0), (r, 1))
                          if k in v.block_telemetry]
                if blocks:
                    v.round_telemetry[r] = merge_blocks(blocks)
            verdict = (d.get("verdicts") or {}).get(name)
            if verdict is not None:
                v.verdict = verdict
            drift = (d.get("drift") or {}).get(name)
            if drift is not None:
                v.drift = drift
        speedups = d.get("speedups")  # the session's analysis (core.analysis), if it sent one
        for name, v in self.variants.items():
            if speedups is not None:
                v.speedup_percent = speedups.get(name)
            if v.verdict is not None:
                self.threshold = Threshold.from_fields(v.verdict) or self.threshold

    def on_iterations(self, batch: list[dict[str, Any]]) -> None:
        """Fold a batch of iteration events in (as IterationRun.group makes them runs)."""
        self.on_runs(IterationRun.group(batch))

    def on_runs(self, runs: list[IterationRun]) -> None:
        """Fold runs of iterations in, column by column, an array per phase, not sample by
        sample: 10,000 events a second must not cost the UI thread a fifth of its time."""
        for run in runs:
            self._fold_run(self.variant(run.variant), run)
        if runs:
            self.sample_version += 1

    def _fold_run(self, v: VariantView, run: IterationRun) -> None:
        """A parent phase gets the sum of its children (in their order) when all of them are
        in the run."""
        r, n = run.round, run.n
        cols = {leaf: np.frombuffer(col) for leaf, col in run.phases.items()}
        stores = v.phase_store
        for leaf, col in cols.items():
            if leaf not in stores:
                stores[leaf] = PhaseStore()
            stores[leaf].add_many(r, col)
        for parent in dict.fromkeys(pp for _, pp in v.phases if pp):
            kids = [k for k, pp in v.phases if pp == parent]
            if all(k in cols for k in kids):
                acc = cols[kids[0]].copy()
                for k in kids[1:]:
                    acc += cols[k]
                if parent not in stores:
                    stores[parent] = PhaseStore()
                stores[parent].add_many(r, acc)
        total = np.frombuffer(run.total)
        v.total.add_many(r, total)
        v.totals.sync()
        p = self.progress
        p.iteration_in_round += n
        p.iterations_done += n
        p.current_variant = v.name

    def _on_block(self, d: dict[str, Any]) -> None:
        v = self.variant(d["variant"])
        v.block_telemetry[(d["round"], d["half"])] = d.get("telemetry") or {}
        v.output_sha256 = d.get("output_sha256") or v.output_sha256
        v.accuracy = d.get("accuracy") or v.accuracy  # a variant's first block carries them
        v.sdpa_backend = d.get("sdpa_backend") or v.sdpa_backend

    def _on_tail(self, d: dict[str, Any]) -> None:
        from sagetui.core.stats import summarize

        row = {k: d[k] for k in ("sweep", "q_len", "kv_len", "checksum", "variant", "phase")
               if k in d}
        row["mainloop"] = summarize(d["mainloop"])
        self.tail_rows.append(row)
        self.progress.stage = "tail study"

    def _on_decomposition(self, d: dict[str, Any]) -> None:
        self.progress.stage = "post-run"
        if "equal" in d:
            self.decomposition = d
        else:
            self.decomposition_skipped = d.get("skipped")

    def _on_fault(self, d: dict[str, Any]) -> None:
        self.faults.append(d)
        name = d.get("variant")
        # these keep the variant running; every other fault means the session dropped it
        if name in self.variants and d.get("kind") not in ("session", "display", "nonfinite"):
            self.variants[name].status = "failed"
            self.variants[name].error = d.get("message")

    def _on_finished(self, d: dict[str, Any]) -> None:
        self.status = d.get("status") or "complete"
        self.progress.stage = "done"
        self.progress.finished = time.monotonic()

    # -- a saved report ---------------------------------------------------------------------
    @classmethod
    def from_report(cls, report: Report, label: str, path: str | None = None,
                    live: bool = False) -> RunData:
        data = cls(label, live=live, path=path)
        data.load_report(report)
        return data

    def load_report(self, report: Report) -> None:
        """Replace everything with the report's contents (a live run's final report too)."""
        enabled = {n: v.enabled for n, v in self.variants.items()}
        self.report = report
        self.variants = {}
        self.status = report.status or ("saved" if not self.live else "complete")
        self.baseline = report.baseline or (report.variants[0].name if report.variants
                                            else None)
        self.iterations_per_round = report.iterations_per_round or report.iterations
        self.warmup = report.warmup
        self.rounds_done = report.rounds or 0
        env = report.environment or {}
        gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else None
        self.device, self.torch = env.get("device"), env.get("torch")
        self.gpu_name = (gpu or {}).get("name")
        self.source_commit = report.source_commit
        self.scheduler = report.scheduler.model_dump(exclude_none=True) if report.scheduler \
            else None
        self.tail_rows = [row.model_dump(exclude_none=True) for row in report.tail_study or []]
        dec = report.manual_decomposition_vs_public_sage2
        self.decomposition = dec.model_dump(exclude_none=True) if dec else None
        self.checksums = (report.manual_checksum, report.reference_checksum)
        self.fused_notes = report.fused_mainloop_phases
        self.mainloop_profiles = list(report.mainloop_profiles or [])
        self.achieved = report.achieved
        self.report_phases = {n: s.model_dump() for n, s in (report.phase_timings or {}).items()}
        self.metadata = report.metadata or {}
        self.faults = [f.model_dump() for f in report.faults or []]
        self.threshold = report_threshold(report)
        self.shape = _shape_text(report)
        if not self.live:  # a live run keeps what it planned, to say "7/300 rounds kept"
            self.progress.rounds_planned = report.rounds
        rounds_of = report.round_numbers()
        for v in report.variants or []:
            view = self.variant(v.name)
            view.enabled = enabled.get(v.name, True)
            view.backend, view.path, view.status = v.backend, v.path, v.status or "ok"
            view.error = v.error
            view.timing = v.timing.model_dump() if v.timing else None
            view.verdict = v.verdict.model_dump() if v.verdict else None
            view.drift = v.drift.model_dump() if v.drift else None
            view.speedup_percent = v.speedup_vs_baseline_percent
            view.byte_exact, view.output_sha256 = v.byte_exact, v.output_sha256
            view.deterministic = v.deterministic
            view.accuracy = v.accuracy.model_dump() if v.accuracy else None
            view.sdpa_backend = v.sdpa_backend
            view.outliers = v.outliers.count if v.outliers else None
            view.phase_summaries = {n: s.model_dump() for n, s in (v.phase_timings or {}).items()}
            samples = (report.samples or {}).get(v.name) or {}
            numbers = rounds_of.get(v.name) or list(range(len(samples.get("total", []))))
            order = list(samples) if samples else list(view.phase_summaries)
            view.phases = [(n, PARENTS.get(n) if PARENTS.get(n) in order else None)
                           for n in order if n != "total"]
            for phase, per_round in samples.items():
                store = view.total if phase == "total" else view.phase_store.setdefault(
                    phase, PhaseStore())
                store.add_rounds([numbers[i] if i < len(numbers) else i
                                  for i in range(len(per_round))], per_round)
                if phase == "total":
                    view.totals.sync()
            view.completed_rounds = view.total.rounds()
            if not samples and v.rounds:
                view.round_summaries = [RoundPoint(i, s.p50_s, s.min_s, s.max_s)
                                        for i, s in enumerate(v.rounds)]
                view.completed_rounds = list(range(len(v.rounds)))
            rounds = view.completed_rounds
            for i, t in enumerate(v.telemetry or []):
                view.round_telemetry[rounds[i] if i < len(rounds) else i] = t.model_dump()
        self.touch()

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


def _rows_for(v: VariantView) -> list[PhaseRow]:
    tree = v.phases or [(n, PARENTS.get(n)) for n in v.phase_summaries]
    stats: dict[str, tuple[float | None, float | None, float | None, int | None]] = {}
    for name, _ in tree:
        store = v.phase_store.get(name)
        if store is not None and len(store.values):
            p50, p90 = store.quantiles()
            stats[name] = (p50, p90, ci_half(store), len(store.values))
        elif name in v.phase_summaries:
            s = v.phase_summaries[name]
            stats[name] = (s.get("p50_s"), s.get("p90_s"), None, s.get("count"))
    return build_rows(tree, stats)


def _shape_text(report: Report) -> str | None:
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
    return f"{b}x{n}x{h}x{d}{kvs}" + (f" {extra}" if extra else "")
