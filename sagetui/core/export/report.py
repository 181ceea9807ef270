"""Exports besides the JSON report: CSV of the raw samples, a Markdown summary."""

from __future__ import annotations

import csv
import io

from sagetui.core import format as fmt
from sagetui.core import variant_facts
from sagetui.core.blocks.base import Scheduler, Summary
from sagetui.core.export.kernel_facts_rows import DIFFERS, comparison_rows
from sagetui.core.kernel_facts import LIMITS
from sagetui.core.phases import PARENTS
from sagetui.core.report.csv_cell import inert_cell
from sagetui.core.report.model import Report, SpeedOfLight, Variant

# 9 significant digits: a nanosecond in 1 s, far finer than any timer here (CUDA events
# resolve 0.5 us), without repr's float noise (0.13042812347412109)
SECONDS = "{:.9g}"


def to_csv(report: Report) -> str:
    """One row per sample: variant, phase, round, iteration, seconds. Rounds and iterations
    count from 1, as the console shows them; the header says so. (A sweep: one row per point
    and variant, core/sweep/export.py; a workload: one per call and variant,
    core/workload/export.py.)"""
    if report.sweep is not None:
        import sagetui.core.sweep.export

        return sagetui.core.sweep.export.to_csv(report)
    if report.workload is not None:
        import sagetui.core.workload.export

        return sagetui.core.workload.export.to_csv(report)
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
                    w.writerow([inert_cell(variant), inert_cell(phase), label, i,
                                SECONDS.format(s)])
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
            spec += "[" + ",".join(f"{k}={fmt.option_value(val)}" for k, val in opts.items()) + "]"
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


def to_markdown(report: Report, title: str = "sagetui report") -> str:
    if report.sweep is not None:
        import sagetui.core.sweep.export

        return sagetui.core.sweep.export.to_markdown(report)
    if report.workload is not None:
        import sagetui.core.workload.export

        return sagetui.core.workload.export.to_markdown(report)
    if report.swap is not None:
        import sagetui.core.swap.view

        return sagetui.core.swap.view.to_markdown(report)
    lines = [f"## {title}", ""]
    if report.q_shape:
        lines.append(f"- q shape `{report.q_shape}`"
                     + (f", {dtype(report)}" if dtype(report) else "")
                     + (f", layout {report.layout}" if report.layout else ""))
    if report.baseline:
        lines.append(f"- baseline `{report.baseline}`; speedup % = baseline p50 / p50 - 1 "
                     "(+ = faster)")
    for name, spec in specs(report).items():
        lines.append(f"- `{name}` = `{spec}`" + _options_line(report.variant(name)))
    if report.inputs is not None and report.inputs.distribution is not None:
        i = report.inputs
        params = ", ".join(f"{k} {v}" for k, v in (i.parameters or {}).items())
        lines.append(f"- inputs: synthetic:{i.distribution}" + (f" ({params})" if params else "")
                     + (f", seed {i.seed}" if i.seed is not None else "")
                     + (f": {i.models}" if i.models else ""))
    env = report.environment or {}
    gpu = (env.get("gpu") or {}).get("name") if isinstance(env.get("gpu"), dict) else None
    if gpu or env.get("device"):
        lines.append(f"- device: {gpu or env.get('device')}, torch {env.get('torch', '?')}")
    if report.rounds is not None:
        lines.append(f"- {report.rounds} rounds x {report.iterations_per_round} iterations "
                     f"after {report.warmup} warm-up calls; status {report.status or 'n/a'}")
    lines.append("")
    if report.variants:
        # two speedups, labelled apart: the two-build report's from the p50s, and the verdict's
        # paired estimate, the centre of its interval (core.analysis); the columns are
        # core/variant_facts.py's MARKDOWN facts
        cols = variant_facts.columns(variant_facts.MARKDOWN, report.variants)
        at = variant_facts.At(report.baseline, report.created_utc)
        lines += ["| variant |" + "".join(f" {h} |" for h in variant_facts.headers(cols)),
                  "|---|" + "".join(f.align() for f in cols)]
        for v in report.variants:
            lines.append(f"| {v.name} |"
                         + "".join(f" {c} |" for c in variant_facts.cells(v, cols, at)))
        lines.append("")
        notes = variant_facts.clock_notes(report)
        if any(v.host_bound for v in report.variants):
            notes.insert(0, "bound HOST: the host's time to issue one call (host ms) exceeds "
                         "its GPU time (p50 ms); b2b ms: wall time per call back to back")
        if notes:
            lines += [f"- {n}" for n in notes] + [""]
    lines += kernel_lines(report)
    lines += kernel_facts_lines(report)
    # a report made elsewhere, without variants (the phase-breakdown report)
    if report.phase_timings:
        lines += _phase_lines(None, report.phase_timings)
    if report.scheduler:
        lines += [_grid_line(report.scheduler), ""]
    for v in report.variants or []:  # each variant's own phases and grid (schema 3)
        if v.phase_timings:
            lines += _phase_lines(v.name, v.phase_timings, v.sol)
        if v.sol is not None and v.sol.tops is not None:
            lines += [f"`{v.name}`: " + "; ".join(f"{k} {t}" for k, t in sol_cells(v.sol))
                      + ".", ""]
        if v.scheduler:
            lines += [f"`{v.name}`: {_grid_line(v.scheduler)}", ""]
    lines += _mainloop_lines(report)
    for f in report.faults or []:
        lines.append(f"- fault: {f.kind}: {f.message}"
                     + (f" (variant {f.variant}, phase {f.phase})" if f.variant else ""))
    return "\n".join(lines).rstrip() + "\n"


def mainloop_markdown(report: Report) -> str:
    """The main-loop block alone (`sagetui profile` prints it)."""
    return "\n".join(_mainloop_lines(report)) + "\n"


def kernel_rows(report: Report) -> list[Variant]:
    """The variants with a throughput or accuracy figure (the kernel table's rows: the Markdown
    export and `sagetui run`'s summary, its columns core/variant_facts.py's KERNEL facts)."""
    return [v for v in report.variants or [] if v.accuracy or v.achieved or v.sdpa_backend]


def kernel_lines(report: Report) -> list[str]:
    rows = kernel_rows(report)
    if not rows:
        return []
    cols = variant_facts.columns(variant_facts.KERNEL, rows)
    lines = ["| variant |" + "".join(f" {h} |" for h in variant_facts.headers(cols)),
             "|---|" + "".join(f.align() for f in cols)]
    for v in rows:
        lines.append(f"| {v.name} |" + "".join(f" {c} |" for c in variant_facts.cells(v, cols)))
    acc = next((v.accuracy for v in report.variants or [] if v.accuracy), None)
    if acc is not None:
        heads = "all heads" if acc.heads in (None, "all") else f"heads {acc.heads}"
        lines.append(f"\nAccuracy against {acc.reference or 'fp32 attention'}, "
                     f"{acc.rows or 'all'} rows, {heads}.")
    worst = [(v.name, fmt.worst_heads(v.accuracy.model_dump())) for v in report.variants or []
             if v.accuracy and v.accuracy.worst_heads]
    if worst:
        lines.append("")
    for name, text in worst:
        lines.append(f"- `{name}` worst heads by rel. L1: {text}")
    return [*lines, ""]


def kernel_facts_lines(report: Report) -> list[str]:
    """The variants' main-loop kernel facts side by side; a row where they differ is marked
    (core/kernel_facts.comparison_rows)."""
    variants = report.variants or []
    rows = comparison_rows([v.kernel_facts for v in variants])
    if not rows:
        return []
    lines = ["Main-loop kernel facts (`cuobjdump --dump-resource-usage` and the launch; "
             f"{DIFFERS}: the variants differ):", "",
             "| kernel fact | " + " | ".join(v.name for v in variants) + " |",
             "|---|" + "---:|" * len(variants)]
    for r in rows:
        label = f"{r.label} {DIFFERS}" if r.differs else r.label
        cells = [f"**{c}**" if r.differs else c for c in r.cells]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return [*lines, ""]


KERNEL_FACTS_CSV = ("variant", "unavailable", "module", "module_sha256", "cuobjdump", "arch",
                    "function", "kernel", "kernel_name", "registers", "local_bytes",
                    "stack_bytes", "static_shared_bytes", "dynamic_shared_bytes",
                    "threads_per_cta", "ctas_per_sm", "theoretical_occupancy", "limited_by",
                    "limit_registers", "limit_shared_memory", "limit_warps", "limit_ctas")


def kernel_facts_csv(report: Report) -> str:
    """One row per variant with kernel facts: the raw figures as cuobjdump printed them, the
    launch and the occupancy (`sagetui run --kernel-facts-csv`)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(KERNEL_FACTS_CSV)
    for v in report.variants or []:
        kf = v.kernel_facts
        if kf is None:
            continue
        k, o = kf.kernel, kf.occupancy
        limits = o.limits if o else {}
        row: list[object] = [
            v.name, kf.unavailable, kf.module, kf.module_sha256, kf.cuobjdump, kf.arch,
            kf.function, k.function if k else None, kf.kernel_name,
            *((k.registers, k.local_bytes, k.stack_bytes, k.static_shared_bytes) if k
              else (None,) * 4),
            kf.dynamic_shared_bytes, kf.threads_per_cta, o.ctas_per_sm if o else None,
            o.theoretical_occupancy if o else None, ";".join(o.limited_by) if o else None,
            *(limits.get(x) for x in LIMITS)]
        w.writerow(["" if c is None else inert_cell(c) if isinstance(c, str) else c
                    for c in row])
    return buf.getvalue()


def _options_line(v: Variant | None) -> str:
    """`; options as they ran: ...` with the note on those that are not the public
    function's default, or '' for a variant without options."""
    if v is None or not v.options:
        return ""
    text, note = fmt.options_text(v.backend or "", v.options,
                                  v.dispatch.function if v.dispatch else None)
    dispatched = f"; dispatched to {v.dispatch.function}" if v.dispatch else ""
    return f"{dispatched}; options as they ran: {text}" + (f" ({note})" if note else "")


def sol_cells(sol: SpeedOfLight) -> list[tuple[str, str]]:
    """The compute phase's speed of light as (label, text): its TOPS, its share of the
    tensor-core ceiling at the clock its rounds ran at and of the datasheet peak, and the
    measured copy bandwidth (the Markdown export and the console's scheduler panel)."""
    out = [(f"{sol.compute_phase or 'call'} TOPS", fmt.tops(sol.tops))]
    if sol.clock_ceiling_tops is not None:
        out.append(("of clock ceiling", f"{fmt.share_of_peak(sol.share_of_clock_ceiling)} "
                    f"of {sol.clock_ceiling_tops:,.0f} TOPS at {sol.mean_sm_clock_mhz:,.0f} of "
                    f"{sol.max_sm_clock_mhz:,.0f} MHz"))
    if sol.share_of_peak is not None:
        out.append(("of datasheet", fmt.share_of_peak(sol.share_of_peak, sol.peak_tops)))
    out.append(("copy GB/s", fmt.gbps(sol.copy_gbps) if sol.copy_gbps is not None
                else "not measured"))
    return out


def _phase_lines(variant: str | None, phases: dict[str, Summary],
                 sol: SpeedOfLight | None = None) -> list[str]:
    """A phase table: p50, p90 and each leaf's share of the leaves' p50; with a speed of
    light, each phase's bytes, GB/s and share of the copy bandwidth."""
    parents = {PARENTS[n] for n in phases if n in PARENTS}
    total = sum(s.p50_s for k, s in phases.items() if k not in parents)
    head = [f"Phases of `{variant}`:", ""] if variant else []
    bw = (sol.phases or {}) if sol is not None else {}
    extra = (" bytes | GB/s | % copy |", "---:|---:|---:|") if bw else ("", "")
    lines = [*head, "| phase | p50 ms | p90 ms | share |" + extra[0],
             "|---|---:|---:|---:|" + extra[1]]
    for name, s in phases.items():
        share = fmt.percent(100 * s.p50_s / total, 1) if total and name not in parents else ""
        row = f"| {name} | {fmt.ms(s.p50_s)} | {fmt.ms(s.p90_s)} | {share} |"
        if bw:
            p = bw.get(name)
            row += (f" {fmt.size(p.bytes_read + p.bytes_written)} | {fmt.gbps(p.gbps)} | "
                    f"{fmt.fraction_pct(p.share_of_copy, 1)} |") if p else " - | - | - |"
        lines.append(row)
    return [*lines, ""]


def _grid_line(g: Scheduler) -> str:
    kernel = f"{g.kernel} " if g.kernel else ""
    return (f"{kernel}grid {g.grid_ctas} CTAs ({g.q_ctas_per_head} per head), "
            f"{g.k_iterations_per_cta} K iterations per CTA, q tail {g.q_tail_rows}, "
            f"k tail {g.k_tail_rows}, {g.dynamic_shared_memory_bytes} B shared memory, "
            f"{g.warps_per_cta} warps.")


def _mainloop_lines(report: Report) -> list[str]:
    """The profiles, then the profile diff (a report of two or more profiled variants)."""
    if not report.mainloop_profiles:
        return []
    from sagetui.core.profile.diff_view import diff_markdown  # only a report with profiles
    from sagetui.core.profile.markdown import mainloop_lines  # needs them

    return mainloop_lines(report.mainloop_profiles, report.baseline) \
        + (diff_markdown(report.mainloop_diff) if report.mainloop_diff else [])
