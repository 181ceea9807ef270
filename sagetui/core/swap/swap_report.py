"""The swap's report, assembled from what its processes measured: the envelope (status and its
detail from the processes, the host and the device they ran on) around the `swap` block, whose
figures core/swap/derive.py derives (and `sagetui check` derives again)."""

from __future__ import annotations

from collections.abc import Sequence

from sagetui.core.blocks.swap import ArmSpec, Interleave, Replay, Swap, SwapProcess
from sagetui.core.environment import environment_block, host_facts
from sagetui.core.report.envelope import envelope
from sagetui.core.report.model import Report
from sagetui.core.swap import derive


def swap_report(*, argv: list[str], arms: Sequence[ArmSpec], baseline: str, calls: str | None,
                rounds_asked: int, threshold: float, interleave: Interleave | None,
                processes: list[SwapProcess], stopped_by: str | None, replay: Replay | None,
                output_processes: list[SwapProcess], interrupted: bool,
                affinity: str | None = None) -> Report:
    """The report of a swap: `interleave` None for the processes mode (a process per arm and
    round); `interrupted`: a signal or the user ended it."""
    names = [a.name for a in arms]
    status, detail = derive.status_of(processes, names, rounds_asked, interrupted,
                                      stopped_by=stopped_by,
                                      warmup=interleave.warmup if interleave else 2)
    results = [p.result for p in processes if p.result is not None]
    swap = Swap(argv=argv, mode="processes" if interleave is None else "interleaved",
                interleave=interleave, stopped_by=stopped_by, arms=list(arms),
                baseline=baseline, calls=calls, affinity=affinity, rounds_asked=rounds_asked,
                step=derive.step_of(results), clock=derive.clock_of(results),  # type: ignore[arg-type]
                threshold_percent=threshold, processes=processes,
                figures=derive.arm_figures(processes, names, baseline, threshold, replay,
                                           output_processes),
                replay=replay, output_processes=output_processes,
                sustained_clock_mhz=derive.sustained_clock(processes))
    env = environment_block(host=host_facts(),
                            device=next((r.device for r in results if r.device), None))
    return Report.model_validate({
        **envelope(created_utc=None, status=status, status_detail=detail, environment=env),
        "swap": swap})
