"""The profile diff: each profiled variant against the baseline's profile, in one place.

Per phase and per stall reason, B's share of sampled warp time against A's: the change with
the two binomial errors combined, flagged when it lies beyond Z combined errors and is at least
MIN_CHANGE (docs/statistics.md, Profile diff). Hot lines are matched by their code key first
(a digest of the statement's text: a build whose lines moved keeps it), then by file:line
within the same phase (a statement edited in place, where both have code keys), then by the
one line of each side that calls the same function (or opens the same kind of loop or branch)
in the same phase (profiles recorded before code keys). Pure: reads the profiles only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sagetui.core.blocks.profile import (
    HotLine,
    HotLineDelta,
    MainloopProfile,
    PhaseDelta,
    ProfileDiff,
    ShareDelta,
    StallDelta,
    VariantDiff,
)
from sagetui.core.profile.attribute import share_and_error

Z = 3.0  # combined standard errors beyond which a change is reported as one ...
MIN_CHANGE = 0.001  # ... when it is also at least 0.1 points: rare events come in clusters


@dataclass(frozen=True)
class Bar:
    """What counts as a change: beyond z combined errors and at least min_change."""

    z: float = Z
    min_change: float = MIN_CHANGE

    def passed(self, change: float, error: float) -> bool:
        return abs(change) > self.z * error and abs(change) >= self.min_change


def share_delta(na: int, ta: int, nb: int, tb: int, bar: Bar) -> dict[str, float | bool]:
    """na of ta against nb of tb: the fields of a ShareDelta."""
    a, ea = share_and_error(na, ta)
    b, eb = share_and_error(nb, tb)
    err = math.hypot(ea, eb)
    return {"a": a, "a_error": ea, "b": b, "b_error": eb, "change": b - a, "error": err,
            "beyond": bar.passed(b - a, err)}


def _phases(a: MainloopProfile, b: MainloopProfile, bar: Bar) -> list[PhaseDelta]:
    names = dict.fromkeys([*a.phases, *b.phases])
    return [PhaseDelta(phase=n, **share_delta(
        a.phases[n].samples if n in a.phases else 0, a.total_samples,
        b.phases[n].samples if n in b.phases else 0, b.total_samples, bar)) for n in names]


def _stalls(a: MainloopProfile, b: MainloopProfile, bar: Bar) -> list[StallDelta] | None:
    if a.stalls is None or b.stalls is None:
        return None
    na = {s.reason: s.samples for s in a.stalls}  # every reason: a missing one had no sample
    nb = {s.reason: s.samples for s in b.stalls}
    return [StallDelta(reason=r, **share_delta(na.get(r, 0), a.total_samples, nb.get(r, 0),
                                               b.total_samples, bar))
            for r in dict.fromkeys([*na, *nb])]


Key = Callable[[HotLine], object]
PASSES: tuple[tuple[str, Key], ...] = (
    ("code", lambda h: h.code),
    # a statement edited in place: only where code keys say the text changed
    ("line", lambda h: (h.file, h.line, h.phase) if h.code else None),
    ("call", lambda h: (h.call, h.phase)),
)


def match_lines(a: Sequence[HotLine], b: Sequence[HotLine]) -> list[tuple[int, int, str]]:
    """(index in a, index in b, how) for each pair, pass by pass; in each pass a key must be
    set and name one line on each side among those still unmatched."""
    pairs: list[tuple[int, int, str]] = []
    free_a, free_b = set(range(len(a))), set(range(len(b)))
    for how, key in PASSES:
        ka: dict[object, list[int]] = {}
        kb: dict[object, list[int]] = {}
        for i in sorted(free_a):
            ka.setdefault(key(a[i]), []).append(i)
        for j in sorted(free_b):
            kb.setdefault(key(b[j]), []).append(j)
        for k, ia in ka.items():
            jb = kb.get(k, [])
            if k is None or len(ia) != 1 or len(jb) != 1:
                continue
            pairs.append((ia[0], jb[0], how))
            free_a.discard(ia[0])
            free_b.discard(jb[0])
    return sorted(pairs)


def _hot_lines(a: MainloopProfile, b: MainloopProfile, bar: Bar) -> list[HotLineDelta]:
    """Matched pairs in A's order, then A's lines B lacks among its hot lines, then B's."""
    pairs = match_lines(a.hot_lines, b.hot_lines)
    out = [HotLineDelta(a=a.hot_lines[i], b=b.hot_lines[j], matched_by=how,
                        moved=(a.hot_lines[i].file, a.hot_lines[i].line)
                        != (b.hot_lines[j].file, b.hot_lines[j].line),
                        shares=ShareDelta(**share_delta(a.hot_lines[i].samples, a.total_samples,
                                                        b.hot_lines[j].samples, b.total_samples,
                                                        bar)))
           for i, j, how in pairs]
    out += [HotLineDelta(a=h, b=None) for i, h in enumerate(a.hot_lines)
            if i not in {i for i, _, _ in pairs}]
    out += [HotLineDelta(a=None, b=h) for j, h in enumerate(b.hot_lines)
            if j not in {j for _, j, _ in pairs}]
    return out


def variant_diff(a: MainloopProfile, b: MainloopProfile, bar: Bar = Bar()) -> VariantDiff:
    """B's profile against A's."""
    return VariantDiff(a=a.variant, b=b.variant, a_samples=a.total_samples,
                       b_samples=b.total_samples, phases=_phases(a, b, bar),
                       stalls=_stalls(a, b, bar), hot_lines=_hot_lines(a, b, bar))


def profile_diff(profiles: Sequence[MainloopProfile], baseline: str | None = None,
                 bar: Bar = Bar()) -> ProfileDiff | None:
    """Every profile against the baseline's (the one named `baseline`, else the first); None
    for fewer than two profiles."""
    if len(profiles) < 2:
        return None
    base = next((p for p in profiles if p.variant == baseline), profiles[0])
    return ProfileDiff(baseline=base.variant, z=bar.z, min_change=bar.min_change,
                       variants=[variant_diff(base, p, bar) for p in profiles if p is not base])
