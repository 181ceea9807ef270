"""The log line of each event: the one place the console's Log tab and `sagetui run`'s progress
lines are written from. Plain text (a display must never read it as markup)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sagetui.core import events as ev
from sagetui.core import format as fmt
from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.blocks.workload import Workload
from sagetui.core.run import late

Severity = Literal["information", "warning", "error"]


@dataclass(frozen=True)
class LogLine:
    text: str
    severity: Severity = "information"
    detail: list[str] = field(default_factory=list)  # shown indented and dim (stderr lines)


def _block_line(e: ev.BlockDone) -> LogLine:
    """Which SDPA backend torch ran (a variant's first block), and a block whose queue drained
    (the GPU waited for the host: core/host_time.py): measured again, or kept and counted."""
    parts = []
    if e.facts.get("sdpa_backend"):
        parts.append(f"torch's SDPA ran the {e.facts['sdpa_backend']} backend "
                     f"({e.facts.get('sdpa_backend_method')})")
    if e.redone:
        parts.append(f"round {e.round + 1}'s block drained (the GPU waited for the host): "
                     f"measured again {e.redone}x with a longer gate")
    if e.drained:
        parts.append("still drained: kept, counted in drained_blocks (its time is the host's "
                     "pace)")
    return LogLine(f"variant {e.variant}: " + "; ".join(parts),
                   "warning" if e.drained else "information")


def fault_line(kind: str, message: str, where: dict[str, object],
               tail: list[str]) -> LogLine:
    """A fault, live or from a saved report: what, where (variant, phase, round), its last
    stderr lines."""
    at = ", ".join(f"{k} {v}" for k, v in where.items() if v is not None)
    return LogLine(f"FAULT {kind}: {message}" + (f" ({at})" if at else ""), "error",
                   list(tail)[-8:])


def _verdicts(verdicts: dict[str, dict[str, object]]) -> str:
    parts = []
    for name, v in verdicts.items():
        text = f"{name}: {v.get('state')}"
        lo, hi = v.get("ci_low_percent"), v.get("ci_high_percent")
        if isinstance(lo, int | float) and isinstance(hi, int | float):
            text += f" [{lo:+.2f}, {hi:+.2f}] %"
        parts.append(text)
    return "; ".join(parts)


def point_line(p: SweepPoint) -> str:
    """A sweep point's outcome: each variant's TOPS, or why it failed."""
    if p.status == "failed":
        return f"  failed: {p.error or 'every variant failed'}"
    parts = []
    for v in p.variants:
        if v.status != "ok":
            parts.append(f"{v.name} failed ({v.error})")
        else:
            parts.append(f"{v.name} {v.kernel_tops:.3g} TOPS kernel, {v.e2e_tops:.3g} e2e")
    return "  " + "; ".join(parts)


def replay_line(status: str, wl: Workload) -> str:
    """A workload replay's end: "replay complete: 8 calls, 3 rounds each"."""
    planned = sum(c.point is not None for c in wl.calls)
    calls = f"{len(wl.points)} of {planned}" if len(wl.points) != planned else str(planned)
    # the rounds each call made: fewer than asked where a replay taking its calls in turn was
    # stopped between its rounds
    made = sorted({max((v.round_count or 0 for v in p.variants), default=0) for p in wl.points})
    rounds = str(wl.rounds) if made in ([], [wl.rounds]) else \
        f"{made[0]}{f'-{made[-1]}' if len(made) > 1 else ''} of {wl.rounds}"
    return f"replay {status}: {calls} call{'s' * (planned != 1)}, {rounds} " \
           f"round{'s' * (wl.rounds != 1)} each"


def _late_line(e: ev.LateFacts) -> LogLine | None:
    if e.variant is None:
        sha = e.facts.get("input_sha256")
        return LogLine(f"inputs' sha256 {sha[:12]}") if isinstance(sha, str) else None
    if e.facts.get("accuracy_error"):
        return LogLine(f"accuracy of {e.variant}: not computed: {e.facts['accuracy_error']}",
                       "warning")
    cells = fmt.accuracy(e.facts.get("accuracy"))
    return LogLine(f"accuracy of {e.variant} against fp32 attention: cos {cells['cos']}, "
                   f"rel L1 {cells['l1']} %, RMSE {cells['rmse']}, max |err| {cells['max']}")


def log_line(e: ev.Event) -> LogLine | None:
    """The line an event writes to the log; None for the events that write none."""
    match e:
        case ev.Hello():
            return LogLine(f"runner up: torch {e.torch} on {e.device}")
        case ev.VariantLoaded():
            if e.status == "ok":
                return LogLine(f"variant {e.name} ({e.backend}): loaded")
            return LogLine(f"variant {e.name} ({e.backend}): failed: {e.error}", "error")
        case ev.Ready():
            gpu = (e.gpu or {}).get("name") or e.device
            kept = ", kept from the last run" if e.reused_inputs else ""
            sha = f"sha256 {e.input_sha256[:12]}" if e.input_sha256 else ""
            paren = ", ".join(p for p in (sha, kept.removeprefix(", ")) if p)
            return LogLine(f"inputs ready on {gpu}" + (f" ({paren})" if paren else ""))
        case ev.Measured():
            what = late.describe(e.computing)
            return LogLine("measured: the verdicts are final"
                           + (f"; computing {what}" if what else ""))
        case ev.LateFacts():
            return _late_line(e)
        case ev.Decomposition() if e.equal is not None:
            same = "byte-equal to" if e.equal else "DIFFERENT from"
            return LogLine(f"decomposition check of {e.variant}: {same} its public API",
                           "information" if e.equal else "warning")
        case ev.AnalysisDone():
            verdicts = _verdicts(e.verdicts)
            return LogLine(f"round {e.round + 1} done" + (f" · {verdicts}" if verdicts else ""))
        case ev.ThresholdResolved():
            return LogLine(f"verdicts: SAME when the 95 % interval lies within "
                           f"±{fmt.percent(e.threshold.get('threshold_percent', 0))} "
                           f"({e.threshold.get('threshold_source', 'default')})")
        case ev.BaselineChanged():
            return LogLine(f"baseline: {e.baseline} from this round on")
        case ev.ProfilesAdded():
            names = ", ".join(sorted({p.variant for p in e.profiles}))
            return LogLine(f"main-loop profiles added: {names}")
        case ev.Resumed():
            return LogLine("resuming: the round the run was stopped in is measured again")
        case ev.BlockDone() if e.facts.get("sdpa_backend") or e.redone or e.drained:
            return _block_line(e)
        case ev.PointStarted():
            if e.call is not None:
                turn = f", round {e.round + 1}" if e.round is not None else ""
                return LogLine(f"call {e.index + 1} of {e.total} ({e.call}{turn}): {e.shape}")
            return LogLine(f"point {e.index + 1}/{e.total}: {e.shape}")
        case ev.PointDone():
            where = (f"call {e.index + 1} of {e.total} ({e.call}) done:" if e.call is not None
                     else f"sweep point {e.index + 1}/{e.total}:")
            return LogLine(f"{where} {e.point.shape.describe()}" + point_line(e.point),
                           "error" if e.point.status == "failed" else "information")
        case ev.TailRow():
            return LogLine(f"tail study: {e.sweep} q_len {e.q_len} kv_len {e.kv_len}")
        case ev.FaultRaised(fault=f):
            return fault_line(f.kind, f.message,
                              {"variant": f.variant, "phase": f.phase, "round": f.round},
                              f.stderr_tail)
        case ev.RunnerError():
            return fault_line(e.kind, e.message, {"variant": e.variant, "phase": e.phase},
                              (e.traceback or "").splitlines())
        case ev.LogMessage():
            return LogLine(e.message)
        case ev.FromRunner():
            inner = log_line(e.event)
            return None if inner is None else LogLine(f"[{e.runner}] {inner.text}",
                                                      inner.severity, inner.detail)
        case ev.Finished():
            severity: Severity = "information" if e.status == "complete" else "warning"
            why = "; ".join(e.detail or e.report.status_detail or [])
            if e.report.sweep is not None:
                return LogLine(f"sweep {e.status}: {len(e.report.sweep.points)} points kept"
                               + (f" ({why})" if why else ""), severity)
            if e.report.workload is not None:
                return LogLine(replay_line(e.status, e.report.workload) + (
                    f" ({why})" if why else ""), severity)
            return LogLine(f"run {e.status}: {e.report.rounds or 0} rounds kept"
                           + (f" ({why})" if why else ""), severity)
        case (ev.WarmupDone() | ev.Iterations() | ev.BlockDone() | ev.Decomposition()
              | ev.PhaseStarted() | ev.Bye() | ev.RoundStarted() | ev.RoundDone()
              | ev.RunStarted() | ev.ConfigResolved() | ev.LateDone()):
            return None
        case _:
            ev.unexpected(e)
            return None
