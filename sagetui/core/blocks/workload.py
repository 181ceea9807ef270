"""The report's `workload` block (`sagetui run --workload DIR`): a capture's calls replayed,
each runnable call a point measured as a sweep's point is (its SweepPoint: p50s, intervals,
verdicts, accuracy per head, raw samples), and the totals derived from them. Self-contained:
`sagetui check` recomputes the weights, totals, their speedups and intervals and the worst
call and head from the points (core/workload/check.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sagetui.core.blocks.base import Count, Model, Seconds, Sha256
from sagetui.core.blocks.sweep import Measured, SweepPoint
from sagetui.core.config import Shape
from sagetui.core.statistics.weighted_total import TOTAL_METHOD

Weight = Annotated[float, Field(gt=0)]


class ReplayedCall(Model):
    """One saved call of the capture: who made it, how often, and its point (or why none)."""

    index: Count  # its place among all the program's calls (the manifest's)
    module: str | None = None
    signature: str
    count: Annotated[int, Field(ge=1)]  # the program's calls of its signature (the manifest's)
    # count shared among the replayed calls of its signature, so each signature weighs its
    # count once in the totals; None: not replayed
    weight: Weight | None = None
    scale: float | None = None  # the program's own softmax scale (a run uses 1/sqrt(d))
    file: str
    shape: Shape | None = None
    skipped: str | None = None  # why it was not replayed (varlen, a mask...)
    point: Count | None = None  # its index in `points` (a replay stopped early lacks some)
    # True: the program passed it in float32 and it was replayed cast to the workload's
    # `cast_to` (`--dtype`); None: replayed as it was passed
    cast: Literal[True] | None = None


class WorkloadTotal(Model):
    """One variant over the whole workload: Σ weight · p50 of the replayed calls, and against
    the baseline the speedup of that total with its interval (statistics/weighted_total.py)."""

    variant: str
    seconds: Seconds | None = None  # None: a call has no p50 of this variant (`missing`)
    missing: list[Count] | None = None  # the calls (capture index) it lacks
    speedup_percent: float | None = None
    ci_low_percent: float | None = None
    ci_high_percent: float | None = None
    df: Annotated[float, Field(gt=0)] | None = None
    # the same in back-to-back time (core/host_time.py): Σ weight · back-to-back time per call,
    # and its speedup against the baseline's, paired by round the same way
    back_to_back_seconds: Seconds | None = None
    back_to_back_speedup_percent: float | None = None
    back_to_back_ci_low_percent: float | None = None
    back_to_back_ci_high_percent: float | None = None
    back_to_back_df: Annotated[float, Field(gt=0)] | None = None


class WorstOf(Model):
    """A variant's worst call by speed (the largest slowdown against the baseline: the lowest
    p50 speedup), its worst call by accuracy (the largest relative L1 against fp32 attention)
    and its worst query head over every call (the largest of a head's own relative L1)."""

    variant: str
    slowest_call: Count | None = None
    slowest_speedup_percent: float | None = None
    least_accurate_call: Count | None = None
    # None beside a least accurate call: its output was not finite, the worst of all
    # (accuracy.error_rank); the same for the worst head
    relative_l1: Annotated[float, Field(ge=0)] | None = None
    worst_head_call: Count | None = None
    worst_head: Count | None = None
    worst_head_relative_l1: Annotated[float, Field(ge=0)] | None = None


class Workload(Measured):
    directory: str
    manifest_sha256: Sha256  # of manifest.json's bytes: which capture this is
    calls_seen: Count  # the program's attention calls, saved or not
    selection: str | None = None  # --calls, as given
    cast_to: Literal["fp16", "bf16"] | None = None  # --dtype: what float32 calls ran as
    # how the calls were measured: "round by round", in turn (round r of every call before
    # round r + 1 of any: session/workload.py); None: each call whole, one after another
    # (reports before sagetui took them in turn)
    order: Literal["round by round"] | None = Field(default=None, json_schema_extra={"since": 8})
    calls: list[ReplayedCall]
    points: list[SweepPoint]
    totals: list[WorkloadTotal] = Field(default_factory=list)
    total_method: str = TOTAL_METHOD
    worst: list[WorstOf] = Field(default_factory=list)

    def point_of(self, call: ReplayedCall) -> SweepPoint | None:
        """The call's point; None: not replayed, or not reached (a replay stopped early)."""
        if call.point is None:
            return None
        return next((p for p in self.points if p.index == call.point), None)
