"""`sagetui check` of a run's claims: each variant's verdict, drift and outlier flags from its raw
samples through the one analysis (core/run/figures.analysis over the report loaded as a run
model: the session's own path), the threshold from the rule of its source, and the run's status
and its detail from the variants' rounds asked and kept, their failures, the variants left out
and how the run ended, through the status state machine (core/run/status.terminal_status, which
the session calls too). A profile report's status is checked here as well; a sweep's in
core/sweep/check.py.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from sagetui.core.config import RunConfig
from sagetui.core.report.mismatch import MISSING, Mismatch, MismatchCollector
from sagetui.core.report.model import Report, Variant
from sagetui.core.run import figures, status
from sagetui.core.run.load import from_report
from sagetui.core.run.model import RunModel
from sagetui.core.statistics import outliers
from sagetui.core.statistics.analysis import VariantAnalysis
from sagetui.core.statistics.threshold import SOURCE_THRESHOLD, rule_percent

VERDICT_WHY = "the paired verdict on the round medians of the raw samples (statistics/verdict.py)"
DRIFT_WHY = "drift of the round medians of the raw samples (statistics/drift.py)"


def check_run(c: MismatchCollector, report: Report) -> None:
    """Every claim of a run report's variants and its status (a sweep's or a workload's
    points, and a swap's arms, are checked by their own modules)."""
    if report.sweep is not None or report.workload is not None or report.swap is not None:
        return
    if report.variants:
        m = from_report(report)  # the report as the session's model: figures.py computes
        _analysis(c, report, m)
        _thresholds(c, report)
        _as_configured(c, report, m)
        _schedule(c, report)
    _status(c, report)


def _as_configured(c: MismatchCollector, report: Report, m: RunModel) -> None:
    """What the configuration fixes: the tensors' shapes, the iterations and warm-up, the
    inputs block; each variant's options as they ran, its own grid, its intervals."""
    cfg = run_config(report)
    if cfg is None and report.config and c.complete:
        c.out.append(Mismatch("$.config", "unreadable", "a configuration this sagetui reads",
                              "the configuration the run was made with"))
    if cfg is not None:
        why = "the configuration"
        c.eq("$.baseline", report.baseline, cfg.baseline_name, f"{why}'s baseline")
        for i, v in enumerate(report.variants or []):
            if v.rounds and len(v.rounds) > cfg.round_limit:
                c.out.append(Mismatch(f"$.variants[{i}].rounds", len(v.rounds),
                                      f"<= {cfg.round_limit}", f"the rounds {why} asks"))
        for key, dims in cfg.shape.tensor_shapes().items():
            got = getattr(report, key)
            if got is not None:
                for j, (a, b) in enumerate(zip(got, dims, strict=False)):
                    c.eq(f"$.{key}[{j}]", a, b, f"{why}'s shape, in its layout")
        fixed: tuple[tuple[str, object], ...] = (
            ("warmup", cfg.warmup), ("iterations", cfg.iterations),
            ("iterations_per_round", cfg.iterations), ("layout", cfg.shape.layout))
        for key, value in fixed:
            c.eq(f"$.{key}", getattr(report, key), value, why)
        if report.inputs is not None:
            block = cfg.inputs_block()
            for k, x in report.inputs.model_dump(exclude_none=True).items():
                if isinstance(x, dict):
                    for kk, xx in x.items():
                        c.same(f"$.inputs.{k}.{kk}", xx, (block.get(k) or {}).get(kk), why)
                else:
                    c.same(f"$.inputs.{k}", x, block.get(k), why)
    _top_level(c, report, m, cfg)
    for i, v in enumerate(report.variants or []):
        p, mv = f"$.variants[{i}]", m.variants[v.name]
        if v.options is not None and v.backend and cfg is not None:
            want_opts = figures.options_as_ran(mv)
            # an option added since (its default) is not in older reports' options
            for k in dict.fromkeys([*v.options, *(want_opts if c.complete else [])]):
                c.same(f"{p}.options.{k}", v.options.get(k), want_opts.get(k),
                       "the configured options over the backend's defaults")
        if v.scheduler is not None and cfg is not None and v.backend:
            grid = figures.own_grid(m, mv)
            if grid is not None:
                got = v.scheduler.model_dump(exclude_none=True)
                for k in dict.fromkeys([*grid, *got]):
                    c.same(f"{p}.scheduler.{k}", got.get(k), grid.get(k),
                           f"{grid.get('kernel')} tiles at the run's shape on its GPU")
        if v.intervals is not None and mv.samples:
            want_iv = figures.measured_intervals(mv)
            for k in dict.fromkeys([*want_iv, *v.intervals]):
                c.same(f"{p}.intervals.{k}", v.intervals.get(k), want_iv.get(k),
                       "95 % t half-width of the phase's log round medians")
        if v.failed_round is not None:
            rounds = [f.round for f in report.faults or [] if f.variant == v.name
                      and f.round is not None]
            c.same(f"{p}.failed_round", v.failed_round, rounds[-1] if rounds else None,
                   "the round of its fault")


def _top_level(c: MismatchCollector, report: Report, m: RunModel,
               cfg: RunConfig | None) -> None:
    """A sagetui report before schema 3 kept its baseline's grid and achieved at the top; the
    tail study ran the configured iterations."""
    if report.tool is None or cfg is None:
        return
    rv = report.variant(m.baseline or "")
    first = next(iter(m.variants.values()), None)  # its grid was the report's (load.py)
    if report.scheduler is not None and first is not None:
        # a report before schema 3 named no kernel per variant: the grid's own, as recorded
        grid = figures.own_grid(m, first) or figures.own_grid(m, first, report.scheduler.kernel)
        if grid is not None:
            got = report.scheduler.model_dump(exclude_none=True)
            for k in dict.fromkeys([*grid, *got]):
                c.same(f"$.scheduler.{k}", got.get(k), grid.get(k),
                       f"the first variant's {grid.get('kernel')} tiles at the run's shape")
    if report.achieved is not None and rv is not None and rv.achieved is not None:
        for k in dict.fromkeys([*report.achieved, *rv.achieved]):
            c.same(f"$.achieved.{k}", report.achieved.get(k), rv.achieved.get(k),
                   "the baseline's achieved")
    for i, row in enumerate(report.tail_study or []):
        c.eq(f"$.tail_study[{i}].mainloop.count", row.mainloop.count, cfg.tail_iterations,
             "config.tail_iterations")


def _schedule(c: MismatchCollector, report: Report) -> None:
    """Each block's iterations: a variant's blocks of a round add up to that round's count."""
    got: dict[tuple[str, int], int] = {}
    for e in report.schedule or []:
        got[(e.variant, e.round)] = got.get((e.variant, e.round), 0) + e.iterations
    numbers = report.round_numbers()
    for i, v in enumerate(report.variants or []):
        for j, (r, s) in enumerate(zip(numbers.get(v.name, []), v.rounds or [], strict=False)):
            c.eq(f"$.variants[{i}].rounds[{j}].count", s.count, got.get((v.name, r)),
                 "its blocks' iterations in the schedule")
    c.recomputed.update(f"$.schedule[{i}].iterations" for i in range(len(report.schedule or [])))


def _analysis(c: MismatchCollector, report: Report, m: RunModel) -> None:
    try:
        an = figures.analysis(m)
    except ValueError as exc:  # round medians that are no durations (a report made elsewhere)
        c.out.append(Mismatch("$.variants", "its round medians", "positive durations",
                              f"the analysis cannot be recomputed: {exc}"))
        return
    variants = report.variants or []
    for i, v in enumerate(variants):
        p = f"$.variants[{i}]"
        a = an.variants.get(v.name)
        want = _verdict_claims(a)
        made_here = report.tool is not None  # else: what another tool chose to record
        if v.verdict is not None or (want is not None and made_here):
            got = v.verdict.model_dump(exclude_none=True) if v.verdict else None
            _fields(c, f"{p}.verdict", {k: got[k] for k in want if k in got}
                    if got and want else got, want, VERDICT_WHY)
        if a is None:
            continue
        if v.drift is not None or (a.drift is not None and made_here):
            _fields(c, f"{p}.drift", v.drift.model_dump(exclude_none=True) if v.drift else None,
                    {k: x for k, x in a.drift.to_dict().items() if x is not None}
                    if a.drift else None, DRIFT_WHY)
        if v.outliers is not None and a.outliers is not None:
            why = "the modified z-scores of the raw samples (statistics/outliers.py)"
            c.eq(f"{p}.outliers.count", v.outliers.count, len(a.outliers), why)
            c.eq(f"{p}.outliers.threshold", v.outliers.threshold, outliers.THRESHOLD, why)
            c.eq(f"{p}.outliers.method", v.outliers.method, outliers.METHOD, why)
            where = figures.outlier_where(m.variants[v.name], a.outliers)
            flagged = [list(w) for w in v.outliers.where]
            c.eq(f"{p}.outliers.where", str(flagged), str([list(w) for w in where]),
                 why + ": (round, iteration) of each")
            c.recomputed.update(f"{p}.outliers.where[{j}][{k}]" for j in range(len(flagged))
                                for k in (0, 1))


def _verdict_claims(a: VariantAnalysis | None) -> dict[str, Any] | None:
    """The recomputed verdict's own fields as a report keeps them (None fields left out); where
    its threshold came from is the run's (checked by `_thresholds`)."""
    if a is None or a.verdict is None:
        return None
    return {k: x for k, x in a.verdict.to_dict().items() if x is not None}


def _fields(c: MismatchCollector, path: str, got: dict[str, Any] | None,
            want: dict[str, Any] | None, why: str) -> None:
    """Every field of a recorded block against the recomputed one; a block recorded where none
    follows (or missing where one does) is one line."""
    if got is None or want is None:
        c.same(path, "present" if got else None, "present" if want else None, why)
        return
    for k in dict.fromkeys([*want, *got]):
        c.same(f"{path}.{k}", got.get(k), want.get(k), why)


def _thresholds(c: MismatchCollector, report: Report) -> None:
    """Each verdict's threshold from the rule of its source, and the run's own the same."""
    cfg = report.config if isinstance(report.config, dict) else None
    blocks: list[tuple[str, Any]] = [("$.threshold", report.threshold)] + [
        (f"$.variants[{i}].verdict", v.verdict) for i, v in enumerate(report.variants or [])]
    for path, t in blocks:
        if t is None:
            continue
        want = rule_percent(t.threshold_source, t.noise_floor_percent, cfg)
        if want is None and t.threshold_source == SOURCE_THRESHOLD:
            c.out.append(Mismatch(f"{path}.threshold_percent", t.threshold_percent,
                                  "a --threshold in the configuration",
                                  "a threshold from --threshold is the configuration's"))
        c.eq(f"{path}.threshold_percent", t.threshold_percent, want,
             f"the threshold rule for its source ({t.threshold_source or 'the configuration'})"
             ": max(1 %, 2 x noise floor), or --threshold's")
        if report.threshold is not None and path != "$.threshold":
            for k in ("threshold_percent", "threshold_source", "noise_floor_percent",
                      "calibration_key", "calibrated_utc"):
                c.eq(f"{path}.{k}", getattr(t, k), getattr(report.threshold, k),
                     "the run's threshold ($.threshold)")


# -- status ------------------------------------------------------------------------------------

def is_left_out(v: Variant) -> bool:
    """A variant asked for that never ran: its build failed (run/assemble.with_left_out)."""
    return v.status == "failed" and (v.error or "").startswith(status.BUILD_FAILED) \
        and v.rounds_asked is None and not v.rounds


def run_config(report: Report) -> RunConfig | None:
    """The report's configuration as a RunConfig (None: none, or another version's)."""
    try:
        return RunConfig.model_validate(report.config) if report.config else None
    except ValidationError:
        return None


def rounds_done(report: Report) -> int:
    """The rounds the run completed: every round some variant kept (by the schedule's round
    numbers, else the longest variant's)."""
    numbers = report.round_numbers()
    kept = {r for v in report.variants or [] if v.rounds for r in numbers.get(v.name, [])}
    return len(kept) if kept else max((len(v.rounds or []) for v in report.variants or []),
                                      default=0)


def expected_status(report: Report) -> tuple[str, list[str]] | None:
    """The status and detail the state machine decides from the report (None: a report that
    sagetui did not make, or of a kind decided elsewhere)."""
    if report.tool is None or report.status is None:
        return None
    variants = report.variants or []
    left = [(v.name, (v.error or "").removeprefix(status.BUILD_FAILED)) for v in variants
            if is_left_out(v)]
    detail = list(report.status_detail or [])
    ran = [v for v in variants if not is_left_out(v)]
    if report.mainloop_profiles is not None and not any(v.rounds for v in ran):
        return status.left_out_status(status.COMPLETE, [], left)  # a profile pass (cli/profile.py)
    done = rounds_done(report)
    if detail and detail[0].startswith(status.UNFINISHED):  # a recovery file, mid-run
        decided, lines = status.unfinished(done)
        return status.left_out_status(decided, lines, left)
    cfg = run_config(report)
    planned = cfg.rounds if cfg is not None and cfg.until_ci_percent is None else None
    outcomes = [status.VariantOutcome(v.name, v.status or "ok", v.error, v.failed_round,
                                  v.rounds_asked if v.rounds_asked is not None
                                  else len(v.rounds or []), len(v.rounds or []))
                for v in ran]
    decided, lines = status.terminal_status(outcomes, done, status.parse_ending(detail, planned))
    return status.left_out_status(decided, lines, left)


def _status(c: MismatchCollector, report: Report) -> None:
    want = expected_status(report)
    if want is None:
        return
    why = "the status state machine on the variants' rounds, failures and left-out builds " \
          "and how the run ended (run/status.py)"
    c.same("$.status", report.status, want[0], why)
    got = list(report.status_detail or [])
    if got != want[1]:
        c.out.append(Mismatch("$.status_detail", got, want[1], why))
    for i in range(len(got)):
        c.recomputed.add(f"$.status_detail[{i}]")
    ending = status.parse_ending(got, None)
    if ending.error is not None and ending.error not in {f.message for f in report.faults or []}:
        c.out.append(Mismatch("$.status_detail", ending.error, "a fault's message",
                              "the session's failure is one of its faults"))
    variants = report.variants or []
    if any(v.rounds for v in variants):
        c.eq("$.rounds", report.rounds, rounds_done(report), "the rounds some variant kept")
    for i, v in enumerate(variants):
        c.recomputed.add(f"$.variants[{i}].rounds_asked")  # held against its rounds above
        if v.rounds_asked is None and v.rounds and c.complete:
            c.out.append(Mismatch(f"$.variants[{i}].rounds_asked", MISSING, "the rounds asked",
                                  "a variant that ran says how many rounds it was asked to run"))
        if v.rounds_asked is not None and len(v.rounds or []) > v.rounds_asked:
            c.out.append(Mismatch(f"$.variants[{i}].rounds_asked", v.rounds_asked,
                                  f">= {len(v.rounds or [])}", "a variant keeps at most the "
                                  "rounds it was asked to run"))
        word = "failed" if v.error else (v.status if v.status in ("ok", "failed") else "ok")
        c.eq(f"$.variants[{i}].status", v.status, word,
             "a variant with an error failed; sagetui's variants are ok or failed")
