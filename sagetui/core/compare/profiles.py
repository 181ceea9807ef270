"""Profiles side by side, phase by phase: for each profiled variant (matched across reports by
the one rule, match.py), each phase's share of sampled warp time with its binomial standard
error, and for B, C, ...: the change against A's share in points, with the two errors combined
(sqrt(e_A^2 + e_B^2): the shares of two profiles are independent estimates). Shares are not
latencies: a profile has nothing to gate on."""

from __future__ import annotations

import math

from sagetui.core import format as fmt
from sagetui.core.blocks.profile import MainloopProfile, PhaseShare, VariantDiff
from sagetui.core.compare.facts import build_difference
from sagetui.core.compare.match import letter, match
from sagetui.core.compare.table import Column, Line, Table, key_columns
from sagetui.core.profile.diff import profile_diff, variant_diff
from sagetui.core.report.io import one_line
from sagetui.core.report.model import Report

NOTES = ["share %: of the kernel's sampled warp time ± its binomial standard error",
         "Δ pt: the share minus A's, in points, ± both errors combined (sampling alone: two "
         "profiles of one build also differ by their run) · variants match by name, else "
         "baseline with baseline, else in order (matched)"]


def _baseline(r: Report) -> str | None:
    base = r.baseline or (r.config or {}).get("baseline")
    return base if isinstance(base, str) else None


def phase_share(ph: PhaseShare | None) -> str:
    return "" if ph is None else f"{fmt.fraction_pct(ph.share)} ± " \
        f"{fmt.fraction_pct(ph.share_error)}"


def change(a: PhaseShare | None, b: PhaseShare | None) -> str:
    if a is None or b is None:
        return ""
    err = math.hypot(a.share_error, b.share_error)
    return f"{fmt.pct(100 * (b.share - a.share))} ± {fmt.fraction_pct(err)}"


def _keyed(reports: list[Report]) -> list[dict[str, tuple[MainloopProfile, str]]]:
    """Per report, its profiles keyed by the name of A's profile each matches (match.py), with
    how it matched; an unmatched profile keeps its own name."""
    profs = [list(r.mainloop_profiles or []) for r in reports]
    names = [[p.variant for p in ps] for ps in profs]
    keyed: list[dict[str, tuple[MainloopProfile, str]]] = []
    for i, ps in enumerate(profs):
        pairs = match(names[0], _baseline(reports[0]), names[i], _baseline(reports[i])) \
            if i else {}
        keyed.append({pairs.get(p.variant, (p.variant, "-"))[0] if i else p.variant:
                      (p, pairs.get(p.variant, (p.variant, "-"))[1] if i else "")
                      for p in ps})
    return keyed


def profile_diffs(labelled: list[tuple[str, Report]]) -> list[VariantDiff]:
    """The profile diff the Compare tab shows. Of two or more reports: each profile of B, C,
    ... against the profile of A it matches, each named by its report's letter; of one report:
    its profiles against its baseline's (profile/diff.py, one rule for both)."""
    reports = [r for _, r in labelled]
    if len(reports) == 1:
        diff = profile_diff(reports[0].mainloop_profiles or [], _baseline(reports[0]))
        return diff.variants if diff else []
    keyed = _keyed(reports)

    def named(i: int, p: MainloopProfile) -> MainloopProfile:
        return p.model_copy(update={"variant": f"{letter(i)}: {p.variant}"})
    return [variant_diff(named(0, keyed[0][name][0]), named(i, p))
            for i, k in enumerate(keyed[1:], start=1)
            for name, (p, _) in k.items() if name in keyed[0]]


def profile_table(labelled: list[tuple[str, Report]]) -> Table:
    reports = [r for _, r in labelled]
    keyed = _keyed(reports)
    many = len(reports) > 1
    cols = key_columns(Column("variant"), Column("phase", kind="phase"), many=many)
    for i in range(len(reports)):
        x = letter(i)
        cols.append(Column(f"{x} share %", True))
        if i:
            cols.append(Column(f"{x} Δ pt vs A", True))
    table = Table(cols, [], NOTES if many else NOTES[:1])
    for name in dict.fromkeys(n for k in keyed for n in k):
        mine = [k[name][0] if name in k else None for k in keyed]
        label = one_line(" / ".join(dict.fromkeys(p.variant for p in mine if p)))
        hows = [k[name][1] for k in keyed[1:] if name in k]
        matched = (next((h for h in hows if h != "name"), "name") if hows and mine[0]
                   else "-")
        head = [label, "samples"] + ([matched] if many else [])
        for i, p in enumerate(mine):
            head += [fmt.count(p.total_samples) if p else ""] + ([""] if i else [])
        table.lines.append(Line(head, total=True))
        for i, p in enumerate(mine[1:], start=1):
            diff = build_difference(mine[0].provenance if mine[0] else None,
                                    p.provenance if p else None)
            if diff:
                table.builds.append(f"{letter(i)} {label}: another build ({diff})")
        phases = dict.fromkeys(ph for p in mine if p for ph in p.phases)
        for ph in phases:
            row = [label, ph] + ([""] if many else [])
            a = mine[0].phases.get(ph) if mine[0] else None
            for i, p in enumerate(mine):
                mine_ph = p.phases.get(ph) if p else None
                row.append(phase_share(mine_ph))
                if i:
                    row.append(change(a, mine_ph))
            table.lines.append(Line(row))
    return table
