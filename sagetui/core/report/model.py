"""The report model: every field of the two reference reports, with the same names and units
(seconds), plus what sagetui adds. A reference report validates as it is; a report that
sagetui writes and reads back is equal to what it wrote.

All reference fields are optional, because 000 (a phase breakdown) and 001 (a variant
comparison) each carry a different subset. Unknown fields are refused, so that a typo or a
report of a newer schema is named rather than silently dropped; free-form workload facts go
under `metadata`, which travels as given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    PlainSerializer,
    SerializationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from sagetui.core.blocks.base import (
    Count,
    Fault,
    Model,
    SameThreshold,
    Scheduler,
    Sha256,
    Summary,
    VerdictRecord,
)
from sagetui.core.blocks.profile import MainloopProfile, ProfileDiff
from sagetui.core.blocks.result import (
    AccuracyMetrics,
    Cosine,
    NonNegative,
    RunnerFacts,
    VariantResult,
)
from sagetui.core.blocks.swap import Swap
from sagetui.core.blocks.sweep import Sweep
from sagetui.core.blocks.workload import Workload
from sagetui.core.build_facts import BuildFacts
from sagetui.core.kernel_facts import KernelFacts
from sagetui.core.report.envelope import SCHEMA_VERSION  # the schema's history is there
from sagetui.core.samples import RoundSeries, Samples
from sagetui.core.statistics import outliers

Shape4 = Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=4, max_length=4)]


SAMPLE_LOW, SAMPLE_HIGH = 0.0, 1e6  # seconds: (0, 10^6], as every Seconds field
SampleLists = dict[str, dict[str, list[list[Annotated[float, Field(gt=SAMPLE_LOW,
                                                                   le=SAMPLE_HIGH)]]]]]


def _validate_samples(value: Any, handler: ValidatorFunctionWrapHandler) -> Samples:
    """JSON lists are validated as lists (every error names its sample's path), then packed
    into arrays; Samples built by sagetui from arrays are checked as arrays, not copied."""
    if isinstance(value, Samples):
        bad = value.bad_value(SAMPLE_LOW, SAMPLE_HIGH)
        if bad is not None:
            v, p, r, i, x = bad
            raise ValueError(f"samples[{v!r}][{p!r}][{r}][{i}] = {x!r} is not a number of "
                             f"seconds in ({SAMPLE_LOW:g}, {SAMPLE_HIGH:g}]")
        return value
    lists = handler(value)
    return Samples({v: {p: RoundSeries.from_rounds(rounds) for p, rounds in phases.items()}
                    for v, phases in lists.items()})


def _serialize_samples(value: Samples, info: SerializationInfo) -> Any:
    return value.tolist() if info.mode == "json" else value


# raw per-iteration seconds: samples[variant][phase][round] -> [iteration...]; phase "total".
# JSON lists outside, arrays inside (see samples.py): pydantic validates the lists, the field
# holds Samples, and the type checker is told so.
if TYPE_CHECKING:
    SamplesField = Samples
else:
    SamplesField = Annotated[SampleLists, WrapValidator(_validate_samples),
                             PlainSerializer(_serialize_samples)]


class DecompositionCheck(Model):
    equal: bool
    max_abs: Annotated[float, Field(ge=0)]
    mean_abs: Annotated[float, Field(ge=0)]
    # sagetui's additions
    decomposed_sha256: Sha256 | None = None
    public_sha256: Sha256 | None = None
    variant: str | None = None


class TailRow(Model):
    sweep: Literal["q_tail_fixed_kv", "kv_tail_fixed_q"]
    q_len: Annotated[int, Field(ge=1)]
    kv_len: Annotated[int, Field(ge=1)]
    q_ctas_per_head: Count
    k_iterations_per_cta: Count
    q_tail_rows: Count
    k_tail_rows: Count
    scheduled_q_rows: Count
    q_row_efficiency: Annotated[float, Field(gt=0, le=1)]
    mainloop: Summary
    checksum: float
    variant: str | None = None
    phase: str | None = None  # which phase "mainloop" timed (sagetui: fused_mainloop or total)


class MinMeanMax(Model):
    min: float
    mean: float
    max: float


class Telemetry(Model):
    """GPU telemetry sampled during one round (NVML)."""

    available: bool
    reason: str | None = None
    samples: Count = 0
    sm_clock_mhz: MinMeanMax | None = None
    mem_clock_mhz: MinMeanMax | None = None
    temperature_c: MinMeanMax | None = None
    power_w: MinMeanMax | None = None
    throttle_reasons: list[str] = Field(default_factory=list)


class Drift(Model):
    slope_percent_per_round: float | None = None
    first_to_last_percent: float | None = None
    noise_percent: float | None = None
    flagged: bool = False
    rule: str | None = None
    run_change_percent: float | None = None  # Theil-Sen slope x (rounds - 1)
    noise_source: str | None = None  # "given", "residuals" or "unavailable"
    trend_p_value: float | None = None  # Mann-Kendall
    rounds: Count | None = None


class Outliers(Model):
    method: str = outliers.METHOD
    threshold: float = outliers.THRESHOLD
    count: Count = 0
    # (round, iteration) of each flagged total-latency sample; none is ever dropped
    where: list[tuple[int, int]] = Field(default_factory=list)


# -- accuracy, the backend SDPA ran, build provenance, the kernel's peak ------------


class AccuracySums(Model):
    """The float64 sums the metrics are made of (core/accuracy.SUMS): `check` recomputes a
    head's metrics from its own, and the whole output's from all heads' together. None: not
    finite (a NaN or infinite output)."""

    dot: float | None = None
    out_sq: NonNegative | None = None
    ref_sq: NonNegative | None = None
    abs_diff: NonNegative | None = None
    ref_abs: NonNegative | None = None
    sq_diff: NonNegative | None = None


class HeadAccuracy(Model):
    """One query head's accuracy against fp32 attention (every batch row, query and channel
    of it). A metric is None where the head's output is not finite."""

    head: Annotated[int, Field(ge=0)]
    cosine_similarity: Cosine | None = None
    relative_l1: NonNegative | None = None
    rmse: NonNegative | None = None
    max_abs_error: NonNegative | None = None
    elements: Count
    sums: AccuracySums


class Accuracy(AccuracyMetrics):
    """Against fp32 attention of the same inputs (core/accuracy.py defines each metric)."""

    reference: str | None = None
    rows: str | None = None  # "all", or which query rows were compared
    heads: Literal["all"] | list[Annotated[int, Field(ge=0)]] | None = None  # which were compared
    elements: Count | None = None
    # every compared query head's own figures, in head order, and the few worst of
    # them by relative L1, worst first (core/accuracy.worst_heads says why that metric)
    per_head: list[HeadAccuracy] | None = None
    worst_heads: list[Annotated[int, Field(ge=0)]] | None = None
    # return_lse: the largest |lse - fp32 lse| over the compared heads' rows (natural log), a
    # measured figure like max_abs_error (nothing to recompute)
    lse_max_abs_error: NonNegative | None = None


class InputsBlock(Model):
    """What q, k and v were: drawn from a synthetic distribution (core/distributions.py: its
    name, parameters and the observation it models) with the run's seed, or read from a file."""

    distribution: str | None = None
    parameters: dict[str, float | int] | None = None
    draws: str | None = None
    models: str | None = None
    seed: Count | None = None
    file: str | None = None


class Peak(Model):
    """The tensor-core types the share of peak is computed for (core/peaks.py)."""

    qk_type: str
    pv_type: str
    source: str


class PhaseSol(Model):
    """One phase's compulsory traffic (core/sol.py's bytes model) and its bandwidth."""

    bytes_read: Annotated[int, Field(ge=0)]
    bytes_written: Annotated[int, Field(ge=0)]
    gbps: NonNegative | None = None  # (read + written) / the phase's p50 / 1e9
    share_of_copy: NonNegative | None = None  # gbps / the GPU's measured copy bandwidth


class SpeedOfLight(Model):
    """Each phase against the measured copy bandwidth, and the compute phase's TOPS
    against the datasheet peak and against that peak at the clock its rounds ran at
    (core/sol.py states the model)."""

    phases: dict[str, PhaseSol] | None = None
    copy_gbps: NonNegative | None = None  # environment.gpu.copy_bandwidth's
    compute_phase: str | None = None  # fused_mainloop, or a one-phase backend's attention
    tops: NonNegative | None = None
    peak_tops: NonNegative | None = None
    share_of_peak: NonNegative | None = None
    mean_sm_clock_mhz: NonNegative | None = None  # over the measured rounds' telemetry
    max_sm_clock_mhz: NonNegative | None = None  # environment.gpu.max_sm_clock_mhz (NVML)
    clock_ceiling_tops: NonNegative | None = None  # peak x mean / max clock
    share_of_clock_ceiling: NonNegative | None = None


class Dispatch(Model):
    """What sage2-auto's `sageattn` ran on this GPU (core/options.AUTO_CALLS): the function and
    every option it ran with, its defaults included."""

    arch: str | None = None
    function: str
    options: dict[str, str | float | int | bool | None] = Field(default_factory=dict)


class VariantFacts(RunnerFacts):
    """What the runner says of a variant besides its timings (the `facts` of its `variant` and
    `block_done` events): its RunnerFacts (blocks/result.py), which a point keeps too, and what
    a run's variant alone keeps. A fact added here reaches the run model, the report and `check`
    with no other change; the console shows the ones a panel reads."""

    accuracy: Accuracy | None = None
    accuracy_error: str | None = None
    dispatch: Dispatch | None = None  # sage2-auto: the function and options it dispatched to
    # its main-loop kernel's registers, spills, shared memory and occupancy, from its binary
    # (`cuobjdump --dump-resource-usage`) and its launch: core/kernel_facts.py
    kernel_facts: KernelFacts | None = None


class Clocks(Model):
    """A variant's clocks over its measured rounds, and its verdict in cycles
    (core/statistics/clocks.py): each round's median time x the round's mean SM clock, paired
    against the baseline's the same way as the time verdict. `note`: the verdict line's words
    when the variants' clocks differ by more than the time estimate's half-width."""

    mean_sm_clock_mhz: NonNegative | None = None
    mean_power_w: NonNegative | None = None
    throttle_reasons: list[str] = Field(default_factory=list)
    cycles_verdict: VerdictRecord | None = None
    note: str | None = None


class Variant(VariantResult, VariantFacts):
    """A run's variant: its result (blocks/result.VariantResult, which a point shares), its
    runner's facts, and what its run alone keeps (rounds, phases, drift, telemetry...)."""

    WIRE_ORDER: ClassVar[tuple[str, ...]] = (
        "provenance", "accuracy", "accuracy_error", "sdpa_backend", "sdpa_backend_method",
        "peak_memory_bytes", "first_call_s", "dispatch", "kernel_facts", "timed_call", "name",
        "path", "output_sha256", "byte_exact", "timing", "rounds", "speedup_vs_baseline_percent",
        "backend", "spec", "status", "error", "input_sha256", "max_abs_diff", "mean_abs_diff",
        "checksum", "deterministic", "phase_timings", "verdict", "drift", "outliers", "telemetry",
        "achieved", "peak", "kernel", "scheduler", "options", "intervals", "rounds_asked",
        "failed_round", "build", "sol", "host_times_s", "back_to_back_times_s",
        "call_gpu_times_s", "host_s", "back_to_back_s", "call_gpu_s", "host_bound",
        "redone_blocks", "drained_blocks", "clocks")
    path: str | None = None
    byte_exact: bool | None = None
    rounds: list[Summary] | None = None
    speedup_vs_baseline_percent: float | None = None
    # sagetui's additions
    input_sha256: Sha256 | None = None
    max_abs_diff: Annotated[float, Field(ge=0)] | None = None
    mean_abs_diff: Annotated[float, Field(ge=0)] | None = None
    deterministic: bool | None = None
    phase_timings: dict[str, Summary] | None = None
    drift: Drift | None = None
    outliers: Outliers | None = None
    telemetry: list[Telemetry] | None = None
    achieved: dict[str, float | None] | None = None
    peak: Peak | None = None
    # schema 3: the variant's own kernel (core/scheduler.py's tile configurations) and grid,
    # the options it ran with (defaults included), the 95 % half-width in percent of each
    # phase's typical round median (statistics/intervals.py), the rounds it was asked to run
    # and the round it failed in
    kernel: str | None = None
    scheduler: Scheduler | None = None
    options: dict[str, str | float | int | bool | None] | None = None
    intervals: dict[str, Annotated[float, Field(ge=0)]] | None = None
    rounds_asked: Count | None = None
    failed_round: Count | None = None
    # schema 5: built from a source tree (`backend@src:PATH`): the tree, its hash, the flags,
    # the build's time, cache hit or not, the diff against the baseline's tree
    build: BuildFacts | None = None
    # speed of light per phase (core/sol.py)
    sol: SpeedOfLight | None = None
    # what the user's model pays (core/host_time.py) is its HostTimes (blocks/result.py)
    clocks: Clocks | None = None

    def accuracy_figures(self) -> AccuracyMetrics | None:
        return self.accuracy


class ScheduleEntry(Model):
    round: Count
    variant: str
    half: Annotated[int, Field(ge=0, le=1)]
    iterations: Count


class Tool(Model):
    name: str = "sagetui"
    version: str


class Report(Model):
    # sagetui's envelope
    schema_version: Annotated[int, Field(ge=1)] | None = None
    tool: Tool | None = None
    created_utc: str | None = None
    status: Literal["complete", "partial", "cancelled", "failed"] | None = None
    status_detail: list[str] | None = None  # why it is not complete (core/run/status.py)
    threshold: SameThreshold | None = None  # schema 3: the run's, with or without verdicts
    environment: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    inputs: InputsBlock | None = None  # the inputs' distribution or file
    # the reference reports' fields
    metadata: dict[str, Any] | None = None
    source_commit: str | None = None
    reference_output_sha256: Sha256 | None = None
    q_shape: Shape4 | None = None
    k_shape: Shape4 | None = None
    v_shape: Shape4 | None = None
    scheduler: Scheduler | None = None
    rounds: Count | None = None
    warmup: Count | None = None
    iterations: Count | None = None
    iterations_per_round: Count | None = None
    phase_timings: dict[str, Summary] | None = None
    fused_mainloop_phases: dict[str, str] | None = None
    manual_decomposition_vs_public_sage2: DecompositionCheck | None = None
    manual_checksum: float | None = None
    reference_checksum: float | None = None
    tail_study: list[TailRow] | None = None
    variants: list[Variant] | None = None
    # sagetui's additions
    baseline: str | None = None
    layout: Literal["NHD", "HND"] | None = None
    schedule: list[ScheduleEntry] | None = None
    samples: SamplesField | None = None  # raw per-iteration seconds (see SamplesField)
    faults: list[Fault] | None = None
    achieved: dict[str, float | None] | None = None
    # per profiled variant: shares of sampled warp time inside the main loop (sagetui profile)
    mainloop_profiles: list[MainloopProfile] | None = None
    # each profile against the baseline's (sagetui profile over two or more variants)
    mainloop_diff: ProfileDiff | None = None
    sweep: Sweep | None = None  # `sagetui sweep` (core/sweep_model.py)
    workload: Workload | None = None  # `sagetui run --workload` (core/blocks/workload.py)
    swap: Swap | None = None  # `sagetui swap` (core/blocks/swap.py)

    @model_validator(mode="after")
    def _has_measurements(self) -> Report:
        if (self.phase_timings is None and self.variants is None and self.tail_study is None
                and self.mainloop_profiles is None and self.sweep is None
                and self.workload is None and self.swap is None):
            raise ValueError("a report needs at least one of phase_timings, variants, "
                             "tail_study, mainloop_profiles, sweep, workload, swap")
        if self.schema_version is not None and self.schema_version > SCHEMA_VERSION:
            raise ValueError(f"schema_version {self.schema_version} is newer than this sagetui "
                             f"reads ({SCHEMA_VERSION}); upgrade sagetui")
        return self

    def to_json_dict(self, *, samples: bool = True) -> dict[str, Any]:
        """As JSON values; samples=False leaves the raw samples out (io.iter_report_json encodes
        them a round at a time)."""
        return self.model_dump(mode="json", exclude_none=True,
                               exclude=None if samples else {"samples"})

    def round_numbers(self) -> dict[str, list[int]]:
        """The round numbers of each variant's kept rounds, in order, from the schedule: a
        variant that missed rounds after a fault has fewer entries in its samples."""
        out: dict[str, list[int]] = {}
        for e in self.schedule or []:
            rs = out.setdefault(e.variant, [])
            if e.round not in rs:
                rs.append(e.round)
        return out

    def variant(self, name: str) -> Variant | None:
        return next((v for v in self.variants or [] if v.name == name), None)

