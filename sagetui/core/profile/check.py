"""`sagetui check` for the main-loop section: every share recomputed from the stored counts,
and the profile diff recomputed from the profiles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sagetui.core.blocks.profile import MainloopProfile, ProfileDiff
from sagetui.core.profile.attribute import share_and_error
from sagetui.core.profile.rules import PHASES, UNATTRIBUTED
from sagetui.core.profile.shares import interval_cycles

Eq = Callable[[str, Any, Any, str], None]


def check_profiles(profiles: list[MainloopProfile], eq: Eq, complete: bool = False) -> None:
    """`complete`: a report of a schema that records every profile's `stalls` (5 on)."""
    for i, p in enumerate(profiles):
        at = f"$.mainloop_profiles[{i}]"
        if complete and p.stalls is None:
            eq(f"{at}.stalls", None, "present", "every stall reason over the kernel")
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
        _held_lists(at, p, eq)
        if p.sampling_interval is not None:
            eq(f"{at}.sampling_interval_cycles", p.sampling_interval_cycles,
               interval_cycles(p.sampling_interval), "2^(5 + sampling_interval)")


def _held_lists(at: str, p: MainloopProfile, eq: Eq) -> None:
    """The lists a profile keeps the head of, held to its counts: each most first; fewer hot
    lines than HOT_LINES are every sampled line, so they hold every sample placed on a line
    (all but, at most, the unattributed ones); and each stall reason over the kernel is the
    sum over the phases, so it is at least the phases' top stalls of that reason and at most
    that plus what the phases that list TOP_STALLS of their own can hide (each at most its
    smallest listed count)."""
    from sagetui.core.profile.attribute import HOT_LINES
    from sagetui.core.profile.shares import TOP_STALLS

    def most_first(path: str, counts: list[int]) -> None:
        eq(path, counts, sorted(counts, reverse=True), "most samples first")

    most_first(f"{at}.hot_lines", [h.samples for h in p.hot_lines])
    lined = sum(h.samples for h in p.hot_lines)
    floor = p.total_samples - (p.phases[UNATTRIBUTED].samples if UNATTRIBUTED in p.phases else 0)
    if len(p.hot_lines) < HOT_LINES and lined < floor:
        eq(f"{at}.hot_lines", f"{len(p.hot_lines)} lines, {lined} samples",
           f"every sampled line: at least {floor} samples", f"fewer than {HOT_LINES} hot "
           "lines are every line sampled: every sample but the unattributed ones")
    for name, ph in p.phases.items():
        most_first(f"{at}.phases.{name}.top_stalls", [s.samples for s in ph.top_stalls])
        if sum(s.samples for s in ph.top_stalls) > ph.samples:
            eq(f"{at}.phases.{name}.top_stalls", sum(s.samples for s in ph.top_stalls),
               ph.samples, "a phase's stall samples are at most its samples")
    if p.stalls is None:
        return
    most_first(f"{at}.stalls", [s.samples for s in p.stalls])
    # a row's stall reasons count at most its samples (ncu exports some reasons as no column):
    # a phase that lists fewer than TOP_STALLS reasons lists all of its own
    most = sum(sum(s.samples for s in ph.top_stalls) if len(ph.top_stalls) < TOP_STALLS
               else ph.samples for ph in p.phases.values())
    kernel = {s.reason: s.samples for s in p.stalls}
    if sum(kernel.values()) > most:
        eq(f"{at}.stalls", sum(kernel.values()), f"at most {most}", "the kernel's stall "
           "samples: at most each full phase's samples and each other phase's listed stalls")
    reasons = dict.fromkeys([*kernel, *(s.reason for ph in p.phases.values()
                                        for s in ph.top_stalls)])
    for r in reasons:
        listed = sum(s.samples for ph in p.phases.values() for s in ph.top_stalls
                     if s.reason == r)
        room = sum(min(s.samples for s in ph.top_stalls) for ph in p.phases.values()
                   if len(ph.top_stalls) >= TOP_STALLS
                   and r not in {s.reason for s in ph.top_stalls})
        got = kernel.get(r, 0)
        if not listed <= got <= listed + room:
            eq(f"{at}.stalls", f"{r}: {got} samples",
               f"{r}: {listed} to {listed + room}", "the kernel's stall reason summed over "
               "its phases: their top stalls of it, and what their full lists may hide")


def check_diff(diff: ProfileDiff | None, profiles: list[MainloopProfile], eq: Eq) -> None:
    """The profile diff recomputed from the profiles it names, every field (diff.py)."""
    if diff is None:
        return
    from sagetui.core.profile.diff import MIN_CHANGE, Bar, Z, variant_diff

    at = "$.mainloop_diff"
    eq(f"{at}.z", diff.z, Z, "the bar sagetui's profile diff uses (core/profile/diff.py)")
    eq(f"{at}.min_change", diff.min_change, MIN_CHANGE,
       "the bar sagetui's profile diff uses (core/profile/diff.py)")
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
