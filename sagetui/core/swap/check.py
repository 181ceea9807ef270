"""`sagetui check` of a swap block: each arm's figures (medians, share, calls, the paired
verdict and the step's change, the attention's change, the outputs' metrics from their sums,
the replay's prediction and its note) derived again from the processes (derive.py), and the
step and clock from what the processes timed. Taken as recorded: the processes' own
measurements, their NVML telemetry (shown merged per round, core/telemetry.merge_blocks) and
the replay's totals (the replay's report holds their samples)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sagetui.core.blocks.swap import UNCHANGED, UNWRAPPED
from sagetui.core.report.model import Report
from sagetui.core.swap import derive

if TYPE_CHECKING:
    from sagetui.core.report.mismatch import MismatchCollector


def check_swap(c: MismatchCollector, report: Report) -> None:
    from sagetui.core.report.mismatch import Mismatch

    s = report.swap
    if s is None:
        return
    names = [a.name for a in s.arms]
    if s.baseline not in names:
        c.out.append(Mismatch("$.swap.baseline", s.baseline, f"one of {names}",
                              "the arm the others are judged against"))
    # the rounds asked: --rounds of the processes mode, --steps of the interleaved one
    asked, where = (s.interleave.steps, "$.swap.interleave.steps") if s.interleave \
        else (s.rounds_asked, "$.swap.rounds_asked")
    for i, f in enumerate(s.figures):
        if f.rounds is not None and f.rounds > asked:
            c.out.append(Mismatch(where, asked, f">= {f.rounds}", f"$.swap.figures[{i}] ran "
                                  f"{f.rounds} rounds: no arm runs more than asked"))
    # an arm without a variant (unchanged, unwrapped, an A/A twin) runs the program as it is:
    # it swaps no call
    plain = {a.name for a in s.arms if a.spec is None}
    for i, a in enumerate(s.arms):
        if a.name in (UNCHANGED, UNWRAPPED) and a.spec is not None:
            c.out.append(Mismatch(f"$.swap.arms[{i}].spec", a.spec, None,
                                  f"the {a.name} arm runs no variant"))
    for i, f in enumerate(s.figures):
        if f.arm in plain and f.swapped:
            c.out.append(Mismatch(f"$.swap.figures[{i}].swapped", f.swapped, 0,
                                  f"the {f.arm} arm runs the program as it is: it swaps no call"))
    _labels(c, report)
    results = [p.result for p in s.processes if p.result is not None]
    c.eq("$.swap.step", s.step, derive.step_of(results), "the region `step`, else the first "
         "region marked, else the first attention call to the last")
    c.eq("$.swap.clock", s.clock, derive.clock_of(results), "CUDA events where a process ran "
         "on CUDA")
    want = derive.arm_figures(s.processes, [a.name for a in s.arms], s.baseline,
                              s.threshold_percent, s.replay, s.output_processes)
    c.eq("$.swap.sustained_clock_mhz", s.sustained_clock_mhz,
         derive.sustained_clock(s.processes), "the median SM clock of every arm's steps")
    if len(want) != len(s.figures):
        c.out.append(Mismatch("$.swap.figures", len(s.figures), len(want), "one per arm"))
        return
    for i, (got, w) in enumerate(zip(s.figures, want, strict=True)):
        _same(c, f"$.swap.figures[{i}]", got.model_dump(), w.model_dump())
    # how the session ended is its own word: `stopped_by` (older reports: "stopped after" in
    # its detail);
    # everything else the status and its detail say follows from the processes
    detail = list(report.status_detail or [])
    interrupted = s.stopped_by is not None or any(line.startswith("stopped after")
                                                  for line in detail)
    status, why = derive.status_of(s.processes, [a.name for a in s.arms], s.rounds_asked,
                                   interrupted=interrupted, stopped_by=s.stopped_by,
                                   warmup=s.interleave.warmup if s.interleave else 2)
    said = "every arm ran every round asked, none failed, nothing interrupted it " \
        "(core/swap/derive.status_of)"
    c.eq("$.status", report.status, status, said)
    if detail != why:
        c.out.append(Mismatch("$.status_detail", detail, why, said))
    c.recomputed.update(f"$.status_detail[{i}]" for i in range(len(detail)))


RAN_FROM = 7  # the first schema whose processes record what they ran (ProcessResult.ran)


def _labels(c: MismatchCollector, report: Report) -> None:
    """Each arm's label held to what ran under it: the spec each process recorded loading for
    each arm it ran (the processes mode: its one arm; interleaved: every arm), and the
    interleaved process's settings, against the arms as configured (`--variant NAME=SPEC`).
    Two arms' labels exchanged on their processes then name the other arm's backend."""
    from sagetui.core.report.mismatch import MISSING, Mismatch

    s = report.swap
    assert s is not None
    arms = [(a.name, a.spec) for a in s.arms]
    why = "the arms as configured ($.swap.arms: --variant NAME=SPEC)"
    if s.interleave is not None:
        told = [(a.name, a.variant.spec if a.variant else None) for a in s.interleave.arms]
        if told != arms:
            c.out.append(Mismatch("$.swap.interleave.arms", told, arms, why))
    for i, p in enumerate(s.processes):
        r, path = p.result, f"$.swap.processes[{i}].result.ran"
        if r is None:
            continue
        if r.ran is None:
            if (report.schema_version or 0) >= RAN_FROM:
                c.out.append(Mismatch(path, MISSING, "the arms it ran, with their specs",
                                      "every process records what it ran"))
            continue
        names = [n for n, _ in arms] if derive.interleaved([p]) else [p.arm]
        ran = [(a.name, a.spec) for a in r.ran]
        if ran != [x for x in arms if x[0] in names]:
            c.out.append(Mismatch(path, ran, [x for x in arms if x[0] in names],
                                  f"what the process loaded for each arm it ran: {why}"))


def _same(c: MismatchCollector, path: str, got: Any, want: Any) -> None:
    from sagetui.core.report.mismatch import Mismatch

    why = "derived from the processes (core/swap/derive.py)"
    if isinstance(want, dict) and isinstance(got, dict):
        for k in sorted(set(got) | set(want)):
            _same(c, f"{path}.{k}", got.get(k), want.get(k))
    elif isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            c.out.append(Mismatch(path, len(got), len(want), why))
            return
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(c, f"{path}[{i}]", g, w)
    elif (got is None) != (want is None):
        c.out.append(Mismatch(path, got, want, why))
    else:
        c.eq(path, got, want, why)
