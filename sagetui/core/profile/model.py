"""The report's "inside the main loop" section: per profiled variant, shares of sampled warp
time per phase (never seconds), with the counts they were computed from, so that `sagetui
check` recomputes every share (core/check_profile.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from sagetui.core.report.base import Provenance

Count = Annotated[int, Field(ge=0, le=10**15)]
Share = Annotated[float, Field(ge=0, le=1)]
UNIT = "share of sampled warp time"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class StallShare(_Model):
    reason: str  # ncu's stall_* column without the prefix, e.g. long_scoreboard
    samples: Count
    share: Share  # of the phase's samples


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
    profile_wall_s: Annotated[float, Field(ge=0)] | None = None  # ncu's run, replays included
    command: list[str] | None = None  # the ncu command line
    provenance: Provenance | None = None  # the build profiled: its .so files and their sha256
