"""Every figure of a swap from its processes' own numbers: the step each process timed, the
arms' medians, each variant's paired verdict against the baseline arm, the attention's share of
the step, the calls swapped and passed through, the outputs' change against the unchanged arm
and the replay's prediction beside the measured change. The report is built with these
functions and `sagetui check` calls them again (check.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sagetui.core import accuracy
from sagetui.core.blocks.base import Verdict
from sagetui.core.blocks.swap import (
    UNCHANGED,
    ArmFigures,
    OutputChange,
    ProcessResult,
    Replay,
    SwapProcess,
    Timed,
)
from sagetui.core.derived import change_of_speedup, change_percent
from sagetui.core.statistics.summary import median
from sagetui.core.statistics.verdict import paired_speedup

FIRST_TO_LAST = "first to last attention call"
STEP = "step"


def step_of(results: Sequence[ProcessResult]) -> str:
    """The step timed: the region `step` where a process marked one, else the first region any
    marked, else the first attention call to the last."""
    names = [n for r in results for n in r.regions]
    if STEP in names:
        return STEP
    return names[0] if names else FIRST_TO_LAST


def clock_of(results: Sequence[ProcessResult]) -> str:
    return "cuda events" if any(r.clock == "cuda events" for r in results) else "host"


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


def _per_round(processes: Sequence[SwapProcess], arm: str, step: str, clock: str,
               attention: bool = False) -> dict[int, float]:
    out: dict[int, float] = {}
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
            mine = c.arm if p.arm == UNCHANGED else p.arm
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
    said = f"replay predicted {predicted:+.0f} %, in the model {measured:+.0f} %"
    gap = measured - predicted
    if abs(gap) <= max(5.0, 0.1 * abs(predicted)):
        return f"{said}: the replay holds"
    if gap > 0:
        return f"{said}: host time the replay cannot see (the wrapper's, or a host-bound call)"
    return f"{said}: the model gains more than the replay predicts (caches, overlap)"


def arm_figures(processes: Sequence[SwapProcess], arms: Sequence[str], baseline: str,
                threshold_percent: float, replay: Replay | None = None) -> list[ArmFigures]:
    """Per arm: its medians, and against `baseline` (paired by round) its step's verdict and
    change, its attention's change, its outputs' change against the unchanged arm's and the
    replay's prediction."""
    results = [p.result for p in processes if p.result is not None]
    step, clock = step_of(results), clock_of(results)
    base_step = _per_round(processes, baseline, step, clock)
    base_att = _per_round(processes, baseline, step, clock, attention=True)
    totals = replay.totals_s if replay is not None else {}
    out = []
    for arm in arms:
        mine = [p for p in processes if p.arm == arm]
        ok = [p for p in mine if p.status == "ok" and p.result is not None]
        steps = _per_round(processes, arm, step, clock)
        atts = _per_round(processes, arm, step, clock, attention=True)
        f = ArmFigures(arm=arm, status="failed" if any(p.status == "failed" for p in mine)
                       else "ok", rounds=len(ok))
        f.step_s = _median(list(steps.values()))
        f.attention_s = _median(list(atts.values()))
        if f.step_s and f.attention_s is not None:
            f.attention_share_percent = f.attention_s / f.step_s * 100.0
        per_call = [(t.gpu_s / t.count if t.gpu_s is not None else None, t.host_s / t.count)
                    for t in (_calls_of(p.result, arm) for p in ok if p.result) if t.count]
        f.call_gpu_s = _median([g for g, _ in per_call if g is not None])
        f.call_host_s = _median([h for _, h in per_call])
        if ok:
            last = ok[-1].result
            assert last is not None
            f.swapped = last.swapped.count
            f.passed = sum(last.passed.values())
            f.passed_reasons = dict(last.passed)
        if arm != baseline:
            b, v = _paired(base_step, steps)
            if b:
                verdict = paired_speedup(b, v, threshold_percent=threshold_percent)
                f.step = Verdict(**verdict.to_dict())
                f.step_change_percent = change_of_speedup(f.step.estimate_percent)
                f.step_change_low_percent = change_of_speedup(f.step.ci_high_percent)
                f.step_change_high_percent = change_of_speedup(f.step.ci_low_percent)
                f.step_added_s = _median([y - x for x, y in zip(b, v, strict=True)])
            ba, va = _paired(base_att, atts)
            if ba:
                f.attention_change_percent = change_percent(_median(va), _median(ba))
                f.attention_added_s = _median([y - x for x, y in zip(ba, va, strict=True)])
            if arm in totals and baseline in totals:
                f.replay_change_percent = change_percent(totals[arm], totals[baseline])
                f.replay_note = replay_note(f.replay_change_percent,
                                            f.attention_change_percent)
        if arm != UNCHANGED:
            f.outputs = output_changes(processes, arm)
        out.append(f)
    return out


def _calls_of(result: ProcessResult, arm: str) -> Timed:
    """The calls an arm's figures per call are of: those it swapped, or (the unchanged arm)
    every call."""
    return result.attention if arm == UNCHANGED else result.swapped


def status_of(processes: Sequence[SwapProcess], arms: Sequence[str], rounds_asked: int,
              interrupted: bool) -> tuple[str, list[str]]:
    """complete, partial or failed, and why it is not complete (core/run/status's words)."""
    why = []
    done = {p.round for p in processes}
    failed = sorted({p.arm for p in processes if p.status == "failed"})
    for arm in failed:
        first = next(p for p in processes if p.arm == arm and p.status == "failed")
        why.append(f"arm {arm} failed in round {first.round + 1}: "
                   + (first.error[-1] if first.error else "no output"))
    if interrupted or len(done) < rounds_asked:
        why.append(f"stopped after {len(done)} of {rounds_asked} rounds")
    ok_arms = {p.arm for p in processes if p.status == "ok"}
    if not ok_arms or not any(a in ok_arms for a in arms):
        return "failed", why or ["no process ran to its end"]
    return ("partial" if why else "complete"), why
