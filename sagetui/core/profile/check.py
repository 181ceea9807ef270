"""`sagetui check` for the main-loop section: every share recomputed from the stored counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sagetui.core.profile.attribute import share_and_error
from sagetui.core.profile.model import MainloopProfile
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
        if p.sampling_interval is not None:
            eq(f"{at}.sampling_interval_cycles", p.sampling_interval_cycles,
               interval_cycles(p.sampling_interval), "2^(5 + sampling_interval)")
