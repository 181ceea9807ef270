"""A sweep report's exports: CSV (a row per point and variant), Markdown, and an SVG line chart
of kernel TOPS against the swept length (log2 x axis), drawn from the points, not a screenshot.
A noisy point (plan.noisy: its p50's interval wider than ±10 %) is flagged in each.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any
from xml.sax.saxutils import escape

from sagetui.core import format as fmt
from sagetui.core import variant_facts
from sagetui.core.blocks.sweep import Sweep
from sagetui.core.palette import OKABE_ITO
from sagetui.core.report.csv_cell import (
    inert_cell,  # names from a report, made inert for spreadsheets
    markdown_row,
)
from sagetui.core.report.model import Report
from sagetui.core.sweep.plan import NOISY_CI_PERCENT, NOISY_MARK, NOISY_RULE, noisy, series_of
from sagetui.core.variant_facts import (  # the sweep's cells, read from here too
    accuracy_text as accuracy_text,
)
from sagetui.core.variant_facts import (
    p50_cell as p50_cell,
)
from sagetui.core.variant_facts import p50_text

POINT_FIELDS = ("point", "group", "x", "batch", "heads", "q_len", "kv_len", "head_dim", "causal",
                "dtype", "variant", "status")
# the point's own columns, then each variant's facts (core/variant_facts.py's SWEEP_CSV: its
# host-time facts only where a point has a host time)
CSV_FIELDS = POINT_FIELDS + tuple(f.key for f in variant_facts.shown_in(variant_facts.SWEEP_CSV)
                                  if f.group != variant_facts.HOST)


def _sweep(report: Report) -> Sweep:
    if report.sweep is None:
        raise ValueError("not a sweep report")
    return report.sweep


def to_csv(report: Report) -> str:
    points = _sweep(report).points
    cols = variant_facts.columns(variant_facts.SWEEP_CSV, [v for p in points for v in p.variants])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*POINT_FIELDS, *(f.key for f in cols)])
    for p in points:
        s = p.shape
        fixed = [p.index, p.group, p.x, s.batch, s.heads, s.q_len, s.n_kv_len, s.head_dim,
                 s.causal, s.dtype]
        if not p.variants:
            w.writerow([*fixed, "", p.status,
                        *variant_facts.blank_row(cols, error=inert_cell(p.error or ""))])
        for v in p.variants:
            w.writerow([*fixed, inert_cell(v.name), v.status, *variant_facts.raw_cells(v, cols)])
    return buf.getvalue()


def noisy_note(points: list[Any]) -> str | None:
    """What "noisy" beside a p50 means, and how many are, where any is."""
    flagged = sum(noisy(v) for p in points for v in p.variants)
    return f"{NOISY_MARK} noisy: {NOISY_RULE} ({flagged} marked): their figures may be off " \
        "by as much; more rounds or iterations narrow it" if flagged else None


def device_name(report: Report) -> str:
    """The GPU's name, else the device the sweep ran on ("cpu")."""
    env = report.environment or {}
    return str((env.get("gpu") or {}).get("name") or env.get("device") or "?")


def shape_text(report: Report) -> str:
    """What a sweep holds fixed: "batch 4, 32 heads, bf16, NHD" (the series name the rest)."""
    shape = (report.config or {}).get("shape") or {}
    tokens = (report.sweep.axes if report.sweep else {}).get("tokens")
    parts = [f"batch {tokens} tokens / q_len" if tokens else f"batch {shape.get('batch', '?')}",
             f"{shape.get('heads', '?')} heads"]
    if shape.get("kv_heads"):
        parts[-1] += f" ({shape['kv_heads']} kv)"
    parts += [str(shape[k]) for k in ("dtype", "layout") if shape.get(k)]
    return ", ".join(parts)


def to_markdown(report: Report, title: str = "sagetui sweep") -> str:
    sw = _sweep(report)
    cols = variant_facts.columns(variant_facts.SWEEP_MD, [v for p in sw.points
                                                          for v in p.variants])
    blank = [""] * (len(cols) - 1)
    gpu = device_name(report)
    lines = [f"## {title}", "",
             f"- {len(sw.points)} points on {gpu}: {sw.rounds} rounds x {sw.iterations} "
             f"iterations after {sw.warmup} warm-up calls per point; status {report.status}",
             f"- TOPS = {sw.ops_formula}; kernel: the main loop where a backend has one "
             "(quantization excluded), else the whole call", "",
             "| point | variant |" + "".join(f" {h} |" for h in variant_facts.headers(cols)),
             "|---|---|" + "".join(f.align() for f in cols)]
    for p in sw.points:
        label = f"{sw.x_axis} {p.x}, {p.group}"
        if not p.variants:
            lines.append(markdown_row((label, "-", f"failed: {p.error}", *blank)))
        for v in p.variants:
            lines.append(markdown_row((label, v.name, *(
                variant_facts.cells(v, cols) if v.status == "ok"
                else (f"failed: {v.error}", *blank)))))
    lines.append("")
    if note := noisy_note(sw.points):
        lines.append(f"- {note}")
    for x in sw.crossovers:
        what = "kernel" if x.metric == "kernel_tops" else "end-to-end"
        lines.append(f"- {what} crossover ({x.group}): {x.after} overtakes {x.before} at "
                     f"{sw.x_axis} ≈ {x.x:.0f} (between {x.x_low} and {x.x_high})")
    if sw.largest_fit:
        lines.append(f"- {sw.largest_fit.note}")
    for f in report.faults or []:
        lines.append(f"- fault: {f.kind}: {f.message}")
    return "\n".join(lines).rstrip() + "\n"


def length_label(n: float) -> str:
    """1024 -> 1k, 32768 -> 32k, 1000 -> 1000."""
    n = int(round(n))
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """0 and round steps (1, 2, 5 x 10^k) up to at least `top`."""
    if top <= 0:
        return [0.0, 1.0]
    step = fmt.nice_step(top, count, steps=(1, 2, 5))
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


DASHES = ("", "6 3", "2 3", "8 3 2 3")


def to_svg(report: Report, metric: str = "kernel_tops", width: int = 760,
           height: int = 440) -> str:
    """Kernel TOPS (or `metric`) against the swept length: one line per variant and series
    (colour: variant; dash: series), log2 x axis, crossovers marked, noisy points hollow; the
    title says what, at which shape and on which device, the axes their units."""
    sw = _sweep(report)
    series = series_of(sw.points, metric)
    shaky = {(p.group, v.name, p.x): v for p in sw.points for v in p.variants if noisy(v)}
    # the legend's column as wide as its longest label (~7 px a character at 12 px): the
    # plot keeps its width and the picture grows
    longest = max((len(f"{n} · {g}") for g, lines in series.items() for n in lines), default=0)
    left, right, top, bottom = 64, max(190, 48 + 7 * longest), 52, 48
    width += right - 190
    pw, ph = width - left - right, height - top - bottom
    xs = sorted({p.x for p in sw.points})
    ys = [t for lines in series.values() for line in lines.values() for _, t in line]
    yticks = nice_ticks(max(ys) if ys else 1.0)
    lx0, lx1 = math.log2(xs[0]) if xs else 0.0, math.log2(xs[-1]) if xs else 1.0
    span = (lx1 - lx0) or 1.0

    def px(x: float) -> float:
        return left + (math.log2(x) - lx0) / span * pw if len(xs) > 1 else left + pw / 2

    def py(y: float) -> float:
        return top + ph - y / yticks[-1] * ph

    title = f"{'kernel' if metric == 'kernel_tops' else 'end-to-end'} TOPS vs {sw.x_axis} " \
        f"on {device_name(report)}"
    subtitle = f"{shape_text(report)}; p50 of {sw.rounds} rounds x {sw.iterations} " \
        f"iterations; TOPS = {sw.ops_formula}"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
           f'<text x="{left}" y="38" font-size="11" fill="#444">{escape(subtitle)}</text>']
    for t in yticks:
        y = py(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                   f'stroke="#e0e0e0"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    for x in xs:
        out.append(f'<line x1="{px(x):.1f}" y1="{top + ph}" x2="{px(x):.1f}" '
                   f'y2="{top + ph + 4}" stroke="#333"/>')
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 18}" text-anchor="middle">'
                   f'{length_label(x)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               f'stroke="#333"/>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle">'
               f'{sw.x_axis} (tokens, log2 scale)</text>')
    out.append(f'<text x="16" y="{top + ph / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + ph / 2})">TOPS (10¹² operations/s)</text>')
    names = list(sw.variants) or sorted({n for lines in series.values() for n in lines})
    colour = {n: OKABE_ITO[i % len(OKABE_ITO)] for i, n in enumerate(names)}
    legend_y = top
    for g, (group, lines) in enumerate(series.items()):
        dash = DASHES[g % len(DASHES)]
        for name, line in lines.items():
            c = colour.get(name, "#333")
            pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"'
                       + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
            for x, y in line:
                v = shaky.get((group, name, x))
                if v is None:
                    out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}"/>')
                else:  # hollow: not to be trusted
                    out.append(f'<circle class="noisy" cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" '
                               f'fill="white" stroke="{c}" stroke-width="2"><title>'
                               f'{escape(name)} at {sw.x_axis} {x}: p50 {escape(p50_text(v))}'
                               '</title></circle>')
            out.append(f'<line x1="{left + pw + 12}" y1="{legend_y + 8}" x2="{left + pw + 36}" '
                       f'y2="{legend_y + 8}" stroke="{c}" stroke-width="2"'
                       + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
            out.append(f'<text x="{left + pw + 42}" y="{legend_y + 12}">'
                       f'{escape(name)} · {escape(group)}</text>')
            legend_y += 18
    by = {(grp, n): dict(line) for grp, lines in series.items() for n, line in lines.items()}
    crossed = False
    for cx in sw.crossovers:
        if cx.metric != metric:
            continue
        a = by.get((cx.group, cx.before), {})
        if cx.x_low in a and cx.x_high in a:  # the crossing lies on both lines: take `before`'s
            lo, hi = math.log2(cx.x_low), math.log2(cx.x_high)
            w = (math.log2(cx.x) - lo) / (hi - lo)
            y = a[cx.x_low] + w * (a[cx.x_high] - a[cx.x_low])
            out.append(f'<circle cx="{px(cx.x):.1f}" cy="{py(y):.1f}" r="6" fill="none" '
                       f'stroke="black" stroke-width="1.5"/>')
            out.append(f'<text x="{px(cx.x):.1f}" y="{py(y) - 10:.1f}" text-anchor="middle" '
                       f'font-size="11">{escape(cx.after)} &gt; {escape(cx.before)}</text>')
            crossed = True
    # the legend's last entries: what a ring and a hollow point mean
    lx, notes = left + pw + 24, []
    if crossed:
        notes.append(('r="6" fill="none" stroke="black" stroke-width="1.5"',
                      ("crossover: A > B where", "A overtakes B")))
    if shaky:
        notes.append(('r="4" fill="white" stroke="#888" stroke-width="2"',
                      ("noisy: p50 95 % interval", f"wider than ±{NOISY_CI_PERCENT:g} %")))
    for style, words in notes:
        legend_y += 6
        out.append(f'<circle cx="{lx}" cy="{legend_y + 8}" {style}/>')
        out += [f'<text x="{lx + 18}" y="{legend_y + 12 + 14 * i}">{escape(t)}</text>'
                for i, t in enumerate(words)]
        legend_y += 14 * len(words)
    out.append("</svg>")
    return "\n".join(out) + "\n"
