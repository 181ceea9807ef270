"""Per-variant facts, each declared once (nvbench's summaries): its key (the report Variant's or
the sweep point's field, and its CSV header), label, unit, how its value is read (`get`, from a
report Variant or a sweep/workload point: a derived figure is read, never recomputed, here), how
its cell is written (`cell`, core/format.py's formatter for its kind), its raw CSV text (`raw`)
and where it is shown. A getter takes a variant's result (blocks/result.VariantResult: a report
Variant, a point, or the console's live variant as a Variant) and reads its fields by name.
Every per-variant table and export iterates over FACTS; adding a fact is its measurement, its
field in the model and one entry here (docs/architecture.md, "Adding a per-variant fact").

Where (`shown`):

- TABLE: the console's variant table (the host-time facts: it reads the live model's figures);
- RUN: `sagetui run`'s table, one row per variant; MARKDOWN: the Markdown export's;
- KERNEL: the throughput and accuracy table of `run` and of the Markdown export;
- CALLS: a workload's calls (`run --workload`'s table, its Markdown); SWEEP_MD: a sweep's
  Markdown;
- SWEEP_CSV, WORKLOAD_CSV: a sweep's and a workload's rows (a run's CSV holds raw samples only);
- COMPARE: `sagetui compare`'s run table.

A fact of group HOST is shown only where some variant has a host time (on the CPU's clock none
has, and the tables keep their columns for timing); an `optional` one only where some variant
has it (a report written before it was measured shows no empty column). The console's table
reads a live variant's runner facts (VariantFacts) and its live host figures
(run/figures.host_figures) as one Variant; its ACCURACY facts are shown where a variant has one
or is computing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sagetui.core import format as fmt
from sagetui.core.blocks.result import AccuracyBrief, VariantResult
from sagetui.core.blocks.sweep import NOISY_MARK, SweepVariantPoint, noisy
from sagetui.core.report.csv_cell import inert_cell
from sagetui.core.report.model import Variant
from sagetui.core.statistics.threshold import describe_fields

TABLE, RUN, MARKDOWN, KERNEL, CALLS, SWEEP_MD = (
    "table", "run", "markdown", "kernel", "calls", "sweep markdown")
SWEEP_CSV, WORKLOAD_CSV, COMPARE = "sweep csv", "workload csv", "compare"
CSV = frozenset({SWEEP_CSV, WORKLOAD_CSV})
EVERYWHERE = frozenset({TABLE, RUN, MARKDOWN, CALLS, SWEEP_MD, COMPARE}) | CSV
HOST, ACCURACY = "host", "accuracy"


@dataclass(frozen=True)
class At:
    """What a cell may need besides its variant: the report's baseline (its verdict cell says
    "baseline") and when the report was made (a threshold's calibration age)."""

    baseline: str | None = None
    created_utc: str | None = None


def _num(x: Any) -> str:
    """A raw number as its repr (a CSV cell)."""
    return "" if x is None else repr(x)


def _seconds_raw(x: Any) -> str:
    return "" if x is None else f"{x:.9g}"


def _text_raw(x: Any) -> str:
    return "" if x is None else str(x)


def _inert(x: Any) -> str:
    """Words from a report (an error, a reason), made inert for spreadsheets."""
    return inert_cell(x or "")


Getter = Callable[[VariantResult], Any]


def _attr(key: str) -> Getter:
    """Its field of that name, on whichever result holds one (None on another)."""
    def get(v: VariantResult) -> Any:
        return getattr(v, key, None)
    return get


def _acc(key: str) -> Getter:
    """A figure of a variant's accuracy (a report Variant's whole, a point's in brief)."""
    def get(v: VariantResult) -> Any:
        return getattr(v.accuracy_figures(), key, None)
    return get


def _of(path: str) -> Getter:
    """A figure one attribute down ("timing.p50_s", "verdict.state"), None where absent."""
    first, second = path.split(".")

    def get(v: VariantResult) -> Any:
        return getattr(getattr(v, first, None), second, None)
    return get


def _run(get: Callable[[Variant], Any]) -> Getter:
    """A figure only a run's variant has (None on a point)."""
    return lambda v: get(v) if isinstance(v, Variant) else None


def _point(get: Callable[[SweepVariantPoint], Any]) -> Getter:
    """A figure only a point has (None on a run's variant)."""
    return lambda v: get(v) if isinstance(v, SweepVariantPoint) else None


@dataclass(frozen=True)
class Fact:
    key: str  # the field it is read from (by default), and its CSV header
    label: str
    unit: str
    cell: Callable[[Any], str]  # the value as a table cell
    shown: frozenset[str] = EVERYWHERE
    raw: Callable[[Any], str] = _num  # the value as a CSV cell
    get: Getter | None = None  # how its value is read; by default the key's field
    group: str | None = None  # HOST: shown only where some variant has a host time
    optional: bool = False  # shown only where some variant has it
    left: bool = False  # words, aligned left (numbers right)
    short: str | None = None  # its header where the console's table is narrow
    # a cell that needs more than its value (the verdict's baseline, the threshold's age)
    cell_at: Callable[[Any, VariantResult, At], str] | None = field(default=None, compare=False)

    def header(self) -> str:
        return f"{self.label} {self.unit}".strip()

    def align(self) -> str:
        """Its Markdown column's alignment row cell."""
        return "---|" if self.left else "---:|"

    def value(self, v: VariantResult) -> Any:
        return (self.get or _attr(self.key))(v)

    def text(self, v: VariantResult, at: At | None = None) -> str:
        if self.cell_at is not None:
            return self.cell_at(self.value(v), v, at or At())
        return self.cell(self.value(v))

    def raw_text(self, v: VariantResult) -> str:
        return self.raw(self.value(v))


def _bound(host_bound: Any) -> str:
    """Which time bounds a call: "HOST" (marked: the host's time to issue it exceeds its GPU
    time) or "GPU"."""
    return fmt.DASH if host_bound is None else "HOST" if host_bound else "GPU"


def _count(x: Any) -> str:
    return fmt.DASH if x is None else str(x)


def _verdict(vd: Any, v: VariantResult, at: At) -> str:
    if vd is not None:
        return fmt.verdict(vd.model_dump())
    return "baseline" if at.baseline is not None and v.name == at.baseline else fmt.DASH


def _threshold(vd: Any, _v: VariantResult, at: At) -> str:
    return describe_fields(vd.model_dump() if vd is not None else None, at.created_utc)


def _drift(d: Any) -> str:
    return fmt.drift(d.model_dump() if d is not None else None)[0]


def _share(v: Variant) -> tuple[Any, Any, Any]:
    ach = v.achieved or {}
    types = (v.peak.qk_type, v.peak.pv_type) if v.peak else None
    return ach.get("call_share_of_peak"), ach.get("peak_tops"), types


def p50_text(v: SweepVariantPoint) -> str:
    """A point's p50 with its interval."""
    if v.timing is None:
        return fmt.DASH
    ci = f" {fmt.half_width(v.p50_ci_percent)}" if v.p50_ci_percent is not None else ""
    return f"{fmt.ms(v.timing.p50_s)}{ci}"


def p50_cell(v: SweepVariantPoint) -> str:
    """The p50 with its interval, and NOISY_MARK after it where the interval is too wide to
    trust (sweep/plan.noisy; sweep/export.noisy_note says what the mark means)."""
    return p50_text(v) + (f" {NOISY_MARK}" if noisy(v) else "")


def _fixed3(x: Any) -> str:
    return fmt.DASH if x is None else f"{x:.3f}"


def _share_pct(x: Any) -> str:
    return fmt.share(x)


def accuracy_text(acc: AccuracyBrief | None) -> str:
    """A point's accuracy in one cell: cosine, relative L1, the worst head, and its difference
    from the baseline's output."""
    if acc is None:
        return fmt.DASH
    parts = []
    if acc.cosine_similarity is not None:
        parts.append(f"cos {acc.cosine_similarity:.5f}")
    if acc.relative_l1 is not None:
        parts.append(f"L1 {fmt.share(acc.relative_l1, 2)}")
    if acc.worst_head is not None:
        l1 = acc.worst_head_relative_l1
        parts.append(f"worst head {acc.worst_head} "
                     + (fmt.share(l1, 2) if l1 is not None else "not finite"))
    if acc.byte_exact:
        parts.append(f"= {acc.against}")
    elif acc.max_abs_diff is not None:
        parts.append(f"max |Δ| {acc.max_abs_diff:.3g} vs {acc.against}")
    return " · ".join(parts) or fmt.DASH


_RUN = frozenset({RUN, MARKDOWN})
_POINTS_CSV = CSV

FACTS: tuple[Fact, ...] = (
    Fact("kernel_phase", "kernel phase", "", _text_raw, frozenset({SWEEP_CSV}), raw=_text_raw),
    # a run's variants (`run`'s table, the Markdown): the two-build report's p50 speedup and the
    # verdict's paired estimate, labelled apart
    Fact("p50_s", "p50", "ms", fmt.ms, _RUN | _POINTS_CSV, get=_of("timing.p50_s")),
    Fact("p50", "p50", "ms ± CI", p50_cell, frozenset({SWEEP_MD, CALLS}), get=_point(lambda v: v)),
    Fact("p50_ci_percent", "p50 CI", "%", fmt.half_width, _POINTS_CSV),
    Fact("kernel_p50_s", "kernel p50", "ms", fmt.ms, frozenset({SWEEP_CSV}),
         get=_point(lambda v: v.kernel_timing and v.kernel_timing.p50_s)),
    Fact("kernel_p50_ci_percent", "kernel p50 CI", "%", fmt.half_width, frozenset({SWEEP_CSV})),
    Fact("noisy", "noisy", "", str, _POINTS_CSV,
         get=_point(lambda v: noisy(v) if v.status == "ok" else None), raw=_text_raw),
    Fact("p90_s", "p90", "ms", fmt.ms, _RUN, get=_of("timing.p90_s")),
    Fact("speedup_vs_baseline_percent", "p50 speedup", "%", lambda x: fmt.pct(x, 3), _RUN),
    Fact("verdict", "verdict: paired", "% [95% CI]", str, _RUN, cell_at=_verdict, left=True),
    Fact("verdict", "verdict", "", str, frozenset({CALLS}), cell_at=_verdict, left=True),
    Fact("verdict", "verdict", "", str, frozenset({WORKLOAD_CSV}), get=_of("verdict.state"),
         raw=_text_raw),
    Fact("estimate_percent", "estimate", "%", fmt.pct, frozenset({WORKLOAD_CSV}),
         get=_of("verdict.estimate_percent")),
    Fact("ci_low_percent", "CI low", "%", fmt.pct, frozenset({WORKLOAD_CSV}),
         get=_of("verdict.ci_low_percent")),
    Fact("ci_high_percent", "CI high", "%", fmt.pct, frozenset({WORKLOAD_CSV}),
         get=_of("verdict.ci_high_percent")),
    Fact("threshold", "SAME threshold", "", str, _RUN, get=_attr("verdict"),
         cell_at=_threshold, left=True),
    Fact("drift", "drift", "%/rnd", _drift, _RUN),
    Fact("byte_exact", "byte-exact", "", lambda x: fmt.DASH if x is None else str(x), _RUN,
         left=True),
    # throughput against each kernel's own peak, and accuracy against fp32 attention
    Fact("sdpa_backend", "SDPA ran", "", lambda x: x or fmt.DASH, frozenset({KERNEL}),
         left=True),
    Fact("call_tops", "TOPS", "", fmt.tops, frozenset({KERNEL}),
         get=_run(lambda v: (v.achieved or {}).get("call_tops"))),
    Fact("call_share_of_peak", "share of peak", "(QK/PV types)",
         lambda x: fmt.share_of_peak(*x), frozenset({KERNEL}), get=_run(_share), left=True),
    Fact("kernel_tops", "kernel", "TOPS", _fixed3, frozenset({SWEEP_MD, SWEEP_CSV})),
    Fact("e2e_tops", "e2e", "TOPS", _fixed3, frozenset({SWEEP_MD, SWEEP_CSV})),
    Fact("kernel_share_of_peak", "share of peak", "", _share_pct,
         frozenset({SWEEP_MD, SWEEP_CSV})),
    Fact("e2e_share_of_peak", "e2e share of peak", "", _share_pct, frozenset({SWEEP_CSV})),
    Fact("accuracy", "accuracy", "", accuracy_text, frozenset({SWEEP_MD, CALLS}),
         get=_point(lambda v: v.accuracy_brief), left=True),
    # (the console's table: group ACCURACY, shown where a variant has one or is computing it)
    Fact("cosine_similarity", fmt.ACCURACY_COLUMNS["cos"], "", fmt.cosine,
         frozenset({TABLE, KERNEL}) | _POINTS_CSV, get=_acc("cosine_similarity"),
         group=ACCURACY, short="cos"),
    Fact("relative_l1", fmt.ACCURACY_COLUMNS["l1"], "", fmt.fraction_pct,
         frozenset({TABLE, KERNEL}) | _POINTS_CSV, get=_acc("relative_l1"), group=ACCURACY,
         short="L1 %"),
    Fact("rmse", fmt.ACCURACY_COLUMNS["rmse"], "", fmt.sci, frozenset({KERNEL}),
         get=_acc("rmse")),
    Fact("max_abs_error", fmt.ACCURACY_COLUMNS["max"], "", fmt.sci, frozenset({KERNEL}),
         get=_acc("max_abs_error")),
    Fact("worst_head", "worst head", "", _text_raw, _POINTS_CSV, get=_acc("worst_head")),
    Fact("worst_head_relative_l1", "worst head rel L1", "", fmt.fraction_pct, _POINTS_CSV,
         get=_acc("worst_head_relative_l1")),
    Fact("max_abs_diff", "max |Δ|", "", fmt.sci, frozenset({SWEEP_CSV}),
         get=_acc("max_abs_diff")),
    # a call's own words: a workload's skipped call, a failed variant's error (CSV only)
    Fact("skipped", "skipped", "", _text_raw, frozenset({WORKLOAD_CSV}), get=lambda v: None,
         raw=_inert),
    Fact("error", "error", "", _text_raw, _POINTS_CSV, raw=_inert),
    # the runner's facts (report/model.VariantFacts)
    Fact("first_call_s", "first call", "ms", fmt.ms, frozenset({MARKDOWN, COMPARE}),
         raw=_seconds_raw, optional=True),
    Fact("load_s", "load", "ms", fmt.ms, EVERYWHERE - {TABLE}, raw=_seconds_raw, optional=True),
    # host time and back-to-back time (core/host_time.py), each of the call the user makes
    # (`timed_call`), with that call's own GPU time beside the phases' sum
    Fact("host_s", "host", "ms", fmt.ms, raw=_seconds_raw, group=HOST),
    Fact("call_gpu_s", "call GPU", "ms", fmt.ms, raw=_seconds_raw, group=HOST, optional=True,
         short="call"),
    Fact("back_to_back_s", "b2b", "ms", fmt.ms, raw=_seconds_raw, group=HOST),
    Fact("host_bound", "bound", "", _bound, raw=lambda x: "" if x is None else str(bool(x)),
         group=HOST, left=True),
    Fact("redone_blocks", "redone", "blocks", _count,
         frozenset({MARKDOWN, SWEEP_MD}) | CSV, raw=_text_raw, group=HOST),
    # kept drained after every redo: its GPU time is the host's pace (never silently)
    Fact("drained_blocks", "drained", "blocks", _count,
         frozenset({MARKDOWN, SWEEP_MD}) | CSV, raw=_text_raw, group=HOST),
    # how near host-bound a call is (core/host_time.host_share)
    Fact("host_share", "host/GPU", "", fmt.share, EVERYWHERE - {TABLE}, group=HOST,
         optional=True),
    Fact("timed_call", "timed call", "(host, call GPU, b2b)", lambda x: x or fmt.DASH,
         frozenset({MARKDOWN, COMPARE}) | CSV, raw=_inert, group=HOST, optional=True,
         left=True),
)


def measured(variants: Iterable[VariantResult] | None) -> bool:
    """Whether any of these variants (report Variants, points) has a host time."""
    return any(v.host_s is not None for v in variants or ())


def shown_in(where: str) -> list[Fact]:
    """Every fact shown in `where`, in the registry's order (whatever the variants hold)."""
    return [f for f in FACTS if where in f.shown]


def columns(where: str, variants: Iterable[VariantResult] | None = None) -> list[Fact]:
    """The facts `where` shows for these variants: a HOST fact only where some variant has a
    host time, an optional one only where some variant has it."""
    vs = list(variants or ())
    host = measured(vs)
    return [f for f in shown_in(where)
            if (f.group != HOST or host)
            and (not f.optional or any(f.value(v) is not None for v in vs))]


def headers(where: str | list[Fact]) -> list[str]:
    return [f.header() for f in (shown_in(where) if isinstance(where, str) else where)]


def cells(values: VariantResult, where: str | list[Fact], at: At | None = None) -> list[str]:
    """The facts' cells of one variant (a report Variant, a point)."""
    return [f.text(values, at) for f in (shown_in(where) if isinstance(where, str) else where)]


def raw_cells(values: VariantResult | None, where: str | list[Fact]) -> list[str]:
    """The facts' CSV cells of one variant; `values` None: blank cells."""
    facts = shown_in(where) if isinstance(where, str) else where
    return ["" if values is None else f.raw_text(values) for f in facts]


def blank_row(facts: list[Fact], **given: str) -> list[str]:
    """A row without a variant (a skipped call, a failed point): blank but for `given`."""
    return [given.get(f.key, "") for f in facts]


def timed_call_note(calls: Iterable[tuple[str, str | None]], short: bool = False) -> str | None:
    """Which call the host, call GPU and back-to-back times are of (core/host_time.py), from
    each variant's (name, timed_call), variants of one call named together: "host, call GPU and
    b2b time the call the user makes: sdpa torch.nn.functional.scaled_dot_product_attention;
    a, b the decomposition (...)"; `short`: the function's own name."""
    by_call: dict[str, list[str]] = {}  # variants that time one call: named once
    for n, c in calls:
        if c:
            by_call.setdefault(c, []).append(n)
    if not by_call:
        return None

    def name(c: str) -> str:
        return c.rsplit(".", 1)[-1] if short and not c.startswith("the ") else c
    return ("host, call GPU and b2b time the call the user makes: "
            + "; ".join(f"{', '.join(ns)} {name(c)}" for c, ns in by_call.items()))


def clock_notes(report: Any) -> list[str]:
    """The verdict lines' notes on clocks (core/statistics/clocks.py) of a report's variants:
    each whose SM clocks differed from the baseline's by more than its time estimate's
    half-width."""
    return [v.clocks.note for v in report.variants or []
            if v.clocks is not None and v.clocks.note]
