"""`sagetui check` for the main-loop section: every share recomputed from the stored counts,
and the profile diff recomputed from the profiles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sagetui.core.blocks.profile import MainloopProfile, ProfileDiff
from sagetui.core.profile.attribute import share_and_error
from sagetui.core.profile.rules import PHASES, UNATTRIBUTED
from sagetui.core.profile.summary import interval_cycles

Eq = Callable[[str, Any, Any, str], None]


def check_profiles(profiles: list[MainloopProfile], eq: Eq) -> None:
    for i, p in enumerate(profiles):
        at = f"$.mainloop_profiles[{i}]"
        eq(f"{at}.phases", ", ".join(p.phases), ", ".join([*PHASES, UNATTRIBUTED]),
           "every phase, in order")
        total = p.total_samples
        eq(f"{at}.total_samples", total, sum(ph.samples for ph in p.phases.values()),
           "the sum of the phases' samples")
        for name, ph in p.phases.items():
            share, err = share_and_error(ph.samples, total)
            eq(f"{at}.phases.{name}.share", ph.share, share, "samples / total_samples")
            eq(f"{at}.phases.{name}.share_error", ph.share_error, err,
               "binomial: sqrt(share (1 - share) / total_samples)")
            for j, s in enumerate(ph.top_stalls):
                eq(f"{at}.phases.{name}.top_stalls[{j}].share", s.share,
                   share_and_error(s.samples, ph.samples)[0], "stall samples / phase samples")
                if s.samples > ph.samples:
                    eq(f"{at}.phases.{name}.top_stalls[{j}].samples", s.samples, ph.samples,
                       "at most the phase's samples")
        if UNATTRIBUTED in p.phases and total:
            eq(f"{at}.placed_share", p.placed_share, 1.0 - p.phases[UNATTRIBUTED].share,
               "1 - the unattributed share")
        for j, h in enumerate(p.hot_lines):
            eq(f"{at}.hot_lines[{j}].share", h.share, share_and_error(h.samples, total)[0],
               "line samples / total_samples")
            if h.phase not in p.phases:
                eq(f"{at}.hot_lines[{j}].phase", h.phase, " or ".join(p.phases),
                   "one of the phases")
        for j, s in enumerate(p.stalls or []):
            eq(f"{at}.stalls[{j}].share", s.share, share_and_error(s.samples, total)[0],
               "stall samples / total_samples")
        if p.stalls is not None and sum(s.samples for s in p.stalls) > total:
            eq(f"{at}.stalls", sum(s.samples for s in p.stalls), total,
               "the stall reasons' samples are at most total_samples")
        if p.sampling_interval is not None:
            eq(f"{at}.sampling_interval_cycles", p.sampling_interval_cycles,
               interval_cycles(p.sampling_interval), "2^(5 + sampling_interval)")


def check_diff(diff: ProfileDiff | None, profiles: list[MainloopProfile], eq: Eq) -> None:
    """The profile diff recomputed from the profiles it names, every field (diff.py)."""
    if diff is None:
        return
    from sagetui.core.profile.diff import Bar, variant_diff

    at = "$.mainloop_diff"
    by_name = {p.variant: p for p in profiles}
    base = by_name.get(diff.baseline)
    if base is None:
        eq(f"{at}.baseline", diff.baseline, " or ".join(by_name) or "none",
           "one of the profiled variants")
        return
    eq(f"{at}.variants", ", ".join(v.b for v in diff.variants),
       ", ".join(p.variant for p in profiles if p is not base), "every other profile, in order")
    for i, v in enumerate(diff.variants):
        other = by_name.get(v.b)
        if other is None or v.a != base.variant:
            continue  # named in the line above
        want = variant_diff(base, other, Bar(diff.z, diff.min_change))
        _same(f"{at}.variants[{i}]", v.model_dump(), want.model_dump(), eq)


def _same(path: str, got: Any, want: Any, eq: Eq) -> None:
    """Every leaf of `got` against `want`; a missing or extra part is one line."""
    if isinstance(got, dict) and isinstance(want, dict):
        for k in dict.fromkeys([*got, *want]):
            _same(f"{path}.{k}", got.get(k), want.get(k), eq)
    elif isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for j, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(f"{path}[{j}]", g, w, eq)
    elif isinstance(got, list | dict) or isinstance(want, list | dict) \
            or (got is None) != (want is None):
        eq(path, _brief(got), _brief(want), "recomputed from the profiles")
    else:
        eq(path, got, want, "recomputed from the profiles")


def _brief(x: Any) -> str:
    return f"{len(x)} entries" if isinstance(x, list | dict) else repr(x)
