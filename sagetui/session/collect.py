"""Everything a run has measured so far, and the report built from it.

The collector is fed the runner's typed events (core/events.py); `report()` can be called at
any time (after every round for the recovery file, at the end for the final report) and always
gives a valid Report.
"""

from __future__ import annotations

import datetime as _dt
from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sagetui import __version__
from sagetui.core import events as ev
from sagetui.core.config import RunConfig
from sagetui.core.peaks import kernel_peak
from sagetui.core.phases import FUSED_MAINLOOP_PHASES
from sagetui.core.report.model import SCHEMA_VERSION, Fault, Report
from sagetui.core.samples import GrowableArray, RoundSeries, Samples
from sagetui.core.statistics import verdict as vd
from sagetui.core.statistics.analysis import Analysis, analyse
from sagetui.core.statistics.summary import p50, summarize
from sagetui.core.statistics.threshold import SOURCE_CALIBRATION, Threshold, resolve_threshold
from sagetui.core.telemetry import merge_blocks
from sagetui.session.calibration import stored_threshold

# what a variant's first block carries once (runner engine `_first_output_facts`)
FIRST_BLOCK_FACTS = ("accuracy", "accuracy_error", "sdpa_backend", "sdpa_backend_method")


@dataclass
class VariantData:
    name: str
    backend: str
    spec: str
    path: str | None
    options: dict[str, Any] = field(default_factory=dict)
    status: str = "pending"  # pending, ok, failed, excluded
    error: str | None = None
    kernel: str | None = None
    phases: list[tuple[str, str | None]] = field(default_factory=list)
    # the round being measured: pending[round][phase] -> seconds per iteration ("total"
    # included), appended as events arrive (an array.array append is the cheapest)
    pending: dict[int, dict[str, array]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(lambda: array("d"))))
    # the completed rounds, moved here when a round completes: store[phase] holds every round
    # in one array of doubles (8 bytes a sample: 10^6 iterations of 8 phases are 72 MB, not
    # 290 as Python floats), which reports share rather than copy
    store: dict[str, PhaseRounds] = field(default_factory=dict)
    medians: list[float] = field(default_factory=list)  # the completed rounds' total medians
    round_summaries: list[dict[str, Any]] = field(default_factory=list)  # their total's
    blocks: dict[tuple[int, int], ev.BlockDone] = field(default_factory=dict)
    hashes: list[str] = field(default_factory=list)
    # once per variant: provenance (variant event), accuracy and sdpa facts (first block)
    facts: dict[str, Any] = field(default_factory=dict)

    def leaves(self) -> list[str]:
        parents = {p for _, p in self.phases if p}
        return [n for n, _ in self.phases if n not in parents]

    def children(self, parent: str) -> list[str]:
        return [n for n, p in self.phases if p == parent]

    @property
    def rounds(self) -> list[int]:
        """The completed rounds, in order."""
        st = self.store.get("total")
        return st.rounds if st is not None else []

    def round_medians(self) -> dict[int, float]:
        return dict(zip(self.rounds, self.medians, strict=True))

    def complete(self, round_: int) -> None:
        """Move the round's samples from pending to the store (a round is never added to)."""
        per_phase = self.pending.pop(round_, None)
        if not per_phase or not per_phase.get("total"):
            return
        for phase, values in per_phase.items():
            self.store.setdefault(phase, PhaseRounds()).add(round_, values)
        total = np.frombuffer(per_phase["total"])
        self.medians.append(float(np.median(total)))
        self.round_summaries.append(summarize(total))

    def series(self, phase: str) -> RoundSeries | None:
        """A phase's samples of every completed round, sharing the store's memory; None if
        the phase is missing from any round."""
        st = self.store.get(phase)
        if st is None or st.rounds != self.rounds:
            return None
        return RoundSeries(st.values.view, np.asarray(st.bounds, dtype=np.int64))


@dataclass
class PhaseRounds:
    values: GrowableArray = field(default_factory=GrowableArray)
    bounds: list[int] = field(default_factory=lambda: [0])
    rounds: list[int] = field(default_factory=list)

    def add(self, round_: int, values: array) -> None:
        self.values.extend(np.frombuffer(values))
        self.bounds.append(len(self.values))
        self.rounds.append(round_)


class Collector:
    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.variants: dict[str, VariantData] = {
            v.name: VariantData(v.name, v.backend, v.spec, v.path, dict(v.options))
            for v in config.variants}
        self.baseline = config.baseline_name
        self.hello: ev.Hello | None = None
        self.ready: ev.Ready | None = None
        self.schedule: list[dict[str, Any]] = []
        self.decomposition: ev.Decomposition | None = None  # a comparison made (not skipped)
        self.tail_rows: list[ev.TailRow] = []
        self.faults: list[Fault] = []
        self.completed_rounds: list[int] = []
        self.warmups: dict[str, int] = {}
        self.created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        self.status = "partial"
        self._threshold: Threshold | None = None

    # -- events ------------------------------------------------------------------------------
    def on_variant(self, e: ev.VariantLoaded) -> None:
        v = self.variants[e.name]
        if e.status == "ok":
            v.status, v.kernel = "ok", e.kernel
            v.phases = list(e.phases)
            if e.provenance:
                v.facts["provenance"] = e.provenance
        else:
            v.status, v.error = "failed", e.error

    def on_iterations(self, e: ev.Iterations) -> None:
        """A block's iterations, as columns; a parent phase gets the sum of its children when
        all of them were timed."""
        v = self.variants[e.variant]
        pending = v.pending[e.round]
        for leaf, col in e.phases.items():
            pending[leaf].extend(col)
        for n, p in v.phases:
            if n in e.phases or p is not None:
                continue
            kids = v.children(n)
            if kids and all(k in e.phases for k in kids):
                cols = [e.phases[k] for k in kids]
                pending[n].extend(sum(xs) for xs in zip(*cols, strict=True))
        pending["total"].extend(e.total_s)

    def on_block(self, e: ev.BlockDone) -> None:
        v = self.variants[e.variant]
        v.blocks[(e.round, e.half)] = e
        for key in FIRST_BLOCK_FACTS:
            if (fact := getattr(e, key)) is not None:
                v.facts.setdefault(key, fact)
        if e.output_sha256:
            v.hashes.append(e.output_sha256)
        self.schedule.append({"round": e.round, "variant": e.variant, "half": e.half,
                              "iterations": e.iterations})

    def on_tail_row(self, e: ev.TailRow) -> None:
        self.tail_rows.append(e)

    def complete_round(self, round_: int, done: list[str]) -> None:
        """The round is over: it holds the variants in `done` whole, and no others (a variant
        whose runner failed inside it loses the round's samples)."""
        if done:
            self.completed_rounds.append(round_)
        for name, v in self.variants.items():
            if name in done:
                v.complete(round_)
            else:
                v.pending.pop(round_, None)

    def drop_unfinished(self) -> None:
        """Forget the samples and blocks of rounds that never completed (a stopped run's last
        round, before the run resumes and measures that round again)."""
        done = set(self.completed_rounds)
        for v in self.variants.values():
            v.pending.clear()
            v.blocks = {k: b for k, b in v.blocks.items() if k[0] in done}
        self.schedule = [s for s in self.schedule if s["round"] in done]

    def fault(self, fault: Fault, fail: str | None = None) -> None:
        """Keep a fault; the variant `fail` (if it is one) failed with it."""
        if fail in self.variants:
            self.variants[fail].status = "failed"
            self.variants[fail].error = fault.message
        self.faults.append(fault)

    # -- derived ------------------------------------------------------------------------------
    def active(self) -> list[str]:
        return [n for n, v in self.variants.items() if v.status == "ok"]

    def threshold(self) -> Threshold:
        """--threshold, this machine's calibration, --noise-floor or the default (see
        core.analysis.resolve_threshold); the calibration is looked up once the runner has
        said which GPU this is (its ready event)."""
        if self._threshold is not None:
            return self._threshold
        cfg = self.config
        stored = None
        if self.ready:
            stored = stored_threshold(cfg, self.ready.gpu, self.ready.device
                                      or (self.hello.device if self.hello else None))
        t = resolve_threshold(cfg.threshold_percent, cfg.noise_floor_percent, stored)
        if self.ready:
            self._threshold = t
            if t.source == SOURCE_CALIBRATION and cfg.noise_floor_percent is None:
                self.config = cfg.model_copy(update={"noise_floor_percent":
                                                     t.noise_floor_percent})
        return t

    def analysis(self, *, drift: bool = False, p50s: dict[str, float | None] | None = None,
                 samples: dict[str, np.ndarray] | None = None) -> Analysis:
        """The one analysis (core.analysis) of what was measured so far; p50s of every
        variant's samples unless given."""
        base = self.variants.get(self.baseline)
        if p50s is None:
            p50s = {n: p50(s.values) if (s := v.series("total")) is not None
                    and len(s.values) else None for n, v in self.variants.items()}
        return analyse({n: v.round_medians() for n, v in self.variants.items()}, p50s,
                       self.baseline if base is not None else None, self.threshold(),
                       samples=samples, drift_of=None if drift else (),
                       verdicts=base is not None and base.status in ("ok", "excluded"))

    def verdicts(self) -> dict[str, vd.Verdict]:
        return self.analysis().verdicts()

    # -- the report ---------------------------------------------------------------------------
    def report(self) -> Report:
        cfg = self.config
        shape = cfg.shape
        rounds_done = sorted(self.completed_rounds)
        done_set = set(rounds_done)
        totals = {n: t.values for n, v in self.variants.items()
                  if v.rounds and (t := v.series("total")) is not None}
        an = self.analysis(drift=True, samples=totals,
                           p50s={n: p50(t) for n, t in totals.items()})
        variants = []
        samples = Samples()
        base = self.variants.get(self.baseline)
        base_sha = base.hashes[0] if base and base.hashes else None
        for name, v in self.variants.items():
            entry: dict[str, Any] = {"name": name, "path": v.path, "backend": v.backend,
                                     "spec": v.spec, "status": v.status if v.status != "pending"
                                     else "failed", "error": v.error}
            rs = v.rounds
            if rs:
                total = v.series("total")
                assert total is not None
                flat = total.values
                entry["rounds"] = list(v.round_summaries)
                entry["timing"] = summarize(flat)
                phase_series = {p: v.series(p) for p in [*(n for n, _ in v.phases), "total"]}
                entry["phase_timings"] = {
                    p: summarize(st.values.view) for p, _ in v.phases
                    if (st := v.store.get(p)) is not None and len(st.values)}
                samples[name] = {p: s for p, s in phase_series.items() if s is not None}
                z_flags = an.variants[name].outliers or []
                where = []
                for i in z_flags:
                    r_i, it = total.locate(i)
                    where.append((rs[r_i], it))
                entry["outliers"] = {"count": len(z_flags), "where": where}
                if (dr := an.variants[name].drift) is not None:
                    entry["drift"] = dr.to_dict()
                by_round: dict[int, list[dict[str, Any]]] = defaultdict(list)
                for (r, _), b in sorted(v.blocks.items()):  # once, not once per round
                    by_round[r].append(b.telemetry or {})
                tel = [merge_blocks(by_round.get(rr, [])) for rr in rs]
                entry["telemetry"] = tel
                ops = _ops(shape)
                gpu = (self.ready.gpu if self.ready else None) or {}
                peak = kernel_peak(gpu.get("name"), v.backend, v.options, shape.dtype)
                entry["achieved"] = _achieved(ops, entry["phase_timings"], entry["timing"],
                                              peak["peak_tops"] if peak else None)
                if peak:
                    entry["peak"] = {"qk_type": peak["qk_type"], "pv_type": peak["pv_type"],
                                     "source": peak["source"]}
            if v.hashes:
                entry["output_sha256"] = v.hashes[-1]
                entry["deterministic"] = len(set(v.hashes)) == 1
                if base_sha:
                    entry["byte_exact"] = v.hashes[-1] == base_sha
                last = v.blocks[max(v.blocks)]
                for k in ("checksum", "max_abs_diff", "mean_abs_diff"):
                    if getattr(last, k) is not None:
                        entry[k] = getattr(last, k)
            entry["input_sha256"] = self.ready.input_sha256 if self.ready else None
            entry.update(v.facts)
            entry["verdict"] = an.verdict_dict(name)
            if name in an.variants:
                entry["speedup_vs_baseline_percent"] = an.variants[name].speedup_p50_percent
            variants.append(entry)
        data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "sagetui", "version": __version__},
            "created_utc": self.created,
            "status": self.status,
            "environment": self._environment(),
            "config": cfg.model_dump(mode="json"),
            "metadata": cfg.metadata or None,
            "layout": shape.layout,
            **shape.tensor_shapes(),
            "warmup": cfg.warmup,
            "iterations": cfg.iterations,
            "iterations_per_round": cfg.iterations,
            "rounds": len(rounds_done),
            "baseline": self.baseline,
            "reference_output_sha256": base_sha,
            "variants": variants,
            "schedule": [s for s in self.schedule if s["round"] in done_set],
            "samples": samples or None,
            "faults": [f.model_dump() for f in self.faults] or None,
        }
        scheduler = self.ready.scheduler if self.ready else None
        if scheduler:
            data["scheduler"] = scheduler
        base_entry = _entry(variants, base.name) if base else {}
        if base and base.status in ("ok", "excluded") and "phase_timings" in base_entry:
            data["phase_timings"] = _entry(variants, base.name)["phase_timings"]
            if base.kernel and any(n == "fused_mainloop" for n, _ in base.phases):
                data["fused_mainloop_phases"] = FUSED_MAINLOOP_PHASES
            data["achieved"] = _entry(variants, base.name).get("achieved")
        d = self.decomposition
        if d and d.equal is not None:
            data["manual_decomposition_vs_public_sage2"] = {
                k: getattr(d, k) for k in ("equal", "max_abs", "mean_abs", "decomposed_sha256",
                                           "public_sha256", "variant")}
            data["manual_checksum"] = d.manual_checksum
            data["reference_checksum"] = d.reference_checksum
        if self.tail_rows:
            data["tail_study"] = [_tail(row, scheduler) for row in self.tail_rows]
        if not variants or not any(e.get("timing") for e in variants):
            data.setdefault("variants", variants)
        return Report.model_validate(_drop_none(data))

    def _environment(self) -> dict[str, Any]:
        from sagetui.core.environment import environment_block, host_facts

        h, r = self.hello, self.ready
        return environment_block(
            runner={"python": h.python, "torch": h.torch, "device": h.device,
                    "protocol": h.protocol} if h else None,
            ready={"device": r.device, "gpu": r.gpu} if r else None, host=host_facts())


def _entry(variants: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(e for e in variants if e["name"] == name)


def _ops(shape) -> float:
    from sagetui.core.derived import shape_ops

    return shape_ops(shape)


def _achieved(ops: float, phases: dict, timing: dict, peak: float | None) -> dict[str, Any]:
    from sagetui.core.derived import call_and_mainloop

    ml = phases.get("fused_mainloop")
    return call_and_mainloop(ops, timing["p50_s"], ml["p50_s"] if ml else None, peak)


def _tail(row: ev.TailRow, sched: dict[str, Any] | None) -> dict[str, Any]:
    from sagetui.core.scheduler import tail_row

    kernel = (sched or {}).get("kernel", "sm89")
    geo = tail_row(row.sweep, kernel, row.q_len, row.kv_len)
    times = [t for t in row.mainloop if t is not None]  # a row with NaN never gets here
    return {**geo, "mainloop": summarize(times), "checksum": row.checksum,
            "variant": row.variant, "phase": row.phase}


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}
