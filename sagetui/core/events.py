"""Every event and command of a run, as frozen dataclasses.

Three families:
- runner events (runner -> session, over the runner's stdout) and commands (session -> runner,
  over its stdin): pydantic dataclasses, so that a line the runner or the session decodes is
  checked field by field (strict: no "1" for 1, no unknown field); protocol.py is their codec;
- session events (the session -> its display: the console, `sagetui run`): plain dataclasses,
  built in-process and never encoded. The session passes every runner event it is given on to
  its display too, under the same name.

The run model (core/run/) is fed these and nothing else: every change to what a run measured
or how it stands travels as an event, so that the session's model and the console's, fed the
same stream, are equal (docs/architecture.md, "Events").

To add an event: one dataclass here with its NAME, its class in RunnerEventT, CommandT or
SessionEventT below (the codec's registry is built from them), and one arm in eventlog.log_line
and in core/run/fold.apply (mypy points at either if it lacks it: they end in
`unexpected(ev)`); a display matches only the events it shows. To add a fact of a variant:
a field of report.model.VariantFacts, and the runner puts it in a `facts` dict of its
`variant` or `block_done` event.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Never

from pydantic import BeforeValidator, ConfigDict, Field
from pydantic.dataclasses import dataclass as wire

from sagetui.core.config import RunConfig
from sagetui.core.report.model import Fault

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from sagetui.core.blocks.profile import MainloopProfile
    from sagetui.core.blocks.sweep import SweepPoint
    from sagetui.core.report.model import Report

_STRICT = ConfigDict(extra="forbid", strict=True, defer_build=True)  # built at first use
STRICT_ENV = "SAGETUI_STRICT_EVENTS"  # set by the tests: an unexpected event raises


def _pairs(v: Any) -> Any:
    """JSON has no tuples: [name, parent] arrives as a list (strict mode takes no list)."""
    return [tuple(x) if isinstance(x, list) else x for x in v] if isinstance(v, list) else v


PhaseTree = Annotated[list[tuple[str, str | None]], BeforeValidator(_pairs)]


class UnexpectedEvent(TypeError):
    pass


def unexpected(ev: Never) -> None:
    """The last arm of an exhaustive `match` on events: mypy reports the arms that are
    missing; at run time it raises under the tests (STRICT_ENV) and is a no-op otherwise, so
    that a display never takes a run down."""
    if os.environ.get(STRICT_ENV):
        raise UnexpectedEvent(f"no handler for {type(ev).__name__}")


def to_dict(e: DataclassInstance) -> dict[str, Any]:
    """An event's fields as a dict (shallow; the None ones left out)."""
    return {f.name: v for f in fields(e) if (v := getattr(e, f.name)) is not None}


# -- runner events ------------------------------------------------------------------------------
@wire(frozen=True, kw_only=True, config=_STRICT)
class RunnerEvent:
    NAME: ClassVar[str]
    # the paths of numbers that were NaN or infinite (JSON has no such numbers: they travel
    # as null); set by the codec
    nonfinite: list[str] | None = None


@wire(frozen=True, kw_only=True, config=_STRICT)
class Hello(RunnerEvent):
    NAME: ClassVar[str] = "hello"
    protocol: int
    pid: int
    python: str
    torch: str
    device: str
    backends: dict[str, str | None]  # name -> None when available, else why not


@wire(frozen=True, kw_only=True, config=_STRICT)
class VariantLoaded(RunnerEvent):
    NAME: ClassVar[str] = "variant"
    name: str
    backend: str
    status: str  # "ok" | "failed"
    path: str | None = None
    error: str | None = None
    kernel: str | None = None
    phases: PhaseTree = Field(default_factory=list)  # (name, parent)
    # facts of the variant (report.model.VariantFacts' fields), e.g. its provenance: the files
    # its code came from {files: [{module, path, sha256, size_bytes, mtime_utc}],
    # sageattention_version?...} (runner/provenance.py)
    facts: dict[str, Any] = Field(default_factory=dict)


@wire(frozen=True, kw_only=True, config=_STRICT)
class Ready(RunnerEvent):
    NAME: ClassVar[str] = "ready"
    # None until hashed: the hash is a late figure (`late`), never in front of the first round;
    # a warm runner set up again on the same inputs knows it already
    input_sha256: str | None = None
    device: str
    gpu: dict[str, Any] | None = None
    reused_inputs: bool = False  # a warm runner set up again on the last run's inputs


@wire(frozen=True, kw_only=True, config=_STRICT)
class WarmupDone(RunnerEvent):
    NAME: ClassVar[str] = "warmup_done"
    variant: str
    calls: int
    seconds: float


@wire(frozen=True, kw_only=True, config=_STRICT)
class Iterations(RunnerEvent):
    """Iterations `start` .. `start + n - 1` of a block, as columns: per leaf phase and for the
    total, one number per iteration (seconds). A block streams one or more of them."""

    NAME: ClassVar[str] = "iterations"
    variant: str
    round: int
    half: int
    start: int
    phases: dict[str, list[float]]
    total_s: list[float]
    t_emit: float | None = None  # the writer's CLOCK_MONOTONIC (the benchmarks' lag probe)

    @property
    def n(self) -> int:
        return len(self.total_s)


@wire(frozen=True, kw_only=True, config=_STRICT)
class BlockDone(RunnerEvent):
    NAME: ClassVar[str] = "block_done"
    variant: str
    round: int
    half: int
    iterations: int
    cancelled: bool
    telemetry: dict[str, Any] = field(default_factory=dict)
    host: dict[str, float] = field(default_factory=dict)  # where the block's host time went
    # what the user's model pays (core/host_time.py; runner/call_times.py), once a round: the
    # call the user makes, in blocks of its own after this one, its host time and GPU time per
    # call (a gated block) and back-to-back time per call (a hot loop); how often the block (or
    # the call's) was measured again because its queue drained, and whether the kept
    # measurement still drained
    host_call_s: float | None = None
    call_gpu_s: float | None = None
    back_to_back_s: float | None = None
    redone: int | None = None
    drained: bool | None = None
    output_sha256: str | None = None
    checksum: float | None = None
    max_abs_diff: float | None = None
    mean_abs_diff: float | None = None
    # facts of the variant (report.model.VariantFacts' fields) found in its warm-up, outside
    # the timed region, carried by its first block: which SDPA backend torch ran
    # (sdpa_backend, sdpa_backend_method), its call's peak memory (its accuracy is late_facts')
    facts: dict[str, Any] = Field(default_factory=dict)


@wire(frozen=True, kw_only=True, config=_STRICT)
class Decomposition(RunnerEvent):
    """The decomposed phases' output against the public API's; `skipped` says why not."""

    NAME: ClassVar[str] = "decomposition"
    variant: str
    skipped: str | None = None
    equal: bool | None = None
    max_abs: float | None = None
    mean_abs: float | None = None
    decomposed_sha256: str | None = None
    public_sha256: str | None = None
    manual_checksum: float | None = None
    reference_checksum: float | None = None


@wire(frozen=True, kw_only=True, config=_STRICT)
class LateFacts(RunnerEvent):
    """A figure computed after the last round (the `late` command): a variant's facts (its
    accuracy against fp32 attention {cosine_similarity, relative_l1, rmse, max_abs_error,
    reference, rows, heads, elements}, or why it could not be computed: accuracy_error), or,
    without a variant, the run's (input_sha256)."""

    NAME: ClassVar[str] = "late_facts"
    variant: str | None = None
    facts: dict[str, Any] = Field(default_factory=dict)


@wire(frozen=True, kw_only=True, config=_STRICT)
class LateDone(RunnerEvent):
    """The `late` command's end; `cancelled`: stopped before every figure was computed."""

    NAME: ClassVar[str] = "late_done"
    cancelled: bool = False


@wire(frozen=True, kw_only=True, config=_STRICT)
class PhaseStarted(RunnerEvent):
    NAME: ClassVar[str] = "phase"
    variant: str
    phase: str


@wire(frozen=True, kw_only=True, config=_STRICT)
class RunnerError(RunnerEvent):
    NAME: ClassVar[str] = "error"
    kind: str  # protocol, oom, cuda, exception
    message: str
    fatal: bool = False  # the runner exits after it
    variant: str | None = None
    phase: str | None = None
    command: str | None = None
    traceback: str | None = None


@wire(frozen=True, kw_only=True, config=_STRICT)
class Bye(RunnerEvent):
    NAME: ClassVar[str] = "bye"


# -- commands ---------------------------------------------------------------------------------
@wire(frozen=True, kw_only=True, config=_STRICT)
class Command:
    NAME: ClassVar[str]


@wire(frozen=True, kw_only=True, config=_STRICT)
class Setup(Command):
    NAME: ClassVar[str] = "setup"
    config: dict[str, Any]  # RunConfig as JSON: build inputs, load every variant
    reference: bool = False  # the late figures will ask for accuracy: start the fp32 reference
    # a workload's call taken in turn (session/workload.py): the runner keeps this set-up (its
    # inputs, variants and first outputs) beside the others kept, and a later `setup` of the
    # same inputs with `keep` resumes it where its last round left it
    keep: bool = False


@wire(frozen=True, kw_only=True, config=_STRICT)
class Warmup(Command):
    NAME: ClassVar[str] = "warmup"
    variant: str
    calls: int


@wire(frozen=True, kw_only=True, config=_STRICT)
class Block(Command):
    NAME: ClassVar[str] = "block"
    variant: str
    round: int
    half: int
    iterations: int


@wire(frozen=True, kw_only=True, config=_STRICT)
class Late(Command):
    """After the last round, the figures the verdict does not need (docs/architecture.md,
    "Late figures"): `accuracy`'s variants against fp32 attention (late_facts each), the
    decomposition of `decompose` against its public API (decomposition), the inputs' sha256
    (late_facts without a variant); then late_done."""

    NAME: ClassVar[str] = "late"
    accuracy: list[str] = field(default_factory=list)
    decompose: str | None = None
    input_sha256: bool = True


@wire(frozen=True, kw_only=True, config=_STRICT)
class Cancel(Command):
    NAME: ClassVar[str] = "cancel"


@wire(frozen=True, kw_only=True, config=_STRICT)
class Quit(Command):
    NAME: ClassVar[str] = "quit"


# -- session events ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class RunStarted:
    """A run begins (not a resumed one): what it was asked to measure, when, where."""

    NAME: ClassVar[str] = "run_started"
    config: RunConfig
    created_utc: str
    host: dict[str, Any] = field(default_factory=dict)  # environment.host_facts()


@dataclass(frozen=True, kw_only=True)
class ConfigResolved:
    """An `auto` configuration resolved for this machine once the runner said what it has."""

    NAME: ClassVar[str] = "config_resolved"
    config: RunConfig


@dataclass(frozen=True, kw_only=True)
class ThresholdResolved:
    """The SAME threshold the verdicts are judged with, and where it came from (known once the
    runner has named the GPU: a calibration is kept per GPU)."""

    NAME: ClassVar[str] = "threshold"
    threshold: dict[str, Any]  # statistics.threshold.Threshold.fields()


@dataclass(frozen=True, kw_only=True)
class BaselineChanged:
    """The verdicts are computed against another variant from the next round on."""

    NAME: ClassVar[str] = "baseline"
    baseline: str


@dataclass(frozen=True, kw_only=True)
class ProfilesAdded:
    """Main-loop profiles made after the run (the console's key p): each replaces its
    variant's profile, if it had one."""

    NAME: ClassVar[str] = "profiles_added"
    profiles: list[MainloopProfile]


@dataclass(frozen=True, kw_only=True)
class Resumed:
    """A stopped run goes on: the round it was stopped in is measured again."""

    NAME: ClassVar[str] = "resumed"


@dataclass(frozen=True, kw_only=True)
class RoundStarted:
    NAME: ClassVar[str] = "round_started"
    round: int
    variants: list[str]


@dataclass(frozen=True, kw_only=True)
class RoundDone:
    NAME: ClassVar[str] = "round_done"
    round: int
    # the variants whose round is whole; the others' samples of it are dropped
    completed: list[str] = field(default_factory=list)
    # set by the session for a display in its own process, after its own model folded the
    # round: its completed rounds' samples, variant -> phase -> (RoundSeries, rounds), which
    # never change once written; the display's model holds these instead of a second copy
    # (run/model.PhaseSamples.adopt). Never recorded: a replayed stream folds its own.
    samples: dict[str, dict[str, Any]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class AnalysisDone:
    """The one analysis (core/statistics/analysis.py) of the rounds so far, after a round."""

    NAME: ClassVar[str] = "analysis"
    round: int
    # variant -> the verdict's report fields, threshold fields included
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    # variant -> Drift.to_dict() and variant -> p50 speedup %, both computed at most every
    # conversation.DRIFT_EVERY_S (empty otherwise): rounds of milliseconds do not wait on them
    drift: dict[str, dict[str, Any]] = field(default_factory=dict)
    speedups: dict[str, float | None] = field(default_factory=dict)
    # derived by the console for a saved report that recorded none (marked * where shown)
    computed: bool = False


@dataclass(frozen=True, kw_only=True)
class Measured:
    """The last round is in: the verdicts are final and shown now; `computing` names the late
    figures still to come (core/run/late.py's keys), which fill in as they arrive."""

    NAME: ClassVar[str] = "measured"
    computing: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class TailRow:
    """One shape of the tail study, measured as a sweep point (session/points.py)."""

    NAME: ClassVar[str] = "tail"
    variant: str
    sweep: str
    q_len: int
    kv_len: int
    mainloop: list[float]  # seconds per iteration of `phase`
    phase: str
    checksum: float | None = None


@dataclass(frozen=True, kw_only=True)
class PointStarted:
    """A sweep's point `index` (of `total`) starts measuring (session/sweep.py)."""

    NAME: ClassVar[str] = "point_start"
    index: int
    total: int
    shape: str  # Shape.describe()
    call: str | None = None  # a workload's replayed call (build.call_label); None: a sweep's
    # the round this turn of a workload's call measures (its calls taken in turn, a round at a
    # time: session/workload.py); None: the point is measured whole
    round: int | None = None


@dataclass(frozen=True, kw_only=True)
class PointDone:
    NAME: ClassVar[str] = "point"
    index: int
    total: int
    point: SweepPoint
    call: str | None = None  # as PointStarted's


@dataclass(frozen=True, kw_only=True)
class FaultRaised:
    """Something went wrong: the fault as the report keeps it."""

    NAME: ClassVar[str] = "fault"
    fault: Fault
    failed: str | None = None  # the variant the session dropped with it: it measures no more


@dataclass(frozen=True, kw_only=True)
class LogMessage:
    NAME: ClassVar[str] = "log"
    message: str


@dataclass(frozen=True, kw_only=True)
class Finished:
    """The run is over: its status (run/status.py) and the report built from the session's
    model, which the display's model, fed the same events, equals."""

    NAME: ClassVar[str] = "finished"
    status: str
    report: Report
    detail: list[str] = field(default_factory=list)  # why it is not complete


@dataclass(frozen=True, kw_only=True)
class FromRunner:
    """An event of one of several runners measuring side by side (`--gpus`, node-check):
    the runner's slot label ("gpu 2", "cpu 1") and the event its session emitted."""

    NAME: ClassVar[str] = "from_runner"
    runner: str
    event: Any  # an Event (not FromRunner): Event is defined from this class below


# The codec's registries are built from these (protocol.py); a display's `match` covers Event.
RunnerEventT = (Hello | VariantLoaded | Ready | WarmupDone | Iterations | BlockDone
                | Decomposition | LateFacts | LateDone | PhaseStarted | RunnerError | Bye)
CommandT = Setup | Warmup | Block | Late | Cancel | Quit
SessionEventT = (RunStarted | ConfigResolved | ThresholdResolved | BaselineChanged
                 | ProfilesAdded | Resumed | RoundStarted | RoundDone | AnalysisDone | Measured
                 | TailRow | PointStarted | PointDone | FaultRaised | LogMessage | Finished
                 | FromRunner)
Event = RunnerEventT | SessionEventT
