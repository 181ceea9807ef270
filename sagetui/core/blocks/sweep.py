"""The report's `sweep` block: self-contained, so a sweep report needs nothing else to be read,
checked or plotted. Every point keeps its shape, its per-variant summaries, the derived TOPS
and the raw samples they were derived from (`sagetui check` recomputes them: core/sweep/check.py).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from sagetui.core.blocks.base import (
    Count,
    Fault,
    Model,
    Scheduler,
    Seconds,
    Summary,
)
from sagetui.core.blocks.result import AccuracyBrief, AccuracyMetrics, VariantResult
from sagetui.core.config import Shape

Tops = Annotated[float, Field(ge=0, description="tera-operations per second")]
Share = Annotated[float, Field(ge=0)]
# raw seconds: samples[phase][round] -> [iteration...]
PhaseSamples = dict[str, list[list[Annotated[float, Field(gt=0, le=1e6)]]]]


# A point is noisy when its p50's 95 % interval (the whole call's, or the kernel phase's that
# kernel TOPS is read from) has a half-width over this, in percent of the p50: its TOPS may be
# off by a tenth or more, twice the largest SAME threshold a verdict may use (5 %), so a
# ranking or a crossover read from it is not to be trusted. The H200 sweep's widest were cudnn
# and flash at 1k (±92.9 %, ±65.0 %: a GPU still warming up); the next, ±7.7 %.
NOISY_CI_PERCENT = 10.0
NOISY_RULE = f"the p50's 95 % interval is wider than ±{NOISY_CI_PERCENT:g} %"
NOISY_MARK = "!"  # after a noisy p50, in every table: the console's, the CLI's, the exports'


def noisy(v: Any) -> bool:
    """A variant's point (a SweepVariantPoint) whose interval is too wide to trust
    (NOISY_CI_PERCENT); one without an interval (a single round) is not called noisy."""
    return any(ci is not None and ci > NOISY_CI_PERCENT
               for ci in (getattr(v, "p50_ci_percent", None),
                          getattr(v, "kernel_p50_ci_percent", None)))


class SweepVariantPoint(VariantResult):
    """A variant at a point: its run's VariantResult (blocks/result.py) copied, and what a point
    derives. Three fields keep the wire names they had, each a name the run's Variant uses for
    another thing: `kernel` (the kernel phase's summary; a Variant's is its tile configuration's
    name), `rounds` (a count; a Variant's, each round's summary), `accuracy` (in brief; a
    Variant's, whole)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)
    WIRE_ORDER: ClassVar[tuple[str, ...]] = (
        "name", "backend", "spec", "status", "error", "kernel_phase", "timing", "kernel",
        "rounds", "p50_ci_percent", "kernel_p50_ci_percent", "kernel_tops", "e2e_tops",
        "peak_tops", "kernel_share_of_peak", "e2e_share_of_peak", "accuracy", "verdict",
        "checksum", "output_sha256", "samples", "provenance", "host_times_s",
        "back_to_back_times_s", "call_gpu_times_s", "host_s", "back_to_back_s", "call_gpu_s",
        "timed_call", "host_bound", "redone_blocks", "drained_blocks")

    status: Literal["ok", "failed"]
    # "fused_mainloop" where the backend has one (SageAttention's bench counts the main loop
    # alone, quantization excluded), else "total" (the whole call)
    kernel_phase: str | None = None
    kernel_timing: Summary | None = Field(None, alias="kernel")  # the kernel phase
    round_count: Count | None = Field(None, alias="rounds")
    p50_ci_percent: Annotated[float, Field(ge=0)] | None = None  # of the whole call's p50
    kernel_p50_ci_percent: Annotated[float, Field(ge=0)] | None = None
    kernel_tops: Tops | None = None
    e2e_tops: Tops | None = None
    peak_tops: Tops | None = None
    kernel_share_of_peak: Share | None = None
    e2e_share_of_peak: Share | None = None
    accuracy_brief: AccuracyBrief | None = Field(None, alias="accuracy")
    samples: PhaseSamples | None = None

    def accuracy_figures(self) -> AccuracyMetrics | None:
        return self.accuracy_brief


class MeasuredOn(Model):
    """The runner that measured a point (several run side by side with --gpus)."""

    runner: str  # "gpu 3" (the node's index), "cpu 1" (a CPU stand-in), "cpu"
    name: str | None = None  # the GPU's name and UUID, as its runner saw it
    uuid: str | None = None


class SweepPoint(Model):
    index: Count
    x: Annotated[int, Field(ge=1)]  # the swept length (the sweep's x_axis) of this point
    group: str  # the series it belongs to: what is fixed (head dim, causal, the other length)
    shape: Shape
    status: Literal["ok", "partial", "failed", "skipped"]
    error: str | None = None
    fault_kind: str | None = None  # "oom", "variant", "exception", ...
    ops: Annotated[float, Field(gt=0)]  # 4·B·H·Nq·Nkv·D, halved when causal
    scheduler: Scheduler | None = None
    input_sha256: str | None = None
    elapsed_s: Seconds | None = None
    variants: list[SweepVariantPoint] = Field(default_factory=list)
    faults: list[Fault] | None = None
    measured_on: MeasuredOn | None = None


class Crossover(Model):
    """Where `after` overtakes `before` on kernel TOPS, between two neighbouring points."""

    group: str
    before: str  # faster at x_low
    after: str   # faster at x_high
    x_low: Annotated[int, Field(ge=1)]
    x_high: Annotated[int, Field(ge=1)]
    x: Annotated[float, Field(gt=0)]  # where the TOPS lines cross, interpolated in log2 x
    metric: str = "kernel_tops"


class LargestFit(Model):
    index: Count
    shape: str
    note: str


class Measured(Model):
    """What every point of a block of points (a sweep's, a workload's) was measured with."""

    baseline: str | None = None
    variants: dict[str, str]  # name -> spec
    warmup: Count
    rounds: Count
    iterations: Count


class Sweep(Measured):
    x_axis: Literal["q_len", "kv_len"]
    axes: dict[str, Any]
    ops_formula: str = "4·B·H·Nq·Nkv·D / t, halved when causal"
    points: list[SweepPoint]
    crossovers: list[Crossover] = Field(default_factory=list)
    largest_fit: LargestFit | None = None
