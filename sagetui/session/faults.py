"""What went wrong, as the report's Fault: a runner that died or hung, a runner's error event,
a kernel's output that is not a number."""

from __future__ import annotations

from sagetui.core import events as ev
from sagetui.core.report.model import Fault
from sagetui.session.runner_client import RunnerGone


def gone_fault(gone: RunnerGone, name: str | None, r: int | None) -> Fault:
    """A runner that died or hung, blamed on the variant and phase its status board named."""
    st = gone.status or {}
    return Fault(kind=gone.kind, message=gone.message, variant=st.get("variant") or name,
                 phase=st.get("phase") or None, round=r, stderr_tail=gone.stderr_tail[-12:])


def error_fault(e: ev.RunnerError, round_: int | None) -> Fault:
    return Fault(kind=e.kind, message=e.message, variant=e.variant, phase=e.phase,
                 round=round_, stderr_tail=(e.traceback or "").splitlines()[-8:])


def nonfinite_fault(e: ev.RunnerEvent, faults: list[Fault]) -> Fault | None:
    """A kernel's output with NaN or Inf: the timings stand, the output facts that are not
    numbers are dropped, and a fault (once per variant and event; None when `faults` has it)
    says so."""
    name: str | None = getattr(e, "variant", None)
    if any(f.kind == "nonfinite" and f.variant == name and e.NAME in f.message for f in faults):
        return None
    return Fault(kind="nonfinite", variant=name, round=getattr(e, "round", None),
                 message=f"the output holds NaN or Inf ({e.NAME}: "
                         f"{', '.join(e.nonfinite or [])} not finite); the timings are kept")
