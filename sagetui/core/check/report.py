"""`sagetui check`: recompute every derived number of a report from the other numbers in it.

Derived here: the scheduler's grid facts from the shapes and tiles; the tail-study rows'
geometry and their sweep points; overall summaries from per-round summaries (count, mean,
min, max) and, where raw samples are kept, every summary from the samples; the speedup percent
from the p50s; the byte-exact flags from the hashes; a variant's kernel facts' occupancy from its
registers, shared memory and launch; the decomposition check's consistency; and,
for summaries of at most 10 samples, the linear-interpolation link between p90, p95, p99 and max
(they all fall between the two largest samples); accuracy ranges, accuracy per head (from each
head's sums), the inputs block and the share of peak (run/check_accuracy_peak.py); the copy
bandwidth and each variant's speed of light (run/check_sol.py); host time, back-to-back time,
host-bound and the clocks a verdict names (run/check_host.py). A sweep block is
checked in core/sweep/check.py, a workload block in core/workload/check.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from sagetui.core import scheduler
from sagetui.core.check.owed import check_owed, check_version_members
from sagetui.core.check.recorded import Recorded, inventory, leaves, members, recorded_why
from sagetui.core.config import MAX_HEAD_DIM, Shape, shape_of
from sagetui.core.derived import speedup_percent
from sagetui.core.kernel_facts import derive
from sagetui.core.profile.check import check_diff, check_profiles
from sagetui.core.report.envelope import ONE_ENVELOPE_FROM, created_format_ok, created_now
from sagetui.core.report.io import one_line
from sagetui.core.report.mismatch import MISSING, Mismatch, MismatchCollector
from sagetui.core.report.model import Report, TailRow, Variant
from sagetui.core.run.assemble import build_report
from sagetui.core.run.check import check_run, is_left_out, run_config
from sagetui.core.run.check_accuracy_peak import check_kernel_fields
from sagetui.core.run.check_host import check_host
from sagetui.core.run.check_sol import check_sol
from sagetui.core.run.load import from_report
from sagetui.core.run.status import COMPLETE
from sagetui.core.samples import Samples
from sagetui.core.statistics.summary import merge_round_summaries
from sagetui.core.swap.check import check_swap
from sagetui.core.sweep.check import check_sweep
from sagetui.core.workload.check import check_workload

# the first schema whose reports record every figure `check` derives: one of them without a
# figure that follows from the rest is a finding (every sample report of schema 5 passes so)
EVERY_FIGURE_FROM = 5
# the grid facts both reports made elsewhere hold (the phase-breakdown report holds more)
GRID_MADE_ELSEWHERE = ("threads_per_cta", "dynamic_shared_memory_bytes", "grid_ctas")
MAX_CAUSAL_CTAS = 10**6  # q CTAs per head beyond which the causal K-iteration sums are skipped


def _dims(report: Report) -> dict[str, int] | None:
    if not report.q_shape:
        return None
    shape = shape_of((report.config or {}).get("shape"))
    # a report made elsewhere keeps no shape: its tensors are in the Shape's default layout
    layout = report.layout or (shape.layout if shape else Shape.model_fields["layout"].default)
    b, a, c, d = report.q_shape
    q_len, heads = (a, c) if layout == "NHD" else (c, a)
    dims = {"batch": b, "q_len": q_len, "heads": heads, "head_dim": d}
    if report.k_shape:
        kb, ka, kc, _ = report.k_shape
        dims["kv_len"] = ka if layout == "NHD" else kc
    return dims


def _kernel_for(report: Report) -> str:
    sch = report.scheduler
    if sch and sch.kernel in scheduler.TILES:
        return sch.kernel
    if sch:
        for name, t in scheduler.TILES.items():
            if (t.cta_q, t.cta_k) == (sch.cta_q, sch.cta_k):
                return name
    return scheduler.FALLBACK_KERNEL


@dataclass(frozen=True)
class Audit:
    """What `sagetui check` says of a report: the figures that disagree with their
    recomputation, how many it recomputed, the raw samples they came from, and what it took as
    recorded (recorded.py: the one definition)."""

    mismatches: list[Mismatch]
    recomputed: int
    raw_samples: int
    recorded: list[Recorded]
    derived: list[str]  # every other leaf (recorded.inventory)
    recomputed_paths: set[str]

    def unaccounted(self) -> list[str]:
        """Derived leaves that no figure of check's recomputes (none, in a report it covers)."""
        return [p for p in self.derived if p not in self.recomputed_paths]


def audit(report: Report) -> Audit:
    c = MismatchCollector(complete=(report.schema_version or 0) >= EVERY_FIGURE_FROM)
    _check(c, report)
    inv = inventory(report.to_json_dict(), c.recomputed)
    return Audit(c.out, len(c.recomputed), inv.raw_samples, inv.recorded, inv.derived,
                 c.recomputed)


def check_report(report: Report) -> list[Mismatch]:
    """The figures of a report that disagree with their recomputation."""
    c = MismatchCollector(complete=(report.schema_version or 0) >= EVERY_FIGURE_FROM)
    _check(c, report)
    return c.out


def _check(c: MismatchCollector, report: Report) -> None:
    _envelope(c, report)
    dims = _dims(report)
    kernel = _kernel_for(report)
    causal = bool(report.scheduler.causal) if report.scheduler else False

    if report.scheduler:
        s = report.scheduler

        def grid(key: str, got: object, want: object, why: str) -> None:
            """A grid fact follows from the shape and tiles: sagetui's reports hold every one,
            the two made elsewhere those both of them hold."""
            owe = report.tool is not None or key in GRID_MADE_ELSEWHERE
            (c.owed if owe else c.eq)(f"$.scheduler.{key}", got, want, why)

        if s.warp_q and s.warp_k:
            grid("warps_per_cta", s.warps_per_cta,
                 (s.cta_q // s.warp_q) * (s.cta_k // s.warp_k), "(cta_q/warp_q) x (cta_k/warp_k)")
            grid("threads_per_cta", s.threads_per_cta,
                 (s.cta_q // s.warp_q) * (s.cta_k // s.warp_k) * 32, "32 threads per warp")
        if dims:
            kv_len = dims.get("kv_len") or s.kv_len
            if dims["head_dim"] <= MAX_HEAD_DIM:  # beyond it, no kernel: nothing to derive
                hd = scheduler.padded_head_dim(dims["head_dim"])
                t = scheduler.tiles(_kernel_for(report), hd)
                smem = t.shared_memory(hd) if (t.cta_q, t.cta_k) == (s.cta_q, s.cta_k) \
                    else (s.cta_q + 2 * s.cta_k) * hd  # unknown tiles: the fp8 paths' formula
                grid("dynamic_shared_memory_bytes", s.dynamic_shared_memory_bytes,
                     smem, "the kernel's Q, K and V tiles (and staged output) in shared memory")
            q_ctas = scheduler.ceil_div(dims["q_len"], s.cta_q)
            grid("q_ctas_per_head", s.q_ctas_per_head, q_ctas, "ceil(q_len / cta_q)")
            grid("heads", s.heads, dims["heads"], "q heads of q_shape")
            grid("grid_ctas", s.grid_ctas, q_ctas * dims["heads"] * dims["batch"],
                 "q CTAs per head x heads x batch")
            grid("q_tail_rows", s.q_tail_rows, dims["q_len"] % s.cta_q,
                 "q_len mod cta_q")
            grid("scheduled_q_rows", s.scheduled_q_rows, q_ctas * s.cta_q,
                 "q CTAs x cta_q")
            grid("q_row_efficiency", s.q_row_efficiency,
                 dims["q_len"] / (q_ctas * s.cta_q), "q_len / scheduled rows")
            if kv_len:
                if causal and kernel in scheduler.TILES:
                    if q_ctas > MAX_CAUSAL_CTAS:  # one entry per CTA: bound the work
                        k_it = k_total = None
                    else:
                        per = scheduler.causal_k_iterations(dims["q_len"], kv_len,
                                                            scheduler.TILES[kernel])
                        k_it, k_total = max(per), sum(per) * dims["heads"] * dims["batch"]
                else:
                    k_it = scheduler.ceil_div(kv_len, s.cta_k)
                    k_total = k_it * q_ctas * dims["heads"] * dims["batch"]
                grid("k_iterations_per_cta", s.k_iterations_per_cta, k_it,
                     "ceil(kv_len / cta_k)" + (" for the longest causal CTA" if causal else ""))
                grid("k_iterations_total", s.k_iterations_total, k_total,
                     "K iterations summed over the grid")
                grid("k_tail_rows", s.k_tail_rows, kv_len % s.cta_k,
                     "kv_len mod cta_k")
        if s.waves is not None and s.sm_count and s.ctas_per_sm and s.grid_ctas:
            c.eq("$.scheduler.waves", s.waves, s.grid_ctas / (s.sm_count * s.ctas_per_sm),
                 "grid CTAs / (SMs x CTAs per SM)")

    if report.tail_study:
        default = (report.scheduler.cta_q, report.scheduler.cta_k) if report.scheduler else \
            (scheduler.TILES[kernel].cta_q, scheduler.TILES[kernel].cta_k)
        # each row at the tiles of the variant it timed (sagetui's reports carry a scheduler
        # per variant, the tail study's variant being the baseline, whichever kernel it runs)
        own = {v.name: (v.scheduler.cta_q, v.scheduler.cta_k) for v in report.variants or []
               if v.scheduler is not None}

        def tiles_of(row: TailRow) -> tuple[int, int]:
            return own.get(row.variant or "", default)

        for i, row in enumerate(report.tail_study):
            p = f"$.tail_study[{i}]"
            cta_q, cta_k = tiles_of(row)
            q_ctas = scheduler.ceil_div(row.q_len, cta_q)
            c.eq(f"{p}.q_ctas_per_head", row.q_ctas_per_head, q_ctas, "ceil(q_len / cta_q)")
            c.eq(f"{p}.k_iterations_per_cta", row.k_iterations_per_cta,
                 scheduler.ceil_div(row.kv_len, cta_k), "ceil(kv_len / cta_k)")
            c.eq(f"{p}.q_tail_rows", row.q_tail_rows, row.q_len % cta_q, "q_len mod cta_q")
            c.eq(f"{p}.k_tail_rows", row.k_tail_rows, row.kv_len % cta_k, "kv_len mod cta_k")
            c.eq(f"{p}.scheduled_q_rows", row.scheduled_q_rows, q_ctas * cta_q, "q CTAs x cta_q")
            c.eq(f"{p}.q_row_efficiency", row.q_row_efficiency, row.q_len / (q_ctas * cta_q),
                 "q_len / scheduled_q_rows")
            c.summary_shape(f"{p}.mainloop", row.mainloop)
        for sweep, which, key in (("q_tail_fixed_kv", 0, "q_len"),
                                  ("kv_tail_fixed_q", 1, "kv_len")):
            rows = [(i, r) for i, r in enumerate(report.tail_study) if r.sweep == sweep]
            if not rows:
                continue
            tile = tiles_of(rows[0][1])[which]
            # N is the run's own (its row is the sweep's last): the rows' largest only where the
            # report keeps no shape
            n = (dims or {}).get(key) or max(getattr(r, key) for _, r in rows)
            want = scheduler.tail_points(n, tile)
            got = [getattr(r, key) for _, r in rows]
            c.recomputed.update(f"$.tail_study[{i}].{key}" for i, _ in rows)
            fixed = "kv_len" if key == "q_len" else "q_len"
            if dims and dims.get(fixed):
                for i, r in rows:
                    c.eq(f"$.tail_study[{i}].{fixed}", getattr(r, fixed), dims[fixed],
                         f"{sweep}: the run's {fixed}")
            if sorted(set(got)) != want:
                c.out.append(Mismatch(f"$.tail_study[{rows[0][0]}].{key}", got, want,
                                      f"{sweep}: multiple of {tile} at or below {n}, +1, and {n}"))

    if report.phase_timings:
        for name, summary in report.phase_timings.items():
            c.summary_shape(f"$.phase_timings.{name}", summary)
            if report.samples is None:
                c.eq(f"$.phase_timings.{name}.count", summary.count, report.iterations,
                     "one sample per iteration")
                c.recomputed.add("$.iterations")

    d = report.manual_decomposition_vs_public_sage2
    if d is not None:
        c.eq("$.manual_decomposition_vs_public_sage2.equal", d.equal, d.max_abs == 0.0,
             "equal exactly when max_abs is 0")
        if d.mean_abs > d.max_abs:
            c.out.append(Mismatch("$.manual_decomposition_vs_public_sage2.mean_abs", d.mean_abs,
                                  f"<= {d.max_abs}", "a mean is at most the max"))
        if d.equal:
            c.eq("$.reference_checksum", report.reference_checksum, report.manual_checksum,
                 "equal outputs have equal checksums")
            c.eq("$.manual_checksum", report.manual_checksum, report.reference_checksum,
                 "equal outputs have equal checksums")

    _check_variants(c, report)
    check_profiles(report.mainloop_profiles or [], c.eq, c.complete)
    _profiled(c, report)
    check_diff(report.mainloop_diff, report.mainloop_profiles or [], c.eq)
    if c.complete and report.mainloop_diff is None and len(report.mainloop_profiles or []) > 1:
        c.out.append(Mismatch("$.mainloop_diff", MISSING, "the profiles' diff", "two or more "
                              "profiles are diffed against the baseline's (run/assemble.py)"))
    check_kernel_fields(c, report)
    check_sol(c, report)
    check_host(c, report)
    check_sweep(c, report)
    check_workload(c, report)
    check_swap(c, report)
    check_run(c, report)
    check_owed(c, report)
    check_version_members(c, report)
    if c.complete and report.variants and not (report.sweep or report.workload or report.swap):
        _run_members(c, report)


def _run_members(c: MismatchCollector, report: Report) -> None:
    """Every member the report's own assembler writes (run/assemble.build_report) from its
    samples and configuration, the variants' recorded figures set aside, is there: a figure
    left out is a finding; and the variants are the configuration's, as configured."""
    if run_config(report) is None:
        return  # said by run/check (a report of this schema reads its configuration)
    try:
        m = from_report(report)
        for v in m.variants.values():
            v.recorded = None  # measured again from the samples, not read back
        rebuilt = build_report(m, (report.status or COMPLETE, list(report.status_detail or [])))
    except ValueError as exc:  # its samples or words hold what no report can be made of
        c.out.append(Mismatch("$", "recorded", f"cannot be rebuilt: {one_line(str(exc))[:200]}",
                              "the report's assembler (run/assemble.build_report)"))
        return
    # the raw samples are the assembler's input, not a figure it writes: left out of both
    given = {p for p, _ in members(report.to_json_dict(samples=False))}
    made = rebuilt.to_json_dict(samples=False)
    # a variant whose build failed never ran: what it would have had is not written
    never = tuple(f"$.variants[{i}]" for i, v in enumerate(report.variants or [])
                  if is_left_out(v))
    missing: list[str] = []
    for path, _ in leaves(made):
        if path in given:
            continue
        head = next(path[:i] for i in range(len(path) + 1)
                    if (i == len(path) or path[i] in ".[") and path[:i] not in given)
        if head.startswith((*never, *missing)) or recorded_why(made, path) is not None:
            continue  # what the run measured or was given, not a figure it derives
        if head == "$.threshold" and not any(v.verdict for v in report.variants or []):
            continue  # nothing judged yet (a model that has resolved no threshold)
        missing.append(head)
    for path in missing:
        c.out.append(Mismatch(path, MISSING, "present", "the report's assembler writes it from "
                              "the samples and the configuration (run/assemble.build_report)"))
    cfg = run_config(report)
    if cfg is None:
        return
    asked = [(v.name, v.backend, v.spec) for v in cfg.variants]
    ran = [(v.name, v.backend, v.spec) for v in report.variants or []]
    if [x for x in ran if x[0] in {n for n, _, _ in asked}] != asked:
        c.out.append(Mismatch("$.variants", [x[0] for x in ran], [x[0] for x in asked],
                              "the configuration's variants, each with its backend and spec"))
    if cfg.tail_study and report.tail_study is None and report.status == COMPLETE:
        c.out.append(Mismatch("$.tail_study", MISSING, "the rows --tail-study timed",
                              "a complete run with --tail-study has its rows"))
    if report.schedule is None and any(v.rounds for v in report.variants or []):
        c.out.append(Mismatch("$.schedule", MISSING, "the blocks that ran",
                              "a run's rounds are its schedule's blocks"))


def _profiled(c: MismatchCollector, report: Report) -> None:
    """A profile pass's report (`sagetui profile`: no variant measured) has a profile of every
    variant configured, in order, but those whose build failed (run/assemble.with_left_out)."""
    cfg = run_config(report)
    if not c.complete or cfg is None or report.sweep or report.workload or report.swap \
            or any(not is_left_out(v) for v in report.variants or []):
        return
    left_out = {v.name for v in report.variants or []}
    want = [v.name for v in cfg.variants if v.name not in left_out]
    got = [p.variant for p in report.mainloop_profiles or []]
    if got != want:
        c.out.append(Mismatch("$.mainloop_profiles", got, want, "a profile of every variant "
                              "configured whose build did not fail (cli/profile.py)"))


def _envelope(c: MismatchCollector, report: Report) -> None:
    """A report sagetui made (it names the tool) says how it ended, where it ran and when, in
    the one envelope (core/report/envelope.py); a swap before schema 6 had no schema version,
    a profile before it wrote its time with "Z"."""
    if report.tool is None:
        return
    why = "the envelope every report of sagetui's carries (core/report/envelope.py)"
    for key in ("status", "environment", "created_utc") + (() if report.swap else
                                                            ("schema_version",)):
        if getattr(report, key) is None:
            c.out.append(Mismatch(f"$.{key}", None, "present", why))
    created = report.created_utc
    if created is not None and (report.schema_version or 0) >= ONE_ENVELOPE_FROM \
            and not created_format_ok(created):
        c.out.append(Mismatch("$.created_utc", created, created_now(), why + ": its format"))


def _check_variants(c: MismatchCollector, report: Report) -> None:
    variants = report.variants or []
    samples = report.samples or Samples()
    base_name = report.baseline or (variants[0].name if variants else None)
    base = report.variant(base_name) if base_name else None
    ref_sha = report.reference_output_sha256 or (base.output_sha256 if base else None)
    inputs = base.input_sha256 if base else None
    for i, v in enumerate(variants):
        p = f"$.variants[{i}]"
        if inputs and v.input_sha256:  # the runner's hash: every variant ran on the same q/k/v
            c.eq(f"{p}.input_sha256", v.input_sha256, inputs, "the baseline's inputs")
        totals = samples.get(v.name, {}).get("total")
        if v.rounds:
            for r, s in enumerate(v.rounds):
                c.summary_shape(f"{p}.rounds[{r}]", s)
                if totals and r < len(totals):
                    c.summary_from_samples(f"{p}.rounds[{r}]", s, totals[r])
                if v.status in (None, "ok"):
                    c.eq(f"{p}.rounds[{r}].count", s.count, report.iterations_per_round,
                         "iterations_per_round")
                    c.eq("$.iterations_per_round", report.iterations_per_round, s.count,
                         f"{p}.rounds[{r}].count")
            if v.timing is not None:
                merged = merge_round_summaries([s.model_dump() for s in v.rounds])
                for k, val in merged.items():
                    c.eq(f"{p}.timing.{k}", getattr(v.timing, k), val, "from the rounds")
            if report.rounds is not None and v.status in (None, "ok") \
                    and report.status in (None, "complete"):  # else: what it lost is its detail
                c.eq(f"{p}.rounds", len(v.rounds), report.rounds, "one summary per round")
                c.eq("$.rounds", report.rounds, len(v.rounds), f"{p}.rounds: one per round")
        if v.timing is not None:
            c.summary_shape(f"{p}.timing", v.timing)
            if totals:
                c.summary_from_samples(f"{p}.timing", v.timing, totals.values)
        for phase, s in (v.phase_timings or {}).items():
            c.summary_shape(f"{p}.phase_timings.{phase}", s)
            per_round = samples.get(v.name, {}).get(phase)
            if per_round:
                c.summary_from_samples(f"{p}.phase_timings.{phase}", s, per_round.values)
        if base and base.timing and v.timing:
            c.eq(f"{p}.speedup_vs_baseline_percent", v.speedup_vs_baseline_percent,
                 speedup_percent(base.timing.p50_s, v.timing.p50_s),
                 f"(p50 of {base.name} / p50 of {v.name} - 1) x 100")
        if v.output_sha256 and ref_sha:
            exact = v.output_sha256 == ref_sha
            c.eq(f"{p}.byte_exact", v.byte_exact, exact,
                 "output_sha256 equals the reference output's")
            for k in ("max_abs_diff", "mean_abs_diff"):
                if exact and getattr(v, k) is not None:  # the runner's reading, held to the hashes
                    c.eq(f"{p}.{k}", getattr(v, k), 0.0, "a byte-exact output differs nowhere")
        if v.kernel_facts is not None:
            _check_kernel_facts(c, f"{p}.kernel_facts", v)
    if report.phase_timings and base and samples.get(base.name):
        for phase, s in report.phase_timings.items():
            per_round = samples[base.name].get(phase)
            if per_round:
                c.summary_from_samples(f"$.phase_timings.{phase}", s, per_round.values)


def _check_kernel_facts(c: MismatchCollector, p: str, v: Variant) -> None:
    """The occupancy from the block's raw figures (core/kernel_facts.derive), and its launch
    against the variant's own grid."""
    kf = v.kernel_facts
    assert kf is not None
    if v.scheduler is not None:
        c.eq(f"{p}.threads_per_cta", kf.threads_per_cta, v.scheduler.threads_per_cta,
             "the variant's scheduler grid")
        c.eq(f"{p}.dynamic_shared_bytes", kf.dynamic_shared_bytes,
             v.scheduler.dynamic_shared_memory_bytes, "the variant's scheduler grid")
    if kf.kernel is None or kf.arch is None or kf.threads_per_cta is None \
            or kf.dynamic_shared_bytes is None:
        return
    want = derive(kf.kernel, kf.arch, kf.threads_per_cta, kf.dynamic_shared_bytes)
    got = kf.occupancy
    if want is None or got is None:
        c.eq(f"{p}.occupancy", got is not None, want is not None,
             f"occupancy is computed exactly for the architectures of ARCH_LIMITS ({kf.arch})")
        return
    why = "the occupancy calculator's rules on the raw figures (core/kernel_facts.py)"
    for key, value in want.model_dump().items():
        if key == "limits":
            for limit, n in value.items():
                c.eq(f"{p}.occupancy.limits.{limit}", got.limits.get(limit), n, why)
        elif key == "limited_by":
            c.eq(f"{p}.occupancy.limited_by", ", ".join(got.limited_by), ", ".join(value), why)
        else:
            c.eq(f"{p}.occupancy.{key}", getattr(got, key), value, why)
