"""A variant's derived figures, computed once here for the report (assemble.py) and for every
panel that shows them: the same function gives the number on screen and the number on disk.

`of(m, v)` is a variant's figures as one typed object (`Figures`), made once per model version
(`RunModel.version`, which the fold moves) and kept on the model: each figure is computed the
first time it is read at that version and never again, so the console, which asks at 2 Hz,
computes nothing that did not change, and nothing no panel reads.

A model loaded from a report (`v.recorded`) gives back what the report recorded: a saved
report is shown as it was written (`sagetui check` says whether its numbers still agree with
its samples), never recomputed behind the user's back. `_figure` is the one place a recorded
entry and a measurement part: every figure is read through it, as `Figures`' fields and as the
module's functions of the same names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sagetui.core.blocks.result import HostTimes
from sagetui.core.config import Shape
from sagetui.core.derived import call_and_mainloop, shape_ops
from sagetui.core.host_time import host_bound, host_share, typical
from sagetui.core.options import with_defaults
from sagetui.core.peaks import KernelPeak, kernel_peak
from sagetui.core.phases import FUSED_MAINLOOP_PHASES
from sagetui.core.report.model import Variant
from sagetui.core.run.model import TOTAL, RunModel, VariantModel
from sagetui.core.run.quantiles import QuantileView
from sagetui.core.scheduler import FALLBACK_KERNEL, TILES, grid_facts, kernel_of, tail_row
from sagetui.core.sol import (
    compute_phase,
    gpu_copy_gbps,
    max_clock,
    mean_sm_clock,
    phase_traffic,
    speed_of_light,
)
from sagetui.core.statistics.analysis import Analysis, analyse
from sagetui.core.statistics.clocks import clock_note, cycle_medians, mean_clocks
from sagetui.core.statistics.intervals import half_percent
from sagetui.core.statistics.summary import medians_by_round, p50, summarize
from sagetui.core.statistics.threshold import resolve_threshold
from sagetui.core.telemetry import merge_blocks

MAINLOOP = "fused_mainloop"


def shape(m: RunModel) -> Shape | None:
    return m.config.shape if m.config is not None else None


def phase_order(v: VariantModel) -> list[str]:
    """The phases measured, parents before their children, as the backend declared them."""
    return [n for n, _ in v.phases if n in v.samples and len(v.samples[n])]


class _Unrecorded:
    """A report entry without the figure (one made before it was recorded): measured."""


UNRECORDED = _Unrecorded()


def _dump(x: Any) -> Any:
    return x.model_dump() if x is not None else None


def _host_recorded(r: Variant) -> dict[str, Any]:
    return r.model_dump(include=set(HostTimes.model_fields), exclude_none=True)


_OUTPUT_FIELDS = ("output_sha256", "deterministic", "byte_exact", "checksum", "max_abs_diff",
                  "mean_abs_diff")

# what a report entry recorded of each figure (UNRECORDED: measure it from the model)
_RECORDED: dict[str, Callable[[Variant], Any]] = {
    "timing": lambda r: _dump(r.timing) if r.timing is not None else UNRECORDED,
    "rounds": lambda r: [s.model_dump() for s in r.rounds or []],
    "phase_timings": lambda r: ({n: s.model_dump() for n, s in r.phase_timings.items()}
                                if r.phase_timings is not None else UNRECORDED),
    "intervals": lambda r: dict(r.intervals or {}),
    "telemetry": lambda r: [t.model_dump() for t in r.telemetry or []],
    "options": lambda r: dict(r.options) if r.options is not None else UNRECORDED,
    "scheduler": lambda r: (r.scheduler.model_dump(exclude_none=True)
                            if r.scheduler is not None else UNRECORDED),
    "achieved": lambda r: dict(r.achieved) if r.achieved else None,
    "sol": lambda r: r.sol.model_dump(exclude_none=True) if r.sol else None,
    "host": _host_recorded,
    "outputs": lambda r: {k: getattr(r, k) for k in _OUTPUT_FIELDS
                          if getattr(r, k) is not None},
}


def _figure(v: VariantModel, name: str, measure: Callable[[], Any]) -> Any:
    """The one place a loaded report's entry and a measurement part: what `v`'s entry
    recorded of figure `name`, else `measure()` (a live run's, or a figure the report did not
    record)."""
    if v.recorded is not None:
        got = _RECORDED[name](v.recorded)
        if got is not UNRECORDED:
            return got
    return measure()


@dataclass(frozen=True, eq=False)
class Figures:
    """A variant's derived figures at one version of its model (`of`): a live run's measured,
    a loaded report's as its entry recorded them, the same fields either way. Each is computed
    when first read and kept (do not modify what they hold)."""

    m: RunModel
    v: VariantModel
    version: int
    baseline: str | None

    @cached_property
    def timing(self) -> dict[str, Any] | None:
        return timing(self.v)

    @property
    def p50_s(self) -> float | None:
        """The whole call's p50 (the quick one: no summary of every sample)."""
        q = self.quantiles()
        return q[0] if q else None

    @cached_property
    def p50s(self) -> dict[str, float]:
        """Each measured phase's p50 and the whole call's (TOTAL), the quick ones."""
        out = {}
        for n in dict.fromkeys([*phase_order(self.v), MAINLOOP, TOTAL]):
            q = self.quantiles(n)
            if q is not None:
                out[n] = q[0]
        return out

    def quantiles(self, phase: str = TOTAL) -> tuple[float, float] | None:
        """(p50, p90) of a phase (TOTAL: the whole call): its summary's, a live run's by the
        quick selection over its completed rounds (core/run/quantiles.py, bit for bit the
        summary's) rather than a summary of every sample at every version."""
        if self.v.recorded is None:
            ps = self.v.samples.get(phase)
            if ps is None:
                return None
            view = self.m.views.get((self.v.name, phase))
            if view is None:
                view = self.m.views[(self.v.name, phase)] = QuantileView()
            return view.quantiles(ps)
        s = self.timing if phase == TOTAL else self.phase_timings.get(phase)
        return (s["p50_s"], s["p90_s"]) if s else None

    def count(self, phase: str = TOTAL) -> int | None:
        """The samples of a phase its quantiles are of (its completed rounds')."""
        if self.v.recorded is None:
            ps = self.v.samples.get(phase)
            return len(ps) if ps else None
        s = self.timing if phase == TOTAL else self.phase_timings.get(phase)
        return s["count"] if s else None

    @cached_property
    def rounds(self) -> list[dict[str, Any]]:
        return rounds(self.v)

    @cached_property
    def phase_timings(self) -> dict[str, dict[str, Any]]:
        return phase_timings(self.v)

    @cached_property
    def intervals(self) -> dict[str, float]:
        return intervals(self.v)

    @cached_property
    def telemetry(self) -> list[dict[str, Any]]:
        return telemetry(self.v)

    @cached_property
    def outputs(self) -> dict[str, Any]:
        return outputs(self.v, self.m.variants.get(self.baseline or ""))

    @cached_property
    def options(self) -> dict[str, Any]:
        return resolved_options(self.v)

    @cached_property
    def kernel(self) -> str | None:
        return kernel(self.m, self.v)

    @cached_property
    def scheduler(self) -> dict[str, Any] | None:
        return scheduler(self.m, self.v)

    @cached_property
    def peak(self) -> KernelPeak | None:
        return peak(self.m, self.v)

    @cached_property
    def achieved(self) -> dict[str, float | None] | None:
        return _figure(self.v, "achieved", lambda: measured_achieved(self.m, self.v, self.p50s))

    @cached_property
    def sol(self) -> dict[str, Any] | None:
        return _figure(self.v, "sol", lambda: measured_sol(
            self.m, self.v, {n: x for n, x in self.p50s.items()
                             if n in dict(self.v.phases) and n != TOTAL}))

    @cached_property
    def host(self) -> dict[str, Any]:
        return host_figures(self.v, self.p50_s)


def of(m: RunModel, v: VariantModel) -> Figures:
    """`v`'s figures at the model's version: made once per version (and baseline: a variant's
    byte-exactness is against the baseline's output) and kept on the model."""
    got = m.figures.get(v.name)
    if got is None or got.v is not v or got.version != m.version \
            or got.baseline != m.baseline:
        got = m.figures[v.name] = Figures(m, v, m.version, m.baseline)
    return got


def timing(v: VariantModel) -> dict[str, Any] | None:
    """The whole call's summary over every completed round."""
    return _figure(v, "timing", lambda: measured_timing(v))


def measured_timing(v: VariantModel) -> dict[str, Any] | None:
    total = v.samples.get(TOTAL)
    return summarize(total.values) if total is not None and len(total) else None


def p50_of(v: VariantModel) -> float | None:
    t = timing(v)
    return t["p50_s"] if t else None


def rounds(v: VariantModel) -> list[dict[str, Any]]:
    """The whole call's summary of each completed round, in order."""
    return _figure(v, "rounds", lambda: [v.round_summaries[r] for r in v.completed_rounds
                                               if r in v.round_summaries])


def phase_timings(v: VariantModel) -> dict[str, dict[str, Any]]:
    """Each measured phase's summary over every completed round."""
    return _figure(v, "phase_timings",
                   lambda: {n: summarize(v.samples[n].values) for n in phase_order(v)})


def round_medians(v: VariantModel, phase: str = TOTAL) -> dict[int, float]:
    """Completed round -> that round's median of `phase` (the total's are kept as rounds end;
    a phase's are computed from its samples)."""
    if phase == TOTAL and v.round_medians:
        return dict(v.round_medians)
    s = v.samples.get(phase)
    if s is None:
        if phase == TOTAL and v.recorded is not None:
            return {i: r.p50_s for i, r in enumerate(v.recorded.rounds or [])}
        return {}
    series = s.series()
    return dict(zip(s.rounds, medians_by_round(series.values, series.bounds).tolist(),
                    strict=True))


def intervals(v: VariantModel) -> dict[str, float]:
    """The 95 % half-width (percent) of each phase's and the total's typical round median."""
    return _figure(v, "intervals", lambda: measured_intervals(v))


def measured_intervals(v: VariantModel) -> dict[str, float]:
    """intervals() from the samples, whatever a report recorded (`sagetui check`)."""
    out = {}
    for phase in [*phase_order(v), TOTAL]:
        h = measured_interval(v, phase)
        if h is not None:
            out[phase] = h
    return out


def interval(v: VariantModel, phase: str = TOTAL) -> float | None:
    """intervals() of one phase (the console's phase table asks row by row)."""
    if v.recorded is not None:
        return intervals(v).get(phase)
    return measured_interval(v, phase)


def measured_interval(v: VariantModel, phase: str = TOTAL) -> float | None:
    """The 95 % half-width (percent) of one phase's typical round median, from its completed
    rounds' medians."""
    return half_percent(list(round_medians(v, phase).values()))


def telemetry(v: VariantModel) -> list[dict[str, Any]]:
    """Each completed round's telemetry, its blocks merged."""
    return _figure(v, "telemetry",
                   lambda: [merged_telemetry(v, r) for r in v.completed_rounds])


def merged_telemetry(v: VariantModel, r: int) -> dict[str, Any]:
    """Round r's telemetry, its blocks (its two halves: session/schedule.py) merged."""
    return merge_blocks(v.blocks[k].telemetry for k in ((r, 0), (r, 1)) if k in v.blocks)


def round_telemetry(v: VariantModel) -> dict[int, dict[str, Any]]:
    """telemetry() keyed by round number (the plots' x)."""
    numbers = v.completed_rounds or list(range(len(rounds(v))))
    return dict(zip(numbers, telemetry(v), strict=False))


def outputs(v: VariantModel, base: VariantModel | None) -> dict[str, Any]:
    """Its last output's sha256 and checksum, whether its output was the same every block,
    whether it equals the baseline's first output byte for byte, and by how much not."""
    return _figure(v, "outputs", lambda: measured_outputs(v, base))


def measured_outputs(v: VariantModel, base: VariantModel | None) -> dict[str, Any]:
    # its last block that made an output (one stopped before its first call made none)
    last = next((b for _, b in sorted(v.blocks.items(), reverse=True) if b.output_sha256),
                None)
    if last is None:
        return {}
    out: dict[str, Any] = {"output_sha256": last.output_sha256,
                           "deterministic": len(v.output_hashes) == 1}
    if base is not None and base.first_output_sha256:
        out["byte_exact"] = last.output_sha256 == base.first_output_sha256
    for k in ("checksum", "max_abs_diff", "mean_abs_diff"):
        if getattr(last, k) is not None:
            out[k] = getattr(last, k)
    return out


def resolved_options(v: VariantModel) -> dict[str, Any]:
    """The options it ran with: the configured ones over the backend's defaults; for
    sage2-auto, those its dispatch ran with (the runner's `dispatch` fact)."""
    return _figure(v, "options", lambda: options_as_ran(v))


def options_as_ran(v: VariantModel) -> dict[str, Any]:
    """resolved_options() from the configuration and the dispatch, whatever a report recorded
    (`sagetui check`)."""
    dispatched = v.facts.dispatch.options if v.facts.dispatch else {}
    return {**dispatched, **with_defaults(v.backend or "", v.options)}


def kernel(m: RunModel, v: VariantModel) -> str | None:
    """The tile configuration it runs: the runner's word, else (a report before schema 3)
    what its backend and options imply on the report's GPU."""
    if v.kernel:
        return v.kernel
    gpu = m.ready.get("gpu") or {}
    return kernel_of(v.backend, v.options, gpu.get("capability"))


def scheduler(m: RunModel, v: VariantModel) -> dict[str, Any] | None:
    """Its own grid: its kernel's tiles over the run's shape, waves over this GPU's SMs."""
    return _figure(v, "scheduler", lambda: own_grid(m, v))


def own_grid(m: RunModel, v: VariantModel, k: str | None = None) -> dict[str, Any] | None:
    """scheduler() from the kernel (its own, or `k`), the shape and the GPU, whatever a report
    recorded (`sagetui check`)."""
    k, s = k or kernel(m, v), shape(m)
    if k is None and v.backend is None and m.report is not None and m.report.scheduler:
        # a report made elsewhere (the two-build report) keeps one grid for builds of one kernel
        return m.report.scheduler.model_dump(exclude_none=True)
    if k is None or s is None or k not in TILES:
        return None
    gpu = m.ready.get("gpu") or {}
    return grid_facts(k, batch=s.batch, heads=s.heads, q_len=s.q_len, kv_len=s.n_kv_len,
                          head_dim=s.head_dim, causal=s.causal, sm_count=gpu.get("sm_count"),
                          smem_per_sm=gpu.get("smem_per_sm"))


def peak(m: RunModel, v: VariantModel) -> KernelPeak | None:
    """The datasheet peak of its own tensor-core types on this GPU (core/peaks.py)."""
    s = shape(m)
    if s is None or not v.backend:
        return None
    return kernel_peak((m.ready.get("gpu") or {}).get("name"), v.backend, v.options, s.dtype)


def achieved(m: RunModel, v: VariantModel) -> dict[str, float | None] | None:
    """Its TOPS and share of its own peak, for the whole call and its main loop."""
    return _figure(v, "achieved", lambda: measured_achieved(m, v))


def measured_achieved(m: RunModel, v: VariantModel,
                      p50s: dict[str, float] | None = None) -> dict[str, float | None] | None:
    """achieved() from the samples; `p50s`: the whole call's and the main loop's p50s where
    the caller has them (Figures' quick ones), else their summaries'."""
    if p50s is None:
        t, ml = timing(v), v.samples.get(MAINLOOP)
        p50s = {TOTAL: t["p50_s"]} if t is not None else {}
        if ml is not None and len(ml):
            p50s[MAINLOOP] = p50(ml.values)
    s = shape(m)
    if TOTAL not in p50s or s is None:
        return None
    pk = peak(m, v)
    return call_and_mainloop(shape_ops(s), p50s[TOTAL], p50s.get(MAINLOOP),
                             pk["peak_tops"] if pk else None)


def sol(m: RunModel, v: VariantModel,
        p50s: dict[str, float] | None = None) -> dict[str, Any] | None:
    """Its speed of light per phase (core/sol.py): bytes, GB/s and share of the copy
    bandwidth per phase; the main loop's TOPS against the clock-adjusted ceiling. `p50s`: the
    phases' p50s where the caller has them already (the console's), else its phase timings'."""
    return _figure(v, "sol", lambda: measured_sol(m, v, p50s))


def measured_sol(m: RunModel, v: VariantModel,
                 p50s: dict[str, float] | None = None) -> dict[str, Any] | None:
    s = shape(m)
    if s is None or not v.backend:
        return None
    if p50s is None:
        p50s = {n: t["p50_s"] for n, t in phase_timings(v).items()}
    gpu = m.ready.get("gpu") or {}
    pk = peak(m, v)
    return speed_of_light(
        phase_traffic(v.backend, kernel(m, v), resolved_options(v), s.model_dump()), p50s,
        gpu_copy_gbps(gpu), ops=shape_ops(s), compute_phase=compute_phase(p50s),
        peak_tops=pk["peak_tops"] if pk else None, mean_clock_mhz=mean_sm_clock(telemetry(v)),
        max_clock_mhz=max_clock(gpu))


def host_figures(v: VariantModel, p50_s: float | None = None) -> dict[str, Any]:
    """What the user's model pays (core/host_time.py): per completed round the host time, GPU
    time and back-to-back time of one call the user makes, the medians over the rounds,
    whether it is host-bound (host time over the call's GPU time), and its blocks measured
    again (and kept drained). `p50_s`: the GPU time a stream recorded before the call's own
    GPU time is held against (the console's p50 where it has it, else its timing's)."""
    return _figure(v, "host", lambda: measured_host(v, p50_s))


def measured_host(v: VariantModel, p50_s: float | None = None) -> dict[str, Any]:
    by_round: dict[int, list[Any]] = {}  # sorted once: a sort per round was O(rounds^2)
    for k, b in sorted(v.blocks.items()):
        by_round.setdefault(k[0], []).append(b)
    per_round = [by_round.get(r, []) for r in v.completed_rounds]
    blocks = [b for bs in per_round for b in bs]
    host = [x for bs in per_round if (x := _mean(b.host_call_s for b in bs)) is not None]
    call_gpu = [x for bs in per_round if (x := _mean(b.call_gpu_s for b in bs)) is not None]
    b2b = [x for bs in per_round if (x := _mean(b.back_to_back_s for b in bs)) is not None]
    if not host and not b2b:  # a stream recorded before these figures
        return {}
    call_gpu_s = typical(call_gpu)
    gpu = call_gpu_s if call_gpu_s is not None else p50_s if p50_s is not None else p50_of(v)
    out: dict[str, Any] = {"host_times_s": host or None, "back_to_back_times_s": b2b or None,
                           "call_gpu_times_s": call_gpu or None, "call_gpu_s": call_gpu_s,
                           "host_s": typical(host), "back_to_back_s": typical(b2b),
                           "host_bound": host_bound(typical(host), gpu),
                           "host_share": host_share(typical(host), gpu),
                           "redone_blocks": sum(1 for b in blocks if b.redone),
                           "drained_blocks": sum(1 for b in blocks if b.drained)}
    return {k: x for k, x in out.items() if x is not None}


def _mean(values: Any) -> float | None:
    got = [x for x in values if x is not None]
    return sum(got) / len(got) if got else None


def clocks(m: RunModel, an: Analysis) -> dict[str, dict[str, Any]]:
    """Each variant's clocks (core/statistics/clocks.py): its mean SM clock and power, its
    verdict in cycles (the time verdicts' analysis, on round medians x round clocks) and the
    verdict line's note; none without telemetry."""
    out: dict[str, dict[str, Any]] = {}
    live = {n: v for n, v in m.variants.items() if v.recorded is None}
    for n, v in m.variants.items():
        if v.recorded is not None and v.recorded.clocks is not None:
            out[n] = v.recorded.clocks.model_dump(exclude_none=True)
    if not live:
        return out
    cycles = analyse({n: cycle_medians(round_medians(v), round_telemetry(v))
                      for n, v in live.items()}, {}, an.baseline, an.threshold, drift_of=())
    means = {n: mean_clocks(telemetry(v)) for n, v in live.items()}
    base = means.get(an.baseline or "")
    for n in live:
        if means[n] is None:
            continue
        entry: dict[str, Any] = {**means[n]}  # type: ignore[dict-item]
        cv = cycles.verdict_dict(n)
        if cv is not None:
            entry["cycles_verdict"] = cv
        note = clock_note(n, means[n], base, an.verdict_dict(n), cv)
        if note:
            entry["note"] = note
        out[n] = {k: x for k, x in entry.items() if x is not None}
    return out


def analysis_inputs(m: RunModel, *, drift: bool = True, outliers: bool = True
                    ) -> dict[str, Any]:
    """analyse()'s arguments for what the model measured (cheap: the console gathers them on
    its own thread and analyses in a worker, since the analysis imports scipy)."""
    base = m.variants.get(m.baseline or "")
    totals = {n: v.samples[TOTAL].values for n, v in m.variants.items()
              if TOTAL in v.samples and len(v.samples[TOTAL])}
    p50s: dict[str, float | None] = {n: p50(x) for n, x in totals.items()}
    for n, v in m.variants.items():
        p50s.setdefault(n, p50_of(v))
    return {"round_medians": {n: round_medians(v) for n, v in m.variants.items()},
            "p50s": p50s, "baseline": m.baseline if base is not None else None,
            "threshold": m.threshold or resolve_threshold(),
            "samples": totals if outliers else None, "drift_of": None if drift else (),
            "verdicts": base is not None and base.status in ("ok", "excluded")}


def analysis(m: RunModel, *, drift: bool = True, outliers: bool = True) -> Analysis:
    """The one analysis (core/statistics/analysis.py) of what the model measured: speedups,
    verdicts against the baseline with the run's threshold, drift and outlier flags (drift and
    outliers cost time a round of milliseconds does not wait for: the session asks for them
    at most every half second, and for the report)."""
    return analyse(**analysis_inputs(m, drift=drift, outliers=outliers))


def outlier_where(v: VariantModel, flags: list[int]) -> list[tuple[int, int]]:
    """(round, iteration) of each flagged sample of the whole call (indices into its kept
    samples, as the analysis flags them)."""
    total = v.samples[TOTAL].series()
    return [(v.completed_rounds[r_i], it) for r_i, it in map(total.locate, flags)]


def tail_rows(m: RunModel) -> list[dict[str, Any]]:
    """The tail study's rows as the report keeps them: each row's geometry (its variant's
    kernel's tiles) and the summary of its main-loop times."""
    if m.report is not None:
        return list(m.tail_rows)
    out = []
    for row in m.tail_rows:
        v = m.variants.get(row.get("variant") or "")
        k = (kernel(m, v) if v is not None else None) or FALLBACK_KERNEL
        times = [t for t in row["mainloop"] if t is not None]
        out.append({**tail_row(row["sweep"], k, row["q_len"], row["kv_len"]),
                    "mainloop": summarize(times), "checksum": row.get("checksum"),
                    "variant": row.get("variant"), "phase": row.get("phase")})
    return out


def fused_notes(m: RunModel) -> dict[str, str] | None:
    """The phase-breakdown report's note on the phases fused inside the main loop, where a variant
    has one."""
    if m.report is not None:
        return m.report.fused_mainloop_phases
    if any(MAINLOOP in dict(v.phases) for v in m.variants.values()):
        return dict(FUSED_MAINLOOP_PHASES)
    return None
