"""A swap report's cells and notes, written once for `sagetui swap`'s table, the console's
Swap panel and `sagetui compare` (core/format.py's formatters)."""

from __future__ import annotations

from sagetui.core import format as fmt
from sagetui.core.blocks.swap import UNCHANGED, UNWRAPPED, ArmFigures, Swap
from sagetui.core.derived import speedup_of_change
from sagetui.core.report.io import one_line
from sagetui.core.report.model import Report
from sagetui.core.swap import derive
from sagetui.core.telemetry import merge_blocks

# + = faster, as run, compare, sweep and workload say it: the step's is its verdict's paired
# speedup, the attention's the speedup its medians' change means
COLUMNS = [("arm", False), ("rounds", True), ("step ms", True), ("step faster %", True),
           ("95% CI", True), ("verdict", False), ("attn ms", True), ("attn share %", True),
           ("attn faster %", True), ("swapped", True), ("passed", True),
           ("output rel L1 %", True), ("cosine", True)]
SIGN_NOTE = "faster %: + = faster than the baseline arm (its step / this step - 1)"


def title(s: Swap) -> str:
    return one_line(f"sagetui swap · step: {s.step} ({s.clock}) · baseline {s.baseline}")


def verdict_word(f: ArmFigures, baseline: str) -> str:
    if f.step is not None:
        return f.step.state
    return "baseline" if f.arm == baseline else fmt.DASH


def step_faster(f: ArmFigures) -> tuple[float | None, float | None, float | None]:
    """The step's speedup against the baseline arm and its interval (+ = faster): its
    verdict's, where the verdict holds (not where the clocks made it INCONCLUSIVE)."""
    if f.step is None or f.clock_problem is not None:
        return None, None, None
    return f.step.estimate_percent, f.step.ci_low_percent, f.step.ci_high_percent


def rows(s: Swap) -> list[list[str]]:
    out = []
    for f in s.figures:
        o = f.outputs[0] if f.outputs else None
        faster, low, high = step_faster(f)
        out.append([one_line(f.arm) + (" (failed)" if f.status == "failed" else ""),
                     str(f.rounds), fmt.ms(f.step_s), fmt.pct(faster, 1), fmt.ci(low, high, 1),
                     verdict_word(f, s.baseline), fmt.ms(f.attention_s),
                     fmt.pct(f.attention_share_percent, 1, sign=False),
                     fmt.pct(speedup_of_change(f.attention_change_percent), 1),
                     fmt.count(f.swapped),
                     fmt.count(f.passed), fmt.fraction_pct(o.relative_l1 if o else None, 3),
                     fmt.cosine(o.cosine_similarity if o else None)])
    return out


def mode_lines(s: Swap) -> list[str]:
    """How the steps were measured: the interleaved process's warm-up, steps and end, whether
    its step is repeatable, the calls in forked processes."""
    out = []
    for p in s.processes:
        r = p.result
        if r is None:
            continue
        if p.arm == derive.EVERY_ARM:
            rounds = {kind: len({t.round for t in r.steps if t.kind == kind})
                      for kind in ("warmup", "attention", "step")}
            out.append(f"interleaved in one process: {r.program_steps} steps of "
                       f"{r.step_region!r}; {rounds['warmup']} warm-up rounds left out (each "
                       f"arm's first calls and the clocks' rise), {rounds['attention']} rounds "
                       f"timing each attention call, {rounds['step']} rounds of steps compared; "
                       f"{r.ended}")
            if r.repeatable is False:
                out.append(f"the step is not repeatable ({r.repeatable_note}): the outputs "
                           "are compared from a process per arm")
            elif r.repeatable:
                out.append("the step is repeatable: the reference arm's steps gave equal "
                           "outputs, so each arm's output is compared with its output of the "
                           "same inputs")
        if r.warmed_clocks and p.round == 0:
            out.append(f"{p.arm}: brought to its clocks before its first step: "
                       f"{r.warmed_clocks}")
        if r.forked_calls:
            out.append(f"{p.arm}: {r.forked_calls} attention calls in processes the program "
                       "forked (swapped there too; not timed)")
    return out


def notes(report: Report) -> list[str]:
    """What the table cannot hold: how the steps were measured, why calls were passed through,
    the clocks, the wrapper's cost, every output's change, the replay's prediction, the failed
    arms' last lines, the status."""
    s = report.swap
    assert s is not None
    lines = [SIGN_NOTE, *mode_lines(s)]
    if s.sustained_clock_mhz is not None:
        lines.append(f"sustained SM clock {s.sustained_clock_mhz:.0f} MHz (the median of every "
                     "arm's steps)")
    for f in s.figures:
        if f.sm_clock_mhz is not None:
            lines.append(f"{f.arm}: SM clock {f.sm_clock_mhz:.0f} MHz"
                         + (f", power {f.power_w:.0f} W" if f.power_w is not None else "")
                         + " (medians over its steps)")
        if f.clock_problem:
            lines.append(f"{f.arm}: INCONCLUSIVE: {f.clock_problem}")
        if f.wrapper_change_percent is not None:
            per_call = "" if f.wrapper_per_call_s is None else \
                f", {fmt.ms(f.wrapper_per_call_s)} ms per call"
            ci = fmt.ci(f.wrapper_change_low_percent, f.wrapper_change_high_percent, 1)
            lines.append(f"{f.arm}: the wrapper's cost {fmt.pct(f.wrapper_change_percent, 1)} "
                         f"% of the step {ci}{per_call} (against the unwrapped arm)")
        if f.call_host_s is not None:
            what = "every call" if f.arm in (UNCHANGED, UNWRAPPED) else "a swapped call"
            gpu = f.call_gpu_s
            lines.append(f"{f.arm}: {what} in the model: "
                         + (f"GPU {fmt.ms(gpu)} ms, " if gpu is not None else "")
                         + f"host {fmt.ms(f.call_host_s)} ms, out of the warm-up" + (
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


def how_run(s: Swap) -> str:
    """How the arms were run, in words: every arm in one process, or a process each."""
    if s.mode == "interleaved":
        asked = f"{s.interleave.steps} steps per arm asked, " if s.interleave else ""
        return f"{asked}every arm in one process, switched step by step"
    return f"{s.rounds_asked} rounds asked, one process per arm a round (ABBA)"


def to_markdown(report: Report) -> str:
    """The swap for a pull request: the program, the table and the notes."""
    s = report.swap
    assert s is not None
    lines = [f"## {title(s)}", "", f"- program: `{' '.join(s.argv[1:])}`",
             f"- {how_run(s)}; status {report.status or 'n/a'}", "",
             "| " + " | ".join(name for name, _ in COLUMNS) + " |",
             "|" + "|".join("---:" if numeric else "---" for _, numeric in COLUMNS) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
              for row in rows(s)]
    lines += [""] + [f"- {line}" for line in notes(report)]
    return "\n".join(lines) + "\n"
