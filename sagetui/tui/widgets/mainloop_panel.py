""""Inside the main loop": per profiled variant, one stacked bar of shares of sampled warp time
per phase, a table (share ± error, top stall, change against the baseline's share) and the hot
lines. Fed from a report's mainloop_profiles (`sagetui profile`), so `sagetui view` shows it."""

from __future__ import annotations

from rich.text import Text

from sagetui.core import format as fmt
from sagetui.core.blocks.profile import MainloopProfile, VariantDiff
from sagetui.core.compare.match import letter
from sagetui.core.profile.diff_view import bar_line, sections, text_lines
from sagetui.core.profile.rules import PHASES, UNATTRIBUTED
from sagetui.core.profile.shares import share_change, top_stall

# one colour per phase, used wherever a phase is drawn (Okabe-Ito: colour-blind safe)
PHASE_COLOURS = dict(zip((*PHASES, UNATTRIBUTED), (
    "#0072B2", "#56B4E9", "#009E73", "#E69F00", "#CC79A7", "#D55E00", "#F0E442", "#999999"),
    strict=True))
BAR_WIDTH = 48
HOT_LINES = 3


def bar(p: MainloopProfile, width: int = BAR_WIDTH) -> Text:
    """The phases' shares as one stacked bar of `width` cells (largest remainders rounding)."""
    raw = [(name, ph.share * width) for name, ph in p.phases.items()]
    cells = {n: int(x) for n, x in raw}
    for n, _ in sorted(raw, key=lambda r: r[1] - int(r[1]), reverse=True)[
            :width - sum(cells.values())]:
        cells[n] += 1
    t = Text()
    for n, k in cells.items():
        t.append("█" * k, style=PHASE_COLOURS.get(n, "white"))
    return t


def mainloop_text(profiles: list[MainloopProfile], baseline: str | None = None) -> Text:
    t = Text()
    if not profiles:
        return t
    base = next((p for p in profiles if p.variant == baseline), profiles[0])
    t.append("inside the main loop", style="bold")
    t.append(" (shares of sampled warp time, ncu)\n", style="dim")
    for p in profiles:
        t.append(f"{p.variant:<14}")
        t.append_text(bar(p))
        t.append(f" {p.total_samples} samples, {fmt.share(p.placed_share)} placed\n",
                 style="dim")
        for name, ph in p.phases.items():
            d = share_change(p, base, name) if p is not base else None
            t.append("  ■ ", style=PHASE_COLOURS.get(name, "white"))
            t.append(f"{name:<31}{fmt.fraction_pct(ph.share, 1):>5} ± "
                     f"{fmt.share(ph.share_error)}  "
                     f"{top_stall(ph):<24}")
            t.append("" if d is None else f"{fmt.pct(100 * d, 1)} pt vs {base.variant}",
                     style="dim")
            t.append("\n")
        for h in p.hot_lines[:HOT_LINES]:
            t.append(f"  {h.file}:{h.line}  {h.phase}  {fmt.share(h.share)}\n", style="dim")
    return t


def compare_text(sources: list[tuple[list[MainloopProfile], str | None]]) -> Text:
    """The main-loop profiles of several reports side by side (the Compare tab): each variant
    named by its report's letter, every share's change against report A's baseline profile."""
    profiles: list[MainloopProfile] = []
    base: str | None = None
    for i, (profs, baseline) in enumerate(sources):
        for p in profs:
            profiles.append(p.model_copy(update={"variant": f"{letter(i)}: {p.variant}"}))
            if base is None and (p.variant == baseline or baseline is None):
                base = profiles[-1].variant
    if profiles and base is None:
        base = profiles[0].variant
    return mainloop_text(profiles, base)


def diff_text(diffs: list[VariantDiff]) -> Text:
    """The profile diff (core/compare/profiles.profile_diffs): per pair, the phases' share
    changes, the stall reasons that changed and the hot lines that moved, with the cells
    `sagetui profile` prints; rows beyond the bar in bold."""
    t = Text()
    if not diffs:
        return t
    t.append("profile diff", style="bold")
    t.append(f" ({bar_line()})\n", style="dim")
    for d in diffs:
        for s in sections(d):
            lines = text_lines(s)
            t.append(lines[0] + "\n", style="" if s.rows else "dim")
            if s.rows:
                t.append(lines[1] + "\n", style="dim")
                for line, changed in zip(lines[2:], s.changed, strict=True):
                    t.append(line + "\n", style="bold" if changed else "")
    return t
