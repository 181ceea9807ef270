"""What a swap process is told (`ProcessSettings`) and hands back (`ProcessResult`), and the
report's `swap` block: every process of every round as it ran (the measurements), and per arm
the figures derived from them (derive.py; `sagetui check` derives them again)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from sagetui.core.blocks.base import Count, Model, Verdict
from sagetui.core.config import VariantSpec

UNCHANGED = "unchanged"  # the arm that runs the program as it is
NonNegative = Annotated[float, Field(ge=0)]


class Earlier(Model):
    """An arm that ran before this one in the same round: its outputs' file."""

    arm: str
    outputs: str


class ProcessSettings(Model):
    """One process of one arm (`python -m sagetui.swap SETTINGS PROGRAM...`)."""

    arm: str
    variant: VariantSpec | None = None  # None: the program unchanged (everything passes through)
    calls: str | None = None  # --calls: which calls may be swapped
    result: str  # where the process writes its ProcessResult (JSON)
    outputs: str  # where it saves its outputs (safetensors)
    compare: list[Earlier] = Field(default_factory=list)  # the unchanged arm's, or the variants'


class Timed(Model):
    """Time spent in something `count` times: host seconds (perf_counter) and, on CUDA, the
    GPU's seconds between CUDA events on the current stream."""

    count: Count = 0
    host_s: NonNegative = 0.0
    gpu_s: NonNegative | None = None


class OutputSums(Model):
    """One named output against the unchanged arm's: the sums core/accuracy.from_sums turns
    into relative L1, cosine and the rest, or why they could not be taken."""

    sums: dict[str, float] | None = None
    max_abs: NonNegative | None = None
    elements: Count = 0
    problem: str | None = None  # shapes differ, an output missing from one arm...


class Compared(Model):
    """A variant arm's outputs against the unchanged arm's, by name."""

    arm: str
    outputs: dict[str, OutputSums]


class ProcessResult(Model):
    arm: str
    device: str | None = None  # the first attention call's
    clock: Literal["cuda events", "host"] = "host"
    regions: dict[str, Timed] = Field(default_factory=dict)  # sagetui.region(NAME)
    # the attention calls made while a region of that name was open
    region_attention: dict[str, Timed] = Field(default_factory=dict)
    attention: Timed = Field(default_factory=Timed)  # every attention call, from first to last
    first_to_last: Timed | None = None  # the first call's start to the last one's end
    swapped: Timed = Field(default_factory=Timed)  # the calls sent to the arm's backend
    passed: dict[str, Count] = Field(default_factory=dict)  # reason -> calls passed through
    outputs: dict[str, str] = Field(default_factory=dict)  # name -> "bfloat16 [1, 4096, 2048]"
    named_outputs: bool = False  # sagetui.output(); else the last attention call's output
    compared: list[Compared] = Field(default_factory=list)
    # NVML over the program's run (runner/telemetry: core/telemetry's summary), on a GPU
    telemetry: dict[str, Any] | None = None


class SwapProcess(Model):
    """One process: which round, which arm, in which place of the round, and how it ended."""

    round: Count
    arm: str
    status: Literal["ok", "failed"]
    exit_status: int | None = None
    wall_s: NonNegative
    error: list[str] | None = None  # the program's last lines, where it failed
    result: ProcessResult | None = None


class ArmSpec(Model):
    name: str
    spec: str | None = None  # None: the program unchanged


class OutputChange(Model):
    """A named output of a variant arm against the unchanged arm's, the worst over rounds."""

    name: str
    rounds: Count
    relative_l1: NonNegative | None = None
    cosine_similarity: float | None = None
    max_abs_error: NonNegative | None = None
    problem: str | None = None


class ArmFigures(Model):
    """One arm, derived from its processes (derive.arm_figures)."""

    arm: str
    status: Literal["ok", "failed"]
    rounds: Count  # rounds it ran to the end
    step_s: NonNegative | None = None  # median over rounds of a process's mean step
    attention_s: NonNegative | None = None  # ... of its attention time per step
    attention_share_percent: NonNegative | None = None  # median attention_s / median step_s
    # one call in the model, the median over rounds of a process's mean: the calls the arm
    # swapped (the unchanged arm: every call), GPU time (CUDA events) and host time
    call_gpu_s: NonNegative | None = None
    call_host_s: NonNegative | None = None
    swapped: Count = 0  # calls per process (the last round's)
    passed: Count = 0
    passed_reasons: dict[str, Count] = Field(default_factory=dict)
    # against the baseline arm, paired by round (statistics/verdict.paired_speedup): its
    # verdict (a speedup, as every verdict), and the time change it means (negative: faster)
    step: Verdict | None = None
    step_change_percent: float | None = None
    step_change_low_percent: float | None = None
    step_change_high_percent: float | None = None
    attention_change_percent: float | None = None
    attention_added_s: float | None = None  # median attention_s - the baseline's
    step_added_s: float | None = None
    outputs: list[OutputChange] = Field(default_factory=list)
    replay_change_percent: float | None = None  # the replay's predicted attention change
    replay_note: str | None = None  # how the measured change differs from the replay's


class Replay(Model):
    """`--workload DIR`: the capture replayed (`sagetui run --workload`), each arm as the
    variant of the same name (the unchanged arm as the backend the program called)."""

    directory: str
    report: str | None = None  # the replay's own report, where it was kept
    totals_s: dict[str, float] = Field(default_factory=dict)  # arm -> Σ weight x p50
    unchanged_as: str | None = None  # the spec the unchanged arm was replayed as
    problem: str | None = None  # why there is no prediction


class Swap(Model):
    argv: list[str]
    arms: list[ArmSpec]
    baseline: str
    calls: str | None = None
    rounds_asked: Count
    step: str  # the region timed as the step, or "first to last attention call"
    clock: Literal["cuda events", "host"]
    threshold_percent: Annotated[float, Field(gt=0)]
    processes: list[SwapProcess]
    figures: list[ArmFigures]
    replay: Replay | None = None
