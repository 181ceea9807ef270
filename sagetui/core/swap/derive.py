"""Every figure of a swap from its processes' own numbers: the step each process timed (the
processes mode) or every step of every arm (interleaved: the warm-up rounds left out), the
arms' medians, each variant's paired verdict against the baseline arm, the attention's share of
the step, the calls swapped and passed through, the GPU's clocks per arm and the rule that
makes a comparison at unequal clocks INCONCLUSIVE, the wrapper's own cost, the outputs' change
against the reference arm and the replay's prediction beside the measured change. The report
is built with these functions and `sagetui check` calls them again (check.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sagetui.core import accuracy
from sagetui.core import format as fmt
from sagetui.core.blocks.base import VerdictRecord
from sagetui.core.blocks.swap import (
    UNCHANGED,
    UNWRAPPED,
    ArmFigures,
    OutputChange,
    ProcessResult,
    Replay,
    StepTime,
    SwapProcess,
    Timed,
)
from sagetui.core.derived import change_of_speedup, change_percent
from sagetui.core.statistics.summary import median
from sagetui.core.statistics.verdict import paired_speedup
from sagetui.core.swap.schedule import (
    ATTENTION_ROUND,
    ATTENTION_ROUNDS,
    MIN_MEASURED,
    STEP_ROUND,
    WARMUP_ROUND,
    steps_needed,
)

FIRST_TO_LAST = "first to last attention call"
STEP = "step"
EVERY_ARM = "every arm"  # the interleaved process's arm
CPU_TIME = "cpu time"
# clocks: two arms' medians further apart than this share of the sustained clock, or than
# CLOCK_NOISE x the larger median absolute deviation of their readings, differ; a clock this
# far below the sustained one is below it
CLOCK_TOLERANCE = 0.03
CLOCK_NOISE = 3.0


def step_of(results: Sequence[ProcessResult]) -> str:
    """The step timed: the interleaved process's step region; else the region `step` where a
    process marked one, else the first region any marked, else the first attention call to the
    last."""
    for r in results:
        if r.step_region is not None:
            return r.step_region
    names = [n for r in results for n in r.regions]
    if STEP in names:
        return STEP
    return names[0] if names else FIRST_TO_LAST


def clock_of(results: Sequence[ProcessResult]) -> str:
    """CUDA events where a process ran on CUDA; else the interleaved process's CPU time, or
    the processes' host time."""
    if any(r.clock == "cuda events" for r in results):
        return "cuda events"
    return CPU_TIME if any(r.step_region is not None for r in results) else "host"


def seconds(result: ProcessResult, step: str, clock: str) -> float | None:
    """The process's mean step on the swap's clock: a region's time over its occurrences."""
    timed = result.first_to_last if step == FIRST_TO_LAST else result.regions.get(step)
    if timed is None or timed.count == 0:
        return None
    value = timed.gpu_s if clock == "cuda events" else timed.host_s
    return value / timed.count if value else None


def attention_seconds(result: ProcessResult, step: str, clock: str) -> float | None:
    """The attention time of one step: the calls made inside the step's region over its
    occurrences, or every call from the first to the last."""
    per = 1
    t = result.attention
    if step != FIRST_TO_LAST:
        region = result.regions.get(step)
        if region is None or not region.count:
            return None
        t, per = result.region_attention.get(step, t), region.count
    value = t.gpu_s if clock == "cuda events" else t.host_s
    return value / per if t.count and value else None


def measured_steps(processes: Sequence[SwapProcess], arm: str | None = None,
                   kind: str | None = None) -> list[StepTime]:
    """The interleaved process's steps out of the warm-up (of one arm, or every arm's; of one
    kind of round: attention or step, or both)."""
    return [t for p in processes if p.result is not None for t in p.result.steps
            if t.kind != WARMUP_ROUND and (kind is None or t.kind == kind)
            and (arm is None or t.arm == arm)]


def step_seconds(t: StepTime, clock: str, attention: bool = False) -> float | None:
    """A step's time, or its attention calls', on the swap's clock."""
    if attention:
        a = t.attention
        value = a.gpu_s if clock == "cuda events" else (
            a.cpu_s if clock == CPU_TIME and a.cpu_s is not None else a.host_s)
        return value if a.count else None
    if clock == "cuda events" and t.gpu_s is not None:
        return t.gpu_s
    return t.cpu_s if clock == CPU_TIME and t.cpu_s is not None else t.host_s


def _per_round(processes: Sequence[SwapProcess], arm: str, step: str, clock: str,
               attention: bool = False) -> dict[int, float]:
    out: dict[int, float] = {}
    if interleaved(processes):  # the steps from the step rounds, the attention's from its
        for t in measured_steps(processes, arm,
                                attention_kind(clock) if attention else STEP_ROUND):
            x = step_seconds(t, clock, attention)
            if x is not None:
                out[t.round] = x
        return out
    for p in processes:
        if p.arm != arm or p.status != "ok" or p.result is None:
            continue
        x = (attention_seconds(p.result, step, clock) if attention
             else seconds(p.result, step, clock))
        if x is not None:
            out[p.round] = x
    return out


def _paired(base: dict[int, float], mine: dict[int, float]) -> tuple[list[float], list[float]]:
    rounds = sorted(set(base) & set(mine))
    return [base[r] for r in rounds], [mine[r] for r in rounds]


def _median(values: Sequence[float]) -> float | None:
    return median(values) if values else None


def attention_kind(clock: str) -> str:
    """The rounds whose steps give the attention's figures: on a CPU the step rounds, whose
    calls carry their CPU time (the same steps as the step's change); on CUDA the attention
    rounds, whose calls carry CUDA events (too costly in the steps compared)."""
    return STEP_ROUND if clock == CPU_TIME else ATTENTION_ROUND


def interleaved(processes: Sequence[SwapProcess]) -> bool:
    return any(p.arm == EVERY_ARM for p in processes)


def clock_readings(processes: Sequence[SwapProcess], arm: str | None = None) -> list[float]:
    """The SM clock read as each step of `arm` (or of every arm) ended: its measured steps
    (interleaved), or its processes' steps."""
    if interleaved(processes):
        return [t.sm_clock_mhz for t in measured_steps(processes, arm)
                if t.sm_clock_mhz is not None]
    return [c for p in processes if p.result is not None and p.status == "ok"
            and (arm is None or p.arm == arm) for c in p.result.step_clocks_mhz]


def sustained_clock(processes: Sequence[SwapProcess]) -> float | None:
    """The swap's sustained SM clock: the median of every arm's readings."""
    return _median(clock_readings(processes))


def _mad(values: Sequence[float]) -> float:
    m = median(values)
    return median([abs(v - m) for v in values])


def clock_problem(processes: Sequence[SwapProcess], arm: str, baseline: str) -> str | None:
    """Why the arm's comparison with the baseline is not at equal clocks, or None (also where
    there are no readings: a CPU, no NVML)."""
    sustained = sustained_clock(processes)
    mine, base = clock_readings(processes, arm), clock_readings(processes, baseline)
    if sustained is None or not mine or not base:
        return None
    a, b = median(mine), median(base)
    tol = max(CLOCK_TOLERANCE * sustained, CLOCK_NOISE * max(_mad(mine), _mad(base)))
    if abs(a - b) > tol:
        return f"the arms ran at unequal clocks: {arm} {a:.0f} MHz, {baseline} {b:.0f} MHz " \
               f"(apart by more than {tol:.0f} MHz)"
    low = [(n, x) for n, x in ((arm, a), (baseline, b)) if x < sustained - tol]
    if low:
        n, x = low[0]
        return f"{n} ran below the sustained clock: {x:.0f} MHz against {sustained:.0f} MHz " \
               "(cold clocks: bring the GPU to its clocks first, or run more warm-up)"
    return None


def output_changes(processes: Sequence[SwapProcess], arm: str) -> list[OutputChange]:
    """Each named output of `arm` against the unchanged arm's, over the rounds that compared
    them (either process of the pair compared them: whichever ran second): the worst relative
    L1, cosine and max error."""
    per_name: dict[str, list[dict[str, float]]] = {}
    problems: dict[str, str] = {}
    for p in processes:
        if p.result is None:
            continue
        for c in p.result.compared:
            mine = c.arm if p.arm in (UNCHANGED, EVERY_ARM) else p.arm
            if mine != arm:
                continue
            for name, s in c.outputs.items():
                if s.sums is None or s.max_abs is None:
                    problems.setdefault(name, s.problem or "not compared")
                    per_name.setdefault(name, [])
                    continue
                per_name.setdefault(name, []).append(
                    accuracy.from_sums(s.sums, s.max_abs, s.elements))
    out = []
    for name, metrics in per_name.items():
        if not metrics:
            out.append(OutputChange(name=name, rounds=0, problem=problems.get(name)))
            continue
        out.append(OutputChange(
            name=name, rounds=len(metrics),
            relative_l1=_worst([m["relative_l1"] for m in metrics], max),
            cosine_similarity=_worst([m["cosine_similarity"] for m in metrics], min),
            max_abs_error=_worst([m["max_abs_error"] for m in metrics], max),
            problem=problems.get(name)))
    return out


def _worst(values: list[float], pick: Callable[[list[float]], float]) -> float | None:
    finite = [v for v in values if v == v]  # NaN: no figure
    return pick(finite) if finite else None


def replay_note(predicted: float | None, measured: float | None) -> str | None:
    """The replay's predicted change of the attention time beside the one measured in the
    model, and what the difference is."""
    if predicted is None or measured is None:
        return None
    said = (f"replay predicted {fmt.percent(predicted, 0, sign=True)}, in the model "
            f"{fmt.percent(measured, 0, sign=True)}")
    gap = measured - predicted
    if abs(gap) <= max(5.0, 0.1 * abs(predicted)):
        return f"{said}: the replay holds"
    if gap > 0:
        return f"{said}: host time the replay cannot see (the wrapper's, or a host-bound call)"
    return f"{said}: the model gains more than the replay predicts (caches, overlap)"


def arm_figures(processes: Sequence[SwapProcess], arms: Sequence[str], baseline: str,
                threshold_percent: float, replay: Replay | None = None,
                outputs_from: Sequence[SwapProcess] = ()) -> list[ArmFigures]:
    """Per arm: its medians, and against `baseline` (paired by round) its step's verdict and
    change, its attention's change, its outputs' change against the unchanged arm's and the
    replay's prediction."""
    results = [p.result for p in processes if p.result is not None]
    step, clock = step_of(results), clock_of(results)
    base_step = _per_round(processes, baseline, step, clock)
    base_att = _per_round(processes, baseline, step, clock, attention=True)
    totals = replay.totals_s if replay is not None else {}
    reference = reference_arm(arms, baseline) if interleaved(processes) else UNCHANGED
    out = []
    for arm in arms:
        mine = [p for p in processes if p.arm == arm]
        ok = [p for p in mine if p.status == "ok" and p.result is not None]
        steps_by_round = _per_round(processes, arm, step, clock)
        atts = _per_round(processes, arm, step, clock, attention=True)
        f = ArmFigures(arm=arm, status="failed" if any(p.status == "failed" for p in mine)
                       else "ok", rounds=len(ok))
        f.step_s = _median(list(steps_by_round.values()))
        f.attention_s = _median(list(atts.values()))
        if interleaved(processes):  # each attention round's step holds its own calls' time
            shares = []
            for t in measured_steps(processes, arm, attention_kind(clock)):
                a, whole = step_seconds(t, clock, True), step_seconds(t, clock)
                if a is not None and whole:
                    shares.append(a / whole * 100.0)
            f.attention_share_percent = _median(shares)
        elif f.step_s and f.attention_s is not None:
            f.attention_share_percent = f.attention_s / f.step_s * 100.0
        per_call = [(t.gpu_s / t.count if t.gpu_s is not None else None, t.host_s / t.count)
                    for t in calls_of(processes, ok, arm, step) if t.count]
        f.call_gpu_s = _median([g for g, _ in per_call if g is not None])
        f.call_host_s = _median([h for _, h in per_call])
        if interleaved(processes):
            steps = measured_steps(processes, arm, STEP_ROUND)
            f.rounds = len(steps_by_round)
            calls = next((p.result.arm_calls.get(arm) for p in processes if p.result), None)
            if steps:
                f.swapped = steps[-1].swapped.count
                f.passed = steps[-1].attention.count - steps[-1].swapped.count
            if calls is not None:
                f.passed_reasons = dict(calls.passed)
            if any(p.result and arm in p.result.failed_arms for p in processes):
                f.status = "failed"
        elif ok:
            last = ok[-1].result
            assert last is not None
            f.swapped = last.swapped.count
            f.passed = sum(last.passed.values())
            f.passed_reasons = dict(last.passed)
        readings = clock_readings(processes, arm)
        f.sm_clock_mhz = _median(readings)
        f.power_w = _median([t.power_w for t in measured_steps(processes, arm)
                             if t.power_w is not None])
        if arm not in (baseline, UNWRAPPED):  # the unwrapped arm is the wrapper's yardstick
            b, v = _paired(base_step, steps_by_round)
            if b:
                verdict = paired_speedup(b, v, threshold_percent=threshold_percent)
                f.step = VerdictRecord(**verdict.to_dict())
                f.clock_problem = clock_problem(processes, arm, baseline)
                if f.clock_problem is None:
                    f.step_change_percent = change_of_speedup(f.step.estimate_percent)
                    f.step_change_low_percent = change_of_speedup(f.step.ci_high_percent)
                    f.step_change_high_percent = change_of_speedup(f.step.ci_low_percent)
                else:  # the verdict's figures stay in it, to be seen; the claim goes
                    f.step = f.step.model_copy(update={"state": "INCONCLUSIVE"})
                f.step_added_s = _median([y - x for x, y in zip(b, v, strict=True)])
            ba, va = _paired(base_att, atts)
            if ba:
                f.attention_change_percent = change_percent(_median(va), _median(ba))
                f.attention_added_s = _median([y - x for x, y in zip(ba, va, strict=True)])
            if arm in totals and baseline in totals:
                f.replay_change_percent = change_percent(totals[arm], totals[baseline])
                f.replay_note = replay_note(f.replay_change_percent,
                                            f.attention_change_percent)
        if arm == UNCHANGED and UNWRAPPED in arms:
            wrapper_cost(f, processes, step, clock, threshold_percent)
        if arm not in (reference, UNWRAPPED):
            f.outputs = output_changes(outputs_from or processes, arm)
        out.append(f)
    return out


def wrapper_cost(f: ArmFigures, processes: Sequence[SwapProcess], step: str, clock: str,
                 threshold_percent: float) -> None:
    """The unchanged arm's step against the unwrapped arm's, paired by round: the wrapper's
    cost in percent of the step, and per call (the median paired difference over the calls
    of a step)."""
    b, v = _paired(_per_round(processes, UNWRAPPED, step, clock),
                   _per_round(processes, UNCHANGED, step, clock))
    if not b:
        return
    verdict = paired_speedup(b, v, threshold_percent=threshold_percent)
    f.wrapper_change_percent = change_of_speedup(verdict.estimate_percent)
    f.wrapper_change_low_percent = change_of_speedup(verdict.ci_high_percent)
    f.wrapper_change_high_percent = change_of_speedup(verdict.ci_low_percent)
    calls = [t.attention.count for t in measured_steps(processes, UNCHANGED, STEP_ROUND)]
    per_step = _median(calls) if calls else None
    added = _median([y - x for x, y in zip(b, v, strict=True)])
    if per_step and added is not None:
        f.wrapper_per_call_s = added / per_step


def reference_arm(arms: Sequence[str], baseline: str) -> str:
    """The arm whose outputs the others are compared with: the unchanged, else the baseline."""
    return UNCHANGED if UNCHANGED in arms else baseline


def calls_of(processes: Sequence[SwapProcess], ok: Sequence[SwapProcess], arm: str,
             step: str) -> list[Timed]:
    """The calls an arm's figures per call are of: those it swapped (the unchanged and the
    unwrapped arm: every call), out of the warm-up: its measured steps' (interleaved), or the
    calls inside its processes' step region (those before it warm up)."""
    every = arm in (UNCHANGED, UNWRAPPED)
    if interleaved(processes):
        return [t.attention if every else t.swapped
                for t in measured_steps(processes, arm, ATTENTION_ROUND)]
    out = []
    for p in ok:
        r = p.result
        assert r is not None
        if step == FIRST_TO_LAST or step not in r.region_swapped:
            # no step region, or a report from before the warm-up was cut: every call
            out.append(r.attention if every else r.swapped)
        else:
            out.append(r.region_attention[step] if every else r.region_swapped[step])
    return out


def status_of(processes: Sequence[SwapProcess], arms: Sequence[str], rounds_asked: int,
              interrupted: bool, stopped_by: str | None = None,
              warmup: int = 2) -> tuple[str, list[str]]:
    """complete, partial or failed, and why it is not complete (core/run/status's words)."""
    if interleaved(processes):
        return _interleaved_status(processes[0], arms, stopped_by, warmup)
    why = []
    done = {p.round for p in processes}
    failed = sorted({p.arm for p in processes if p.status == "failed"})
    for arm in failed:
        first = next(p for p in processes if p.arm == arm and p.status == "failed")
        why.append(f"arm {arm} failed in round {first.round + 1}: "
                   + (first.error[-1] if first.error else "no output"))
    if interrupted or len(done) < rounds_asked:
        by = f" by {stopped_by}" if stopped_by else ""
        why.append(f"stopped{by} after {len(done)} of {rounds_asked} rounds")
    else:  # every round ran to its end: each arm ran in each of them
        for arm in arms:
            ran = len({p.round for p in processes if p.arm == arm})
            if ran < len(done) and arm not in failed:
                why.append(f"arm {arm} ran in {ran} of {len(done)} rounds")
    ok_arms = {p.arm for p in processes if p.status == "ok"}
    if not ok_arms or not any(a in ok_arms for a in arms):
        return "failed", why or ["no process ran to its end"]
    if not any(p.result.attention.count for p in processes if p.result is not None):
        return "failed", [*why, NO_ATTENTION]
    return ("partial" if why else "complete"), why


NO_ATTENTION = "the program made no attention call (torch's scaled_dot_product_attention or " \
    "sageattention's): nothing to swap"


def warmup_rounds(result: ProcessResult, warmup: int) -> int:
    """The interleaved process's warm-up rounds: those its steps say, else the least asked."""
    rounds = [t.round for t in result.steps if t.kind == WARMUP_ROUND]
    measured = [t.round for t in result.steps if t.kind != WARMUP_ROUND]
    return (max(rounds) + 1) if rounds and measured else max(warmup, max(rounds, default=-1) + 1)


def _interleaved_status(p: SwapProcess, arms: Sequence[str], stopped_by: str | None,
                        warmup: int) -> tuple[str, list[str]]:
    r = p.result
    if r is None:
        return "failed", [f"the program failed: {(p.error or ['no output'])[-1]}"]
    if r.step_region is None:
        return "failed", ["the program marked no step: put one step of its loop in `with "
                          "sagetui.region(\"step\"):`, or run it with --processes"]
    if not any(t.attention.count for t in r.steps):
        return "failed", [NO_ATTENTION]
    why = [f"arm {arm} failed: {error}" for arm, error in r.failed_arms.items()]
    if p.status == "failed":
        why.append(f"the program failed: {(p.error or ['no output'])[-1]}")
    measured = len({t.round for t in r.steps if t.kind == STEP_ROUND})
    for arm in arms:  # each arm took its step in each measured round
        ran = len({t.round for t in r.steps if t.kind == STEP_ROUND and t.arm == arm})
        if ran < measured and arm not in r.failed_arms and not stopped_by:
            why.append(f"arm {arm} ran in {ran} of {measured} measured rounds")
    if stopped_by:
        why.append(f"stopped by {stopped_by} after {measured} measured rounds")
    if measured < MIN_MEASURED:
        w = warmup_rounds(r, warmup)
        need = steps_needed(len(arms), w)
        return "failed", [*why, f"the program ran its step {r.program_steps} times: {len(arms)} "
                          f"arms need {need} at least ({w} warm-up, {ATTENTION_ROUNDS} attention "
                          f"and {MIN_MEASURED} measured rounds of {len(arms)} steps); make its "
                          "loop longer"]
    return ("partial" if why else "complete"), why
