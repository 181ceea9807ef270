"""What a swap process is told (`ProcessSettings`) and hands back (`ProcessResult`), and the
report's `swap` block: every process as it ran (the measurements: in the interleaved mode one
process and every step of every arm, in the processes mode a process per arm and round), and
per arm the figures derived from them (derive.py; `sagetui check` derives them again)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from sagetui.core.blocks.base import Count, Model, VerdictRecord
from sagetui.core.config import VariantSpec

UNCHANGED = "unchanged"  # the arm that runs the program as it is
# the interleaved mode's arm that runs the program with the wrapper passing every call straight
# through: the unchanged arm's step against it is the wrapper's own cost
UNWRAPPED = "unwrapped"
NonNegative = Annotated[float, Field(ge=0)]


class Earlier(Model):
    """An arm that ran before this one in the same round: its outputs' file."""

    arm: str
    outputs: str


class ArmSpec(Model):
    """An arm by name and its backend's spec (VariantSpec.spec): `--variant NAME=SPEC` resolved."""

    name: str
    spec: str | None = None  # None: the program unchanged


class ArmSettings(Model):
    """One arm of an interleaved process: its name and backend (None: the program unchanged)."""

    name: str
    variant: VariantSpec | None = None


class Interleave(Model):
    """The interleaved mode: every arm in the one process, switched at the step's boundaries
    in a Williams square's order (core/swap/schedule.py). The measurement ends when the program
    does, when each arm has `steps` measured steps, `max_seconds` after the first measured step,
    or (`until_ci_percent`) once every comparison's interval is that narrow (the program is
    then ended at its next step)."""

    arms: list[ArmSettings]
    warmup: Annotated[int, Field(ge=1, le=1000)] = 2  # rounds at least, before any is measured
    max_warmup: Annotated[int, Field(ge=1, le=1000)] = 10  # rounds at most, settled or not
    steps: Annotated[int, Field(ge=2, le=100_000)] = 30  # step rounds at most
    max_seconds: Annotated[float, Field(gt=0)] = 60.0
    # --until-ci: the measurement ends once every comparison's interval is narrower (percentage
    # points, full width), from UNTIL_CI_MIN step rounds on (core/swap/schedule.py)
    until_ci_percent: Annotated[float, Field(gt=0, le=100)] | None = None
    reference: str | None = None  # the arm whose outputs the others are compared with
    baseline: str | None = None  # the arm the others are judged against (--until-ci's pairs)


class ProcessSettings(Model):
    """One process (`python -m sagetui.swap SETTINGS PROGRAM...`): one arm (the processes mode),
    or every arm interleaved (`interleave`)."""

    arm: str
    variant: VariantSpec | None = None  # None: the program unchanged (everything passes through)
    calls: str | None = None  # --calls: which calls may be swapped
    result: str  # where the process writes its ProcessResult (JSON)
    outputs: str  # where it saves its outputs (safetensors)
    compare: list[Earlier] = Field(default_factory=list)  # the unchanged arm's, or the variants'
    interleave: Interleave | None = None
    # the processes mode on a GPU: load the GPU before the first step until its SM clock holds
    # (swap/clocks.py), so that a few short steps are not timed on the clock's way up
    warm_clocks: bool = False
    # --affinity: the program's thread (and those it starts) on these CPUs (core/affinity.py)
    affinity: str | None = None

    def arms_run(self) -> list[ArmSpec]:
        """What this process runs: its one arm, or every arm interleaved, each with the spec of
        the backend it loads (ProcessResult.ran records it)."""
        arms = self.interleave.arms if self.interleave is not None else \
            [ArmSettings(name=self.arm, variant=self.variant)]
        return [ArmSpec(name=a.name, spec=a.variant.spec if a.variant else None) for a in arms]


class Timed(Model):
    """Time spent in something `count` times: host seconds (perf_counter) and, on CUDA, the
    GPU's seconds between CUDA events on the current stream."""

    count: Count = 0
    host_s: NonNegative = 0.0
    gpu_s: NonNegative | None = None
    cpu_s: NonNegative | None = None  # the process's CPU time, off CUDA (the swap's cpu time)


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


class StepTime(Model):
    """One step of one arm in the interleaved mode: the outermost block of the step's region."""

    round: Count
    arm: str
    # its round's kind (core/swap/schedule.py): warmup (in no figure), attention (its calls
    # timed: the attention's figures) or step (its calls only dispatched: the steps' figures)
    kind: Literal["warmup", "attention", "step"]
    host_s: NonNegative
    # the process's CPU time over the block: a CPU program's steps are compared by it (the
    # swap's clock "cpu time"), which other processes on a loaded machine do not inflate
    cpu_s: NonNegative | None = None
    gpu_s: NonNegative | None = None  # CUDA events around the block, on CUDA
    # the attention calls made inside it, and of those the calls sent to the backend (timed
    # in an attention round; in the others, counted)
    attention: Timed = Field(default_factory=Timed)
    swapped: Timed = Field(default_factory=Timed)
    sm_clock_mhz: NonNegative | None = None  # NVML, read as the block ended
    power_w: NonNegative | None = None  # NVML's (averaged over about a second)


class ArmCalls(Model):
    """An arm's attention calls over its measured steps (interleaved): those it swapped and, by
    reason, those it passed through (warm-up steps' calls are in neither)."""

    swapped: Count = 0
    passed: dict[str, Count] = Field(default_factory=dict)


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
    # the processes mode: the SM clock read as each block of the step's region ended, and how
    # the GPU was brought to its clocks before the first (swap/clocks.py)
    step_clocks_mhz: list[NonNegative] = Field(default_factory=list)
    warmed_clocks: str | None = None
    # the calls made while the step's region was open that went to the arm's backend
    region_swapped: dict[str, Timed] = Field(default_factory=dict)
    # the interleaved mode
    step_region: str | None = None  # the region whose blocks are the steps
    steps: list[StepTime] = Field(default_factory=list)
    arm_calls: dict[str, ArmCalls] = Field(default_factory=dict)
    program_steps: Count = 0  # blocks of the step's region the program began
    ended: str | None = None  # why the measurement ended (swap/schedule.py's words)
    # whether the reference arm's own steps gave equal outputs (None: not known, one step or
    # no output); where not, outputs are compared between processes (swap.outputs_by_process)
    repeatable: bool | None = None
    repeatable_note: str | None = None
    forked_calls: Count = 0  # attention calls made in processes the program forked
    calls_seen: Count = 0  # every attention call the program made in this process
    failed_arms: dict[str, str] = Field(default_factory=dict)  # arm -> why its backend failed
    # what the process ran (ProcessSettings.arms_run), from schema 7: `check` holds each arm's
    # label to its spec (a swap of two arms' labels is seen)
    ran: list[ArmSpec] | None = Field(default=None, json_schema_extra={"since": 7})


class SwapProcess(Model):
    """One process: which round, which arm, in which place of the round, and how it ended."""

    round: Count
    arm: str
    status: Literal["ok", "failed"]
    exit_status: int | None = None
    wall_s: NonNegative
    error: list[str] | None = None  # the program's last lines, where it failed
    result: ProcessResult | None = None


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
    step: VerdictRecord | None = None
    step_change_percent: float | None = None
    step_change_low_percent: float | None = None
    step_change_high_percent: float | None = None
    attention_change_percent: float | None = None
    attention_added_s: float | None = None  # median attention_s - the baseline's
    step_added_s: float | None = None
    # the GPU's SM clock and power over the arm's measured steps (medians of the readings);
    # where the clocks of the arm and the baseline differ beyond their noise, or either ran
    # below the swap's sustained clock, the verdict is INCONCLUSIVE and this says why
    sm_clock_mhz: NonNegative | None = None
    power_w: NonNegative | None = None
    clock_problem: str | None = None
    # the unchanged arm (interleaved): its step against the unwrapped arm's, paired by round:
    # the wrapper's cost, in percent of the step and per call
    wrapper_change_percent: float | None = None
    wrapper_change_low_percent: float | None = None
    wrapper_change_high_percent: float | None = None
    wrapper_per_call_s: float | None = None
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
    # interleaved: the arms switched step by step in one process (the default); processes: a
    # process per arm and round (--processes). Reports before the interleaved mode: processes.
    mode: Literal["interleaved", "processes"] = "processes"
    interleave: Interleave | None = None  # what the interleaved mode was asked
    stopped_by: str | None = None  # the signal that stopped the swap (SIGINT, SIGTERM, SIGHUP)
    arms: list[ArmSpec]
    baseline: str
    calls: str | None = None
    affinity: str | None = None  # --affinity: the CPUs the program ran on (as asked)
    rounds_asked: Count
    step: str  # the region timed as the step, or "first to last attention call"
    # what the steps are compared by: CUDA events; the host's wall time (the processes mode on a
    # CPU); the process's CPU time (the interleaved mode on a CPU)
    clock: Literal["cuda events", "host", "cpu time"]
    threshold_percent: Annotated[float, Field(gt=0)]
    processes: list[SwapProcess]
    figures: list[ArmFigures]
    replay: Replay | None = None
    # interleaved, where the step is not repeatable: a process per arm, for the outputs alone
    output_processes: list[SwapProcess] = Field(default_factory=list)
    sustained_clock_mhz: NonNegative | None = None  # the median SM clock of every arm's steps
