"""A profile diff (profile/diff.py) as tables of cells, written once: `sagetui profile` prints
them as text, the Markdown export as pipe tables, the console's Compare tab as styled text."""

from __future__ import annotations

from dataclasses import dataclass, field

from sagetui.core import format as fmt
from sagetui.core.blocks.profile import HotLine, ProfileDiff, ShareDelta, VariantDiff
from sagetui.core.profile.diff import MIN_CHANGE, Z

CHANGED = "*"


@dataclass
class Section:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    changed: list[bool] = field(default_factory=list)  # per row: beyond the bar
    empty: str = ""  # said instead of a table without rows


def _share(x: float, err: float) -> str:
    return f"{fmt.fraction_pct(x)} ± {fmt.fraction_pct(err)}"


def _change(d: ShareDelta) -> str:
    return f"{fmt.pct(100 * d.change)} ± {fmt.fraction_pct(d.error)}" \
        + (f" {CHANGED}" if d.beyond else "")


def _where(h: HotLine | None) -> str:
    return "-" if h is None else f"{h.file}:{h.line}"


def bar_line(z: float = Z, min_change: float = MIN_CHANGE) -> str:
    return (f"{CHANGED}: beyond {z:g} combined standard errors and at least "
            f"{100 * min_change:g} points (shares of sampled warp time, binomial errors)")


def sections(d: VariantDiff) -> list[Section]:
    """The phases (every one), the stall reasons that changed, and the hot lines that moved,
    changed or are among one side's hot lines only."""
    ph = Section(f"{d.b} vs {d.a}: phases", ["phase", f"{d.a} %", f"{d.b} %", "Δ pt"])
    for p in d.phases:
        ph.rows.append([p.phase, _share(p.a, p.a_error), _share(p.b, p.b_error), _change(p)])
        ph.changed.append(p.beyond)
    st = Section(f"{d.b} vs {d.a}: stall reasons that changed (of the kernel's samples)",
                 ["stall", f"{d.a} %", f"{d.b} %", "Δ pt"])
    if d.stalls is None:
        st.empty = "not compared: a profile recorded before stall reasons were kept"
    else:
        for s in d.stalls:
            if s.beyond:
                st.rows.append([s.reason, _share(s.a, s.a_error), _share(s.b, s.b_error),
                                _change(s)])
                st.changed.append(True)
        st.empty = f"none of {len(d.stalls)} changed"
    hl = Section(f"{d.b} vs {d.a}: hot lines that moved or changed",
                 ["call", "phase", f"{d.a} line", f"{d.b} line", "matched", f"{d.a} %",
                  f"{d.b} %", "Δ pt"])
    for h in d.hot_lines:
        if h.matched_by is not None and not h.moved and not (h.shares and h.shares.beyond):
            continue
        one = h.a or h.b
        assert one is not None
        sh = h.shares
        hl.rows.append([one.call or "-", one.phase, _where(h.a), _where(h.b),
                        h.matched_by or f"{d.a if h.b is None else d.b} only",
                        fmt.fraction_pct(h.a.share) if h.a else "-",
                        fmt.fraction_pct(h.b.share) if h.b else "-",
                        _change(sh) if sh else "-"])
        hl.changed.append(bool(sh and sh.beyond))
    hl.empty = f"none: {len(d.hot_lines)} hot lines in place, within the bar"
    return [ph, st, hl]


def text_lines(s: Section) -> list[str]:
    """Aligned columns (the first left-aligned, the rest right), or the empty line."""
    if not s.rows:
        return [f"{s.title}: {s.empty}"]
    widths = [max(len(c), *(len(r[i]) for r in s.rows)) for i, c in enumerate(s.columns)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()
    return [s.title, line(s.columns), *(line(r) for r in s.rows)]


def markdown_lines(s: Section) -> list[str]:
    if not s.rows:
        return [f"{s.title}: {s.empty}", ""]
    return [f"**{s.title}**", "", "| " + " | ".join(s.columns) + " |",
            "|---|" + "---:|" * (len(s.columns) - 1),
            *("| " + " | ".join(r) + " |" for r in s.rows), ""]


def diff_text(diff: ProfileDiff) -> str:
    """The CLI's table: every variant against the baseline."""
    out = [f"profile diff against {diff.baseline} ({bar_line(diff.z, diff.min_change)})", ""]
    for d in diff.variants:
        for s in sections(d):
            out += [*text_lines(s), ""]
    return "\n".join(out)


def diff_markdown(diff: ProfileDiff) -> list[str]:
    out = [f"### Profile diff against {diff.baseline}", "", bar_line(diff.z, diff.min_change), ""]
    for d in diff.variants:
        for s in sections(d):
            out += markdown_lines(s)
    return out
