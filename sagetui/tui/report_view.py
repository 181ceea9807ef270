"""A saved report shown in the console: the same RunData a live run fills (and a live run's
final report, which replaces what the run streamed)."""

from __future__ import annotations

from sagetui.core.eventlog import LogLine, fault_line
from sagetui.core.phases import PARENTS
from sagetui.core.report.model import Report
from sagetui.core.samples import Samples
from sagetui.core.statistics.threshold import report_threshold
from sagetui.tui.phase_stats import PhaseStore
from sagetui.tui.run_data import RunData
from sagetui.tui.variant_view import RoundPoint


def from_report(report: Report, label: str, path: str | None = None,
                live: bool = False) -> RunData:
    data = RunData(label, live=live, path=path)
    load_report(data, report)
    return data

def load_report(data: RunData, report: Report) -> None:
    """Replace everything with the report's contents (a live run's final report too)."""
    enabled = {n: v.enabled for n, v in data.variants.items()}
    data.report = report
    data.variants = {}
    data.status = report.status or ("saved" if not data.live else "complete")
    data.baseline = report.baseline or (report.variants[0].name if report.variants
                                        else None)
    data.iterations_per_round = report.iterations_per_round or report.iterations
    data.warmup = report.warmup
    data.rounds_done = report.rounds or 0
    env = report.environment or {}
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else None
    data.device, data.torch = env.get("device"), env.get("torch")
    data.gpu_name = (gpu or {}).get("name")
    state = (gpu or {}).get("state")
    data.gpu_state = state if isinstance(state, dict) else None
    data.source_commit = report.source_commit
    data.scheduler = report.scheduler.model_dump(exclude_none=True) if report.scheduler \
        else None
    data.tail_rows = [row.model_dump(exclude_none=True) for row in report.tail_study or []]
    dec = report.manual_decomposition_vs_public_sage2
    data.decomposition = dec.model_dump(exclude_none=True) if dec else None
    data.checksums = (report.manual_checksum, report.reference_checksum)
    data.fused_notes = report.fused_mainloop_phases
    data.mainloop_profiles = list(report.mainloop_profiles or [])
    data.achieved = report.achieved
    data.report_phases = {n: s.model_dump() for n, s in (report.phase_timings or {}).items()}
    data.metadata = report.metadata or {}
    data.faults = [f.model_dump() for f in report.faults or []]
    data.threshold = report_threshold(report)
    data.shape = shape_text(report)
    if not data.live:  # a live run keeps what it planned, to say "7/300 rounds kept"
        data.progress.rounds_planned = report.rounds
    rounds_of = report.round_numbers()
    for v in report.variants or []:
        view = data.variant(v.name)
        view.enabled = enabled.get(v.name, True)
        view.backend, view.path, view.status = v.backend, v.path, v.status or "ok"
        view.error = v.error
        view.timing = v.timing.model_dump() if v.timing else None
        view.verdict = v.verdict.model_dump() if v.verdict else None
        view.drift = v.drift.model_dump() if v.drift else None
        view.speedup_percent = v.speedup_vs_baseline_percent
        view.byte_exact, view.output_sha256 = v.byte_exact, v.output_sha256
        view.deterministic = v.deterministic
        view.accuracy = v.accuracy.model_dump() if v.accuracy else None
        view.sdpa_backend = v.sdpa_backend
        view.outliers = v.outliers.count if v.outliers else None
        view.phase_summaries = {n: s.model_dump() for n, s in (v.phase_timings or {}).items()}
        samples = (report.samples or Samples()).get(v.name) or {}
        numbers = rounds_of.get(v.name) or list(range(len(samples.get("total", []))))
        order = list(samples) if samples else list(view.phase_summaries)
        view.phases = [(n, PARENTS.get(n) if PARENTS.get(n) in order else None)
                       for n in order if n != "total"]
        for phase, per_round in samples.items():
            store = view.total if phase == "total" else view.phase_store.setdefault(
                phase, PhaseStore())
            store.add_rounds([numbers[i] if i < len(numbers) else i
                              for i in range(len(per_round))], per_round)
            if phase == "total":
                view.totals.sync()
        view.completed_rounds = view.total.rounds()
        if not samples and v.rounds:
            view.round_summaries = [RoundPoint(i, s.p50_s, s.min_s, s.max_s)
                                    for i, s in enumerate(v.rounds)]
            view.completed_rounds = list(range(len(v.rounds)))
        rounds = view.completed_rounds
        for i, t in enumerate(v.telemetry or []):
            view.round_telemetry[rounds[i] if i < len(rounds) else i] = t.model_dump()
    data.touch()


def shape_text(report: Report) -> str | None:
    q = report.q_shape
    if not q:
        return None
    layout = report.layout or "NHD"
    b, n, h, d = q if layout == "NHD" else (q[0], q[2], q[1], q[3])
    cfg = (report.config or {}).get("shape")  # free-form JSON: any value, or none
    dtype = cfg.get("dtype") if isinstance(cfg, dict) else None
    extra = " ".join(x for x in (dtype if isinstance(dtype, str) else None, layout) if x)
    kv = report.k_shape
    kv_len = (kv[1] if layout == "NHD" else kv[2]) if kv else n
    kvs = f" kv {kv_len}" if kv_len != n else ""
    return f"{b}x{n}x{h}x{d}{kvs}" + (f" {extra}" if extra else "")


def opened_lines(data: RunData) -> list[LogLine]:
    """The Log's lines for a report just opened: what it holds, and each of its faults."""
    n = len(data.variants)
    lines = [LogLine(f"opened {data.path}: {data.kind()}, {n} variant{'s' * (n != 1)}, "
                     f"{data.rounds_done} rounds, {len(data.tail_rows)} tail rows")]
    for f in data.faults:
        tail = list(f.get("stderr_tail") or (f.get("traceback") or "").splitlines())
        lines.append(fault_line(f.get("kind", "error"), f.get("message", ""),
                                {k: f.get(k) for k in ("variant", "phase", "round")}, tail))
    return lines
