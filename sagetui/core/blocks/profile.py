"""The report's "inside the main loop" section: per profiled variant, shares of sampled warp
time per phase (never seconds), with the counts they were computed from, so that `sagetui
check` recomputes every share (core/check_profile.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from sagetui.core.blocks.base import Provenance

Count = Annotated[int, Field(ge=0, le=10**15)]
Share = Annotated[float, Field(ge=0, le=1)]
UNIT = "share of sampled warp time"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)


class StallShare(_Model):
    reason: str  # ncu's stall_* column without the prefix, e.g. long_scoreboard
    samples: Count
    share: Share  # of the phase's samples (in MainloopProfile.stalls: of the kernel's)


class PhaseShare(_Model):
    samples: Count
    share: Share  # of all the kernel's samples
    share_error: Share  # binomial standard error, sqrt(share (1 - share) / total samples)
    instructions_executed: Count
    top_stalls: list[StallShare] = Field(default_factory=list)


class HotLine(_Model):
    file: str  # the kernel's source file (last path part)
    line: Annotated[int, Field(ge=1)]
    phase: str
    samples: Count
    share: Share  # of all the kernel's samples
    call: str | None = None  # the function the line calls (a name: reports hold no source)
    # the statement's code key (source.code_keys): a digest of its text, `#k` for the k-th
    # statement of that text in the kernel's body; a profile diff matches lines by it
    code: str | None = None


class MainloopProfile(_Model):
    variant: str
    backend: str | None = None
    unit: Literal["share of sampled warp time"] = "share of sampled warp time"
    kernel: str  # the sampled function's name as ncu gives it
    kernel_family: str  # rules.py's table that placed it
    kernel_file: str | None = None
    line_info: bool
    ncu_version: str | None = None
    # ncu's smsp__pcsamp_interval v: one sample per warp scheduler every 2^(5+v) cycles
    sampling_interval: Annotated[int, Field(ge=0, le=31)] | None = None
    sampling_interval_cycles: Count | None = None
    total_samples: Count
    placed_share: Share  # 1 - unattributed
    phases: dict[str, PhaseShare]  # rules.PHASES in order, then "unattributed"
    hot_lines: list[HotLine] = Field(default_factory=list)
    # every stall reason over the whole kernel (share: of total_samples), most first; None in
    # profiles recorded before it was kept
    stalls: list[StallShare] | None = None
    profile_wall_s: Annotated[float, Field(ge=0)] | None = None  # ncu's run, replays included
    command: list[str] | None = None  # the ncu command line
    provenance: Provenance | None = None  # the build profiled: its .so files and their sha256


class ShareDelta(_Model):
    """B's share against A's: each with its binomial standard error, the change (b - a) with
    both errors combined, and whether it lies beyond `ProfileDiff.z` combined errors."""

    a: Share
    a_error: Share
    b: Share
    b_error: Share
    change: Annotated[float, Field(ge=-1, le=1)]
    error: Share  # sqrt(a_error^2 + b_error^2): the two profiles are independent samples
    beyond: bool  # |change| > z * error and |change| >= min_change (ProfileDiff)


class PhaseDelta(ShareDelta):
    phase: str


class StallDelta(ShareDelta):
    reason: str  # shares of the kernel's samples (MainloopProfile.stalls)


class HotLineDelta(_Model):
    """One hot line of A and/or B: matched by its code key, else by file:line within the same
    phase, else by the one line of each that calls the same function in the same phase
    (profile/diff.py)."""

    a: HotLine | None  # None: not among A's hot lines
    b: HotLine | None
    matched_by: Literal["code", "line", "call"] | None = None  # None: on one side only
    moved: bool = False  # matched, at another file:line
    shares: ShareDelta | None = None  # matched only


class VariantDiff(_Model):
    a: str  # the baseline profile's variant
    b: str
    a_samples: Count
    b_samples: Count
    phases: list[PhaseDelta]
    stalls: list[StallDelta] | None = None  # None: a profile without `stalls`
    hot_lines: list[HotLineDelta] = Field(default_factory=list)


class ProfileDiff(_Model):
    """Each profiled variant against the baseline's profile (`sagetui profile` over two or
    more variants); every number is derived from `mainloop_profiles` and `sagetui check`
    recomputes it (core/profile/check.py)."""

    baseline: str
    z: Annotated[float, Field(gt=0)]  # a change: beyond z combined errors ...
    min_change: Share  # ... and at least this (a fraction of the kernel's samples)
    unit: Literal["share of sampled warp time"] = "share of sampled warp time"
    variants: list[VariantDiff]
