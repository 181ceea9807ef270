"""A swap report's cells and notes, written once for `sagetui swap`'s table, the console's
Swap panel and `sagetui compare` (core/format.py's formatters)."""

from __future__ import annotations

from sagetui.core import format as fmt
from sagetui.core.report.io import one_line
from sagetui.core.report.model import Report
from sagetui.core.swap.model import ArmFigures, Swap

COLUMNS = [("arm", False), ("rounds", True), ("step ms", True), ("step change %", True),
           ("95% CI", True), ("verdict", False), ("attn ms", True), ("attn share %", True),
           ("attn change %", True), ("swapped", True), ("passed", True),
           ("output rel L1 %", True), ("cosine", True)]


def title(s: Swap) -> str:
    return one_line(f"sagetui swap · step: {s.step} ({s.clock}) · baseline {s.baseline}")


def verdict_word(f: ArmFigures, baseline: str) -> str:
    if f.step is not None:
        return f.step.state
    return "baseline" if f.arm == baseline else fmt.DASH


def rows(s: Swap) -> list[list[str]]:
    out = []
    for f in s.figures:
        o = f.outputs[0] if f.outputs else None
        out.append([one_line(f.arm) + (" (failed)" if f.status == "failed" else ""),
                     str(f.rounds), fmt.ms(f.step_s), fmt.pct(f.step_change_percent, 1),
                     fmt.ci(f.step_change_low_percent, f.step_change_high_percent, 1),
                     verdict_word(f, s.baseline), fmt.ms(f.attention_s),
                     fmt.pct(f.attention_share_percent, 1, sign=False),
                     fmt.pct(f.attention_change_percent, 1), fmt.count(f.swapped),
                     fmt.count(f.passed), fmt.fraction_pct(o.relative_l1 if o else None, 3),
                     fmt.cosine(o.cosine_similarity if o else None)])
    return out


def notes(report: Report) -> list[str]:
    """What the table cannot hold: why calls were passed through, every output's change, the
    replay's prediction, the failed arms' last lines, the status."""
    s = report.swap
    assert s is not None
    lines = []
    for f in s.figures:
        for why, n in f.passed_reasons.items():
            lines.append(f"{f.arm}: {n} call(s) passed through: {why}")
        for o in f.outputs:
            lines.append(f"{f.arm}: output {o.name!r}: " + (
                f"relative L1 {fmt.fraction_pct(o.relative_l1, 3)} %, cosine "
                f"{fmt.cosine(o.cosine_similarity)}, max error {fmt.sci(o.max_abs_error)} "
                f"(the worst of {o.rounds} rounds)" if o.rounds else (o.problem or
                                                                     "not compared")))
        if f.replay_note:
            lines.append(f"{f.arm}: {f.replay_note}")
    if s.replay is not None and s.replay.problem:
        lines.append(f"replay: {s.replay.problem}")
    for p in s.processes:
        if p.status == "failed":
            lines.append(f"{p.arm} failed in round {p.round + 1}; its last lines:")
            lines += [f"  {x}" for x in (p.error or [])]
    lines.append(f"status: {report.status}" + (f" ({'; '.join(report.status_detail)})"
                                               if report.status_detail else ""))
    return [one_line(x) for x in lines]
