"""An Attribution (attribute.py) as the report's MainloopProfile: shares from counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sagetui.core import format as fmt
from sagetui.core.blocks.profile import HotLine, MainloopProfile, PhaseShare, StallShare
from sagetui.core.profile.rules import UNATTRIBUTED

if TYPE_CHECKING:  # the attribution chain (regexes, parsers) loads when a profile is built,
    from sagetui.core.profile.attribute import Attribution  # not when the console shows one

TOP_STALLS = 3


def interval_cycles(value: int | None) -> int | None:
    """ncu's sampling-interval setting as cycles between samples: 2^(5 + value)."""
    return None if value is None else 2 ** (5 + value)


def phase_shares(att: Attribution) -> dict[str, PhaseShare]:
    from sagetui.core.profile.attribute import share_and_error

    out: dict[str, PhaseShare] = {}
    for name, c in att.phases.items():
        share, err = share_and_error(c.samples, att.total_samples)
        stalls = [StallShare(reason=r, samples=n, share=share_and_error(n, c.samples)[0])
                  for r, n in c.stalls.most_common(TOP_STALLS) if n > 0]
        out[name] = PhaseShare(samples=c.samples, share=share, share_error=err,
                               instructions_executed=c.executed, top_stalls=stalls)
    return out


def kernel_stalls(att: Attribution) -> list[StallShare]:
    """Every stall reason over the whole kernel, most first: samples summed over the phases,
    shares of all the kernel's samples."""
    from collections import Counter

    from sagetui.core.profile.attribute import share_and_error

    total: Counter[str] = Counter()
    for c in att.phases.values():
        total.update(c.stalls)
    return [StallShare(reason=r, samples=n, share=share_and_error(n, att.total_samples)[0])
            for r, n in total.most_common() if n > 0]


def to_profile(att: Attribution, *, variant: str, family: str, backend: str | None = None,
               kernel: str | None = None, ncu_version: str | None = None,
               sampling_interval: int | None = None, wall_s: float | None = None,
               command: list[str] | None = None) -> MainloopProfile:
    from sagetui.core.profile.attribute import share_and_error
    from sagetui.core.profile.kernel_source import called_name

    phases = phase_shares(att)
    return MainloopProfile(
        variant=variant, backend=backend, kernel=kernel or att.function, kernel_family=family,
        kernel_file=att.kernel_file, line_info=att.line_info, ncu_version=ncu_version,
        sampling_interval=sampling_interval,
        sampling_interval_cycles=interval_cycles(sampling_interval),
        total_samples=att.total_samples,
        placed_share=1.0 - phases[UNATTRIBUTED].share if att.total_samples else 0.0,
        phases=phases,
        hot_lines=[HotLine(file=h.file, line=h.line, phase=h.phase, samples=h.samples,
                           share=share_and_error(h.samples, att.total_samples)[0],
                           call=called_name(h.statement), code=h.code)
                   for h in att.lines],
        stalls=kernel_stalls(att),
        profile_wall_s=wall_s, command=command)


def share_change(profile: MainloopProfile, baseline: MainloopProfile, phase: str) -> float | None:
    """The phase's share minus the baseline's (a fraction; x100 for points), or None."""
    a, b = profile.phases.get(phase), baseline.phases.get(phase)
    return None if a is None or b is None else a.share - b.share


def top_stall(phase: PhaseShare) -> str:
    if not phase.top_stalls:
        return "-"
    s = phase.top_stalls[0]
    return f"{s.reason} ({fmt.share(s.share, 0)})"
