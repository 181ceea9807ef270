"""A swap report's cells and notes, written once for `sagetui swap`'s table, the console's
Swap panel and `sagetui compare` (core/format.py's formatters)."""

from __future__ import annotations

from sagetui.core import format as fmt
from sagetui.core.blocks.swap import UNCHANGED, ArmFigures, Swap
from sagetui.core.report.io import one_line
from sagetui.core.report.model import Report
from sagetui.core.telemetry import merge_blocks

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
        if f.call_host_s is not None:
            what = "every call" if f.arm == UNCHANGED else "a swapped call"
            gpu = f.call_gpu_s
            lines.append(f"{f.arm}: {what} in the model: "
                         + (f"GPU {fmt.ms(gpu)} ms, " if gpu is not None else "")
                         + f"host {fmt.ms(f.call_host_s)} ms" + (
                             " (host-bound: the host takes longer to issue it than the GPU "
                             "to run it)" if gpu is not None and f.call_host_s > gpu else ""))
        for why, n in f.passed_reasons.items():
            lines.append(f"{f.arm}: {n} call(s) passed through: {why}")
        for o in f.outputs:
            rounds = f"{o.rounds} round{'s' * (o.rounds != 1)}"
            lines.append(f"{f.arm}: output {o.name!r}: " + (
                f"relative L1 {fmt.fraction_pct(o.relative_l1, 3)} %, cosine "
                f"{fmt.cosine(o.cosine_similarity)}, max error {fmt.sci(o.max_abs_error)} "
                f"(the worst of {rounds})" if o.rounds else (o.problem or "not compared")))
        if f.replay_note:
            lines.append(f"{f.arm}: {f.replay_note}")
    lines += telemetry_lines(s)
    if s.replay is not None and s.replay.problem:
        lines.append(f"replay: {s.replay.problem}")
    for p in s.processes:
        if p.status == "failed":
            lines.append(f"{p.arm} failed in round {p.round + 1}; its last lines:")
            lines += [f"  {x}" for x in (p.error or [])]
    lines.append(f"status: {report.status}" + (f" ({'; '.join(report.status_detail)})"
                                               if report.status_detail else ""))
    return [one_line(x) for x in lines]


def telemetry_lines(s: Swap) -> list[str]:
    """The GPU's clocks, temperature and power in each round (its processes' NVML summaries
    merged: core/telemetry), where a process recorded any."""
    out = []
    for r in sorted({p.round for p in s.processes}):
        blocks = [p.result.telemetry for p in s.processes
                  if p.round == r and p.result is not None and p.result.telemetry]
        if not blocks:
            continue
        t = merge_blocks(blocks)
        if not t.get("available"):
            out.append(f"round {r + 1}: no telemetry ({t.get('reason')})")
            continue
        parts = [f"{what} {fmt.min_mean_max(t.get(key), unit)}"
                 for key, what, unit in (("sm_clock_mhz", "SM clock", "MHz"),
                                         ("temperature_c", "temperature", "°C"),
                                         ("power_w", "power", "W")) if t.get(key)]
        reasons = t.get("throttle_reasons") or []
        out.append(f"round {r + 1}: " + ", ".join(parts)
                   + (f"; clock events: {', '.join(reasons)}" if reasons else ""))
    return out


def to_markdown(report: Report) -> str:
    """The swap for a pull request: the program, the table and the notes."""
    s = report.swap
    assert s is not None
    lines = [f"## {title(s)}", "", f"- program: `{' '.join(s.argv[1:])}`",
             f"- {s.rounds_asked} rounds asked, one process per arm a round (ABBA); status "
             f"{report.status or 'n/a'}", "",
             "| " + " | ".join(name for name, _ in COLUMNS) + " |",
             "|" + "|".join("---:" if numeric else "---" for _, numeric in COLUMNS) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
              for row in rows(s)]
    lines += [""] + [f"- {line}" for line in notes(report)]
    return "\n".join(lines) + "\n"
