"""Exports besides the JSON report: CSV of the raw samples, a Markdown summary."""

from __future__ import annotations

import csv
import io

from .phases import PARENTS
from .report import Report

# 9 significant digits: a nanosecond in 1 s, far finer than any timer here (CUDA events
# resolve 0.5 us), without repr's float noise (0.13042812347412109)
SECONDS = "{:.9g}"


def to_csv(report: Report) -> str:
    """One row per sample: variant, phase, round, iteration, seconds. Rounds and iterations
    count from 1, as the console shows them; the header says so."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["variant", "phase", "round (from 1)", "iteration (from 1)", "seconds"])
    rounds_of = report.round_numbers()
    for variant, phases in (report.samples or {}).items():
        numbers = rounds_of.get(variant)
        for phase, per_round in phases.items():
            for r, values in enumerate(per_round):
                label = (numbers[r] if numbers and r < len(numbers) else r) + 1
                for i, s in enumerate(values.tolist(), start=1):
                    w.writerow([_cell(variant), _cell(phase), label, i, SECONDS.format(s)])
    return buf.getvalue()


def _config(report: Report) -> dict:
    cfg = report.config
    return cfg if isinstance(cfg, dict) else {}  # free-form JSON: anything, or nothing


def dtype(report: Report) -> str | None:
    shape = _config(report).get("shape")
    value = shape.get("dtype") if isinstance(shape, dict) else None
    return value if isinstance(value, str) else None


def specs(report: Report) -> dict[str, str]:
    """Each variant's spec as the CLI takes it: backend[opts]@path."""
    out = {}
    for v in report.variants or []:
        spec = v.backend or "?"
        opts = next((c.get("options") for c in _config(report).get("variants") or []
                     if isinstance(c, dict) and c.get("name") == v.name), None)
        if isinstance(opts, dict) and opts:
            spec += "[" + ",".join(f"{k}={val}" for k, val in opts.items()) + "]"
        if v.path:
            spec += f"@{v.path}"
        out[v.name] = spec
    return out


def export_stem(report: Report, stamp: str) -> str:
    """An export's file name without suffix: backends, shape, dtype and when, e.g.
    sage2-sm89_1x37810x56x128_bf16_20250101-120000 (a bare timestamp says nothing)."""
    backends = list(dict.fromkeys(v.backend for v in report.variants or [] if v.backend))
    parts = ["+".join(backends) or "report"]
    if report.q_shape:
        parts.append("x".join(str(n) for n in report.q_shape))
    parts += [x for x in (dtype(report), stamp) if x]
    return "".join(c if c.isalnum() or c in "+-_.x" else "-" for c in "_".join(parts))


def _cell(text: str) -> str:
    """A name from a report, made inert for spreadsheets: a leading =, +, - or @ would be read
    as a formula (CSV injection), so it gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f}"


def to_markdown(report: Report, title: str = "sagetui report") -> str:
    lines = [f"## {title}", ""]
    if report.q_shape:
        lines.append(f"- q shape `{report.q_shape}`"
                     + (f", {dtype(report)}" if dtype(report) else "")
                     + (f", layout {report.layout}" if report.layout else ""))
    if report.baseline:
        lines.append(f"- baseline `{report.baseline}`; speedup % = baseline p50 / p50 - 1 "
                     "(+ = faster)")
    for name, spec in specs(report).items():
        lines.append(f"- `{name}` = `{spec}`")
    env = report.environment or {}
    gpu = (env.get("gpu") or {}).get("name") if isinstance(env.get("gpu"), dict) else None
    if gpu or env.get("device"):
        lines.append(f"- device: {gpu or env.get('device')}, torch {env.get('torch', '?')}")
    if report.rounds is not None:
        lines.append(f"- {report.rounds} rounds x {report.iterations_per_round} iterations "
                     f"after {report.warmup} warm-up calls; status {report.status or 'n/a'}")
    lines.append("")
    if report.variants:
        lines += ["| variant | p50 ms | p90 ms | speedup % | verdict (95% CI) | drift %/round "
                  "| byte-exact |", "|---|---:|---:|---:|---|---:|---|"]
        for v in report.variants:
            t = v.timing
            verdict = "-"
            if v.verdict:
                vv = v.verdict
                ci = ("" if vv.ci_low_percent is None or vv.ci_high_percent is None else
                      f" [{vv.ci_low_percent:+.2f}, {vv.ci_high_percent:+.2f}]")
                verdict = f"{vv.state}{ci}"
            drift = "-"
            if v.drift and v.drift.slope_percent_per_round is not None:
                drift = f"{v.drift.slope_percent_per_round:+.2f}" + (" (!)" if v.drift.flagged
                                                                      else "")
            sp = ("-" if v.speedup_vs_baseline_percent is None
                  else f"{v.speedup_vs_baseline_percent:+.3f}")
            lines.append(f"| {v.name} | {ms(t.p50_s if t else None)} | "
                         f"{ms(t.p90_s if t else None)} | {sp} | {verdict} | {drift} | "
                         f"{'-' if v.byte_exact is None else v.byte_exact} |")
        lines.append("")
    if report.phase_timings:
        total = sum(s.p50_s for k, s in report.phase_timings.items() if k in _leaves(report))
        lines += ["| phase | p50 ms | p90 ms | share |", "|---|---:|---:|---:|"]
        for name, s in report.phase_timings.items():
            share = f"{100 * s.p50_s / total:.1f} %" if total and name in _leaves(report) else ""
            lines.append(f"| {name} | {ms(s.p50_s)} | {ms(s.p90_s)} | {share} |")
        lines.append("")
    if report.scheduler:
        s = report.scheduler
        lines.append(f"Scheduler: grid {s.grid_ctas} CTAs ({s.q_ctas_per_head} per head), "
                     f"{s.k_iterations_per_cta} K iterations per CTA, q tail {s.q_tail_rows}, "
                     f"k tail {s.k_tail_rows}, {s.dynamic_shared_memory_bytes} B shared memory, "
                     f"{s.warps_per_cta} warps.")
        lines.append("")
    for f in report.faults or []:
        lines.append(f"- fault: {f.kind}: {f.message}"
                     + (f" (variant {f.variant}, phase {f.phase})" if f.variant else ""))
    return "\n".join(lines).rstrip() + "\n"


def _leaves(report: Report) -> set[str]:
    names = set(report.phase_timings or {})
    parents = {PARENTS[n] for n in names if n in PARENTS}
    return names - parents
