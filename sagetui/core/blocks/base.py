"""The report's building blocks that the sweep block (blocks/sweep.py) and the main-loop profiles
(blocks/profile.py) share with the report model (report/model.py): the strict base model, its
units, the latency summary, the scheduler facts, a fault, a build's provenance and a paired
verdict with its threshold (a sweep's or a workload's point carries one)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Seconds = Annotated[float, Field(gt=0, le=1e6, description="seconds")]
Count = Annotated[int, Field(ge=0, le=10**9)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)


class Summary(Model):
    """Latency summary; percentiles by numpy's "linear" method (see core.stats)."""

    count: Annotated[int, Field(ge=1, le=10**9)]
    mean_s: Seconds
    p50_s: Seconds
    p90_s: Seconds
    p95_s: Seconds
    p99_s: Seconds
    min_s: Seconds
    max_s: Seconds


class Scheduler(Model):
    cta_q: Annotated[int, Field(ge=1, le=4096)]
    cta_k: Annotated[int, Field(ge=1, le=4096)]
    warp_q: Annotated[int, Field(ge=1, le=4096)] | None = None
    warp_k: Annotated[int, Field(ge=1, le=4096)] | None = None
    warps_per_cta: Count | None = None
    threads_per_cta: Count | None = None
    dynamic_shared_memory_bytes: Count | None = None
    q_ctas_per_head: Count | None = None
    heads: Count | None = None
    grid_ctas: Count | None = None
    k_iterations_per_cta: Count | None = None
    q_tail_rows: Count | None = None
    k_tail_rows: Count | None = None
    explicit_pipeline_stages: Count | None = None
    # sagetui's additions
    kernel: str | None = None
    batch: Count | None = None
    q_len: Count | None = None
    kv_len: Count | None = None
    head_dim: Count | None = None
    causal: bool | None = None
    k_iterations_total: Count | None = None
    scheduled_q_rows: Count | None = None
    q_row_efficiency: Annotated[float, Field(gt=0, le=1)] | None = None
    sm_count: Count | None = None
    ctas_per_sm: Count | None = None
    waves: Annotated[float, Field(ge=0)] | None = None


class Fault(Model):
    """Something that went wrong during the run and what was kept."""

    kind: str
    message: str
    variant: str | None = None
    phase: str | None = None
    round: Count | None = None
    stderr_tail: list[str] = Field(default_factory=list)


class SoFile(Model):
    module: str
    path: str
    sha256: Sha256 | None = None
    size_bytes: Count | None = None
    mtime_utc: str | None = None
    error: str | None = None


class Provenance(Model):
    """Where a variant's code came from (runner/provenance.py): every shared library it calls,
    with its sha256, and the SageAttention version. Run variants, sweep points and profiles
    carry it, so that `sagetui compare` can say which builds it compares."""

    files: list[SoFile] = Field(default_factory=list)
    sageattention_dist: str | None = None
    sageattention_version: str | None = None
    sageattention_path: str | None = None


class SameThreshold(Model):
    """The SAME threshold verdicts are judged with, and where it came from
    (core/statistics/threshold.Threshold.fields())."""

    threshold_percent: float
    threshold_source: Literal["default", "calibration", "--threshold", "--noise-floor"] | None \
        = None
    noise_floor_percent: Annotated[float, Field(ge=0, le=100)] | None = None
    calibration_key: str | None = None  # the calibration entry it used, and when that was
    calibrated_utc: str | None = None


class VerdictRecord(SameThreshold):
    """A paired verdict (core/statistics/verdict.Verdict) as a report records it, and the
    threshold it was judged with."""

    state: Literal["FASTER", "SLOWER", "SAME", "INCONCLUSIVE"]
    estimate_percent: float | None = None
    ci_low_percent: float | None = None
    ci_high_percent: float | None = None
    confidence: float = 0.95
    rounds: Count
    method: str
