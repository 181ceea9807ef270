"""A variant's result, one shape (docs/architecture.md, "A variant's result"): what a run's
variant (report/model.Variant) and a sweep's or workload's point of it
(blocks/sweep.SweepVariantPoint) both hold, declared once here, so that a field name has one type
wherever it is read, and a point is its run's variant copied (sweep/collect.variant_point).

- RunnerFacts: what the runner says of a variant besides its timings that a point keeps too (the
  run's variant adds its accuracy, dispatch and kernel facts: report/model.VariantFacts). A fact
  added here reaches the run model, the report, every point and `check` with no other change.
- HostTimes: what the user's model pays for one call (core/host_time.py).
- VariantResult: the two, and its ResultHead: the variant's name, spec, status, summary, output and
  verdict.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from sagetui.core.blocks.base import Count, Model, Provenance, Sha256, Summary, VerdictRecord

Cosine = Annotated[float, Field(ge=-1.000001, le=1.000001)]
NonNegative = Annotated[float, Field(ge=0)]


class RunnerFacts(Model):
    """The runner's facts of a variant (the `facts` of its `variant` and `block_done` events)
    that a point keeps as its run's variant does."""

    provenance: Provenance | None = None
    sdpa_backend: str | None = None  # the backend torch's SDPA ran (pinned or chosen)
    sdpa_backend_method: str | None = None
    # device memory one call allocates beyond what was held before it (its output and
    # workspace), from torch's allocator peak around the warm-up's timed call: GPU only
    peak_memory_bytes: Annotated[int, Field(ge=0)] | None = None
    # wall time of its backend's first call in its runner, synchronised (the warm-up's first):
    # what a model pays once for it (lazy imports, JIT compiling, handles, autotuning)
    first_call_s: Annotated[float, Field(ge=0)] | None = None
    # wall time its runner took to load it (its backend built, its extension modules imported
    # from their files): what a program pays to import it, before any call
    load_s: Annotated[float, Field(ge=0)] | None = None
    # schema 6: the call its host, GPU and back-to-back times are of (core/host_time.py): a
    # public function by name, or the decomposition and why
    timed_call: str | None = Field(default=None, json_schema_extra={"since": 6})


class HostTimes(Model):
    """What the user's model pays (core/host_time.py): each completed round's host time of one
    call, GPU time of the call and back-to-back time per call, their medians, whether a call is
    host-bound, the blocks measured again because their queue drained and those kept drained
    after every redo."""

    host_times_s: list[NonNegative] | None = None
    host_s: NonNegative | None = None
    back_to_back_times_s: list[NonNegative] | None = None
    back_to_back_s: NonNegative | None = None
    # schema 6: all three of the call the user makes (`timed_call`), in blocks of their own;
    # its GPU time beside the phases' `timing`; host-bound against it
    call_gpu_times_s: list[NonNegative] | None = None
    call_gpu_s: NonNegative | None = Field(default=None, json_schema_extra={"since": 6})
    host_bound: bool | None = None
    # schema 7: host_s over its GPU time (call_gpu_s, else the phases' p50), host_bound's figure
    host_share: NonNegative | None = Field(default=None, json_schema_extra={"since": 7})
    redone_blocks: Count | None = None
    drained_blocks: Count | None = None


class AccuracyMetrics(Model):
    """SageAttention's papers' metrics against fp32 attention of the same inputs
    (core/accuracy.py defines each): a run's variant's whole Accuracy and a point's
    AccuracyBrief both hold them."""

    cosine_similarity: Cosine | None = None
    relative_l1: NonNegative | None = None
    rmse: NonNegative | None = None
    max_abs_error: NonNegative | None = None


class AccuracyBrief(AccuracyMetrics):
    """A point's accuracy in brief (sweep/plan.accuracy): the metrics, its worst query head by
    relative L1 and that head's own, and its output's difference from the baseline's."""

    worst_head: Annotated[int, Field(ge=0)] | None = None
    worst_head_relative_l1: NonNegative | None = None
    against: str | None = None  # the baseline variant its output was compared with
    max_abs_diff: NonNegative | None = None
    mean_abs_diff: NonNegative | None = None
    byte_exact: bool | None = None


class ResultHead(Model):
    """Which variant, how it ended, and what it measured (first in a report's JSON)."""

    name: str
    backend: str | None = None
    spec: str | None = None
    status: Literal["ok", "failed", "excluded", "partial"] | None = None
    error: str | None = None
    timing: Summary | None = None  # the whole call (the phases' sum)
    checksum: float | None = None
    output_sha256: Sha256 | None = None
    verdict: VerdictRecord | None = None  # paired against the baseline's


class VariantResult(HostTimes, RunnerFacts, ResultHead):
    """A variant's result: a run's (report/model.Variant) and a point's
    (blocks/sweep.SweepVariantPoint) alike."""

    # the order its members were written in before the shape was shared (the recorded event
    # streams re-encode byte for byte: tests/test_parity.py); a field not named here follows
    WIRE_ORDER: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _in_wire_order(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if not isinstance(out, dict) or not self.WIRE_ORDER:
            return out
        rank = {k: i for i, k in enumerate(self.WIRE_ORDER)}
        return dict(sorted(out.items(), key=lambda kv: rank.get(kv[0], len(rank))))

    def accuracy_figures(self) -> AccuracyMetrics | None:
        """Its accuracy's metrics, whichever shape holds them (none here)."""
        return None
