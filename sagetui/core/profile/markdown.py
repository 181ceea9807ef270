"""The "inside the main loop" block of the Markdown export (core/export.py calls it)."""

from __future__ import annotations

from sagetui.core.blocks.profile import MainloopProfile
from sagetui.core.profile.summary import share_change, top_stall

HOT_LINES = 5


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def mainloop_lines(profiles: list[MainloopProfile], baseline: str | None = None) -> list[str]:
    if not profiles:
        return []
    base = next((p for p in profiles if p.variant == baseline), profiles[0])
    out = ["### Inside the main loop (shares of sampled warp time, from ncu)", ""]
    for p in profiles:
        out.append(f"**{p.variant}**: `{p.kernel_family}` kernel, {p.total_samples} samples, "
                   f"{pct(p.placed_share)} % placed in named phases"
                   + (f", ncu {p.ncu_version}" if p.ncu_version else "")
                   + ("" if p.line_info else ", no line information"))
        out += ["", f"| phase | share % | ± | instructions | top stall | vs {base.variant} |",
                "|---|---:|---:|---:|---|---:|"]
        for name, ph in p.phases.items():
            d = share_change(p, base, name) if p is not base else None
            stall = top_stall(ph)
            out.append(f"| {name} | {pct(ph.share)} | {pct(ph.share_error)} | "
                       f"{ph.instructions_executed} | {stall} | "
                       f"{'-' if d is None else f'{100 * d:+.1f} pt'} |")
        if p.hot_lines:
            out += ["", "| hot line | phase | share % |", "|---|---|---:|"]
            out += [f"| `{h.file}:{h.line}` | {h.phase} | {pct(h.share)} |"
                    for h in p.hot_lines[:HOT_LINES]]
        out.append("")
    return out
