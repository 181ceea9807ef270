"""One run as one model: the run's own facts and a model per variant (docs/architecture.md,
"The run model").

The session and the console each hold a RunModel and feed it the same events through the one
fold (fold.py); the report is built from it by a pure function (build.py), and a saved report
loads into it (load.py). Each thread owns its model: the only thing two models in one process
share is a completed round's samples, which never change once written (see PhaseSamples).

A variant's facts are either measured (samples, blocks, the runner's facts) or, for a model
loaded from a report, recorded: `VariantModel.recorded` then holds the report's entry, and
figures.py reads a derived number from it instead of computing it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sagetui.core.blocks.profile import MainloopProfile
from sagetui.core.config import RunConfig
from sagetui.core.report.model import Fault, Variant, VariantFacts
from sagetui.core.samples import GrowableArray, RoundSeries
from sagetui.core.statistics.threshold import Threshold

TOTAL = "total"  # the whole call's samples, beside the phases'


class PhaseSamples:
    """One phase (or the total) of one variant: its completed rounds in one array that only
    grows (`values[bounds[i]:bounds[i + 1]]` is round `rounds[i]`), the round being measured
    apart until it completes or is dropped.

    A view of the completed part never changes, so a model in another thread may hold it: the
    console's model adopts the session's (`adopt`) instead of folding a second copy."""

    __slots__ = ("_values", "_bounds", "rounds", "pending")

    def __init__(self, capacity: int = 64) -> None:
        # `capacity`: the samples the run plans for it, reserved at once (untouched pages cost
        # no memory) so that it never grows by copying: a run of 10^6 samples doubled its
        # arrays twenty times, and the freed copies stayed in the process's heap
        self._values = GrowableArray(capacity=capacity)
        self._bounds: list[int] = [0]
        self.rounds: list[int] = []
        self.pending: dict[int, GrowableArray] = {}  # round -> its samples so far

    def add(self, round_: int, values: Any, capacity: int = 64) -> None:
        """Samples of the round being measured (`capacity`: its planned number, reserved)."""
        got = self.pending.get(round_)
        if got is None:
            got = self.pending[round_] = GrowableArray(capacity=capacity)
        got.extend(values)

    def complete(self, round_: int) -> np.ndarray | None:
        """Move the round's samples into the completed part; the round's values (a view), or
        None when it has none."""
        got = self.pending.pop(round_, None)
        if got is None or not len(got):
            return None
        start = len(self._values)
        self._values.extend(got.view)
        self._bounds.append(len(self._values))
        self.rounds.append(round_)
        return self._values.view[start:]

    def drop(self, round_: int | None = None) -> None:
        """Forget a round's unfinished samples (every round's when None)."""
        if round_ is None:
            self.pending.clear()
        else:
            self.pending.pop(round_, None)

    def adopt(self, series: RoundSeries, rounds: list[int]) -> None:
        """Hold another model's completed rounds (the same numbers, folded from the same events)
        instead of this model's own: their pending samples go."""
        self._values = GrowableArray()
        self._values.adopt(series.values)
        self._bounds = series.bounds.tolist()
        self.rounds = list(rounds)
        for r in rounds:
            self.pending.pop(r, None)

    @property
    def values(self) -> np.ndarray:
        """Every completed round's samples, in order (a view)."""
        return self._values.view

    def series(self) -> RoundSeries:
        return RoundSeries(self._values.view, np.asarray(self._bounds, dtype=np.int64))

    def round_values(self, i: int) -> np.ndarray:
        return self._values.view[self._bounds[i]: self._bounds[i + 1]]

    def starts(self) -> list[int]:
        """Where each round begins in the samples' order (completed, then the unfinished)."""
        return self._bounds[:-1] + ([len(self._values)] if self.pending else [])

    def pending_values(self) -> list[np.ndarray]:
        """The unfinished rounds' samples so far, in round order (copies)."""
        return [self.pending[r].view.copy() for r in sorted(self.pending)]

    def __len__(self) -> int:
        return len(self._values)


@dataclass
class BlockFacts:
    """What one block of a variant's iterations left besides its samples."""

    telemetry: dict[str, Any]
    output_sha256: str | None = None
    checksum: float | None = None
    max_abs_diff: float | None = None
    mean_abs_diff: float | None = None
    host_call_s: float | None = None  # core/host_time.py's figures
    call_gpu_s: float | None = None
    back_to_back_s: float | None = None
    redone: int = 0
    drained: bool = False


@dataclass
class VariantModel:
    name: str
    index: int  # its place in the run: its colour in the console
    backend: str | None = None
    spec: str | None = None
    path: str | None = None
    options: dict[str, Any] = field(default_factory=dict)  # as configured
    status: str = "pending"  # pending, ok, failed, excluded (the two-build report: partial)
    error: str | None = None
    failed_round: int | None = None  # the round it failed in (None: at setup, or not failed)
    kernel: str | None = None  # the tile configuration it runs (core/scheduler.py)
    phases: list[tuple[str, str | None]] = field(default_factory=list)  # (name, parent)
    # what the runner said of it (its provenance, accuracy, the backend SDPA ran...)
    facts: VariantFacts = field(default_factory=VariantFacts)
    samples: dict[str, PhaseSamples] = field(default_factory=dict)  # phase -> ...; TOTAL
    round_medians: dict[int, float] = field(default_factory=dict)  # completed round -> s
    round_summaries: dict[int, dict[str, Any]] = field(default_factory=dict)  # the total's
    blocks: dict[tuple[int, int], BlockFacts] = field(default_factory=dict)  # (round, half)
    asked: list[int] = field(default_factory=list)  # the rounds it was asked to run
    first_output_sha256: str | None = None  # its first block's: byte-exact is against it
    output_hashes: set[str] = field(default_factory=set)
    # the one analysis (core/statistics/analysis.py), as last computed
    verdict: dict[str, Any] | None = None
    verdict_computed: bool = False  # computed by sagetui for a report that had none
    drift: dict[str, Any] | None = None
    speedup_percent: float | None = None
    recorded: Variant | None = None  # a model loaded from a report: the report's entry

    @property
    def total(self) -> PhaseSamples:
        return self.phase(TOTAL)

    def phase(self, name: str, capacity: int = 64) -> PhaseSamples:
        """A phase's samples (made on first use, `capacity` reserved)."""
        got = self.samples.get(name)
        if got is None:
            got = self.samples[name] = PhaseSamples(capacity)
        return got

    @property
    def completed_rounds(self) -> list[int]:
        st = self.samples.get(TOTAL)
        return st.rounds if st is not None else []  # (do not modify)

    def leaves(self) -> list[str]:
        parents = {p for _, p in self.phases if p}
        return [n for n, _ in self.phases if n not in parents]

    def children(self, parent: str) -> list[str]:
        return [n for n, p in self.phases if p == parent]

    def last_block(self) -> BlockFacts | None:
        return self.blocks[max(self.blocks)] if self.blocks else None


@dataclass
class RunProgress:
    """Where a run is (no clocks: the console adds its own for the ETA)."""

    stage: str = "pending"  # pending, starting, warm-up, measuring, post-run, tail study, done
    round: int = -1  # the round being measured
    variants_in_round: int = 0
    iteration_in_round: int = 0
    iterations_done: int = 0
    current_variant: str | None = None
    # a sweep's point or a workload's call being measured (its round where the calls take
    # their rounds in turn): the run's own model has no round of its own then
    point: tuple[int, int, int | None, bool] | None = None  # index, total, round, a call


@dataclass
class RunModel:
    """A run (live or as a report kept it): its own facts and its variants."""

    config: RunConfig | None = None  # None: a report that sagetui did not make
    status: str = "pending"  # status.py's states
    status_detail: list[str] = field(default_factory=list)  # why it is not complete
    created_utc: str | None = None
    host: dict[str, Any] = field(default_factory=dict)  # the session's platform and host
    runner: dict[str, Any] = field(default_factory=dict)  # hello: python, torch, device...
    ready: dict[str, Any] = field(default_factory=dict)  # input_sha256, device, gpu
    variants: dict[str, VariantModel] = field(default_factory=dict)
    baseline: str | None = None
    threshold: Threshold | None = None
    schedule: list[dict[str, Any]] = field(default_factory=list)  # completed blocks
    completed_rounds: list[int] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    decomposition: dict[str, Any] | None = None
    decomposition_skipped: str | None = None
    # the late figures still to come (core/run/late.py's keys): set when the last round is in
    # (`measured`), emptied as they arrive; what is left at the end was never computed
    computing: list[str] = field(default_factory=list)
    measured: bool = False  # the last round is in: the verdicts are final
    tail_rows: list[dict[str, Any]] = field(default_factory=list)
    progress: RunProgress = field(default_factory=RunProgress)
    # `sagetui profile` (or p in the console): inside each profiled variant's main loop
    profiles: list[MainloopProfile] = field(default_factory=list)
    # a saved report's own facts that no variant holds (the phase-breakdown report: a phase
    # breakdown without variants; 001: one scheduler block for both builds of one kernel)
    report: Any = None  # the Report it was loaded from (core.report.model.Report)
    version: int = 0  # moved by every fold that changes what a display shows
    sample_version: int = 0  # moved by every batch of iterations (the iteration plot)
    # core/run/figures.of: each variant's figures at `version`, made when first asked
    figures: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # core/run/quantiles.QuantileView per (variant, phase): they last across versions
    views: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False, compare=False)

    def variant(self, name: str) -> VariantModel:
        if name not in self.variants:
            self.variants[name] = VariantModel(name=name, index=len(self.variants))
        return self.variants[name]

    def active(self) -> list[str]:
        return [n for n, v in self.variants.items() if v.status == "ok"]

    def planned_samples(self) -> int:
        """The samples a variant's phase will hold if every round runs (capped: a bound
        reserved in address space, not a promise)."""
        cfg = self.config
        return min(cfg.round_limit * cfg.iterations, 1 << 22) if cfg is not None else 64

    @property
    def live(self) -> bool:
        return self.report is None
