"""The interleaved swap's parts, in this process: the schedule (a Williams square's rounds, the
warm-up's end, the kinds of round, the budget), the swapper's plans for its lean calls, the
outputs made comparable, and the clocks' rule."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import sagetui
from sagetui.core.blocks.swap import (
    UNCHANGED,
    UNWRAPPED,
    ArmSettings,
    Interleave,
    ProcessResult,
    ProcessSettings,
    StepTime,
    SwapProcess,
)
from sagetui.core.config import VariantSpec
from sagetui.core.swap import derive
from sagetui.core.swap.schedule import UNTIL_CI_MIN, Schedule, compared_pairs, williams_rows
from sagetui.recorder.install import Installed
from sagetui.swap import api
from sagetui.swap.outputs import compare, flatten


def test_williams_rows_balance_places_and_neighbours_and_never_repeat_an_arm() -> None:
    for n in range(3, 9):
        rows = williams_rows(n)
        assert len(rows) == (n if n % 2 == 0 else 2 * n)
        for place in range(n):  # each arm in each place equally often
            assert sorted(r[place] for r in rows) == sorted(list(range(n)) * (len(rows) // n))
        after: dict[tuple[int, int], int] = {}
        for r in rows:
            for a, b in zip(r, r[1:], strict=False):
                after[(a, b)] = after.get((a, b), 0) + 1
        assert len(after) == n * (n - 1) and len(set(after.values())) == 1
        steps = [x for r in rows * 2 for x in r]  # the cycle goes round: its ends too
        assert all(a != b for a, b in zip(steps, steps[1:], strict=False))
    assert williams_rows(2) == [[0, 1]]  # AB AB: each always after the other


def test_the_schedule_warms_up_until_settled_then_attention_then_step_rounds() -> None:
    now = [0.0]
    s = Schedule(["a", "b", "c"], warmup=2, max_warmup=10, steps=3, max_seconds=60,
                 clock=lambda: now[0])
    times = {"a": [9.0, 1.05, 1.0, 1.0], "b": [5.0, 1.0, 1.0, 1.0], "c": [1.0] * 4}
    seen = []
    while (begun := s.begin()) is not None:
        r, arm, kind = begun
        seen.append((r, arm, kind))
        t = times[arm][r] if r < 4 else 1.0
        s.end(r, arm, t)
    kinds = [k for _, _, k in seen]
    # round 0: first calls; round 1: a's two steps 9 and 1.05 apart; round 2: each arm's last
    # two within 10 % of each other
    assert kinds == ["warmup"] * 9 + ["attention"] * 6 + ["step"] * 9
    assert s.ended == "each arm has 3 measured steps (--steps 3)"
    assert [arm for _, arm, _ in seen[:6]] == ["a", "b", "c", "b", "c", "a"]
    late = Schedule(["a", "b"], steps=100, max_seconds=5, clock=lambda: now[0])
    while (begun := late.begin()) is not None:
        now[0] += 1.0
        late.end(begun[0], begun[1], 1.0)
    assert late.ended is not None and late.ended.startswith("--max-seconds 5 spent after")


def test_until_ci_ends_the_measurement_once_every_pair_is_narrow_and_not_before() -> None:
    """--until-ci: from UNTIL_CI_MIN step rounds on, once each arm's interval against the
    baseline and the wrapper's (unchanged against unwrapped) is narrower than asked."""
    def run(noise: float, until: float) -> Schedule:
        s = Schedule([UNCHANGED, "v", UNWRAPPED], warmup=1, max_warmup=1, steps=200,
                     max_seconds=1e9, until_ci=until,
                     pairs=compared_pairs([UNCHANGED, "v", UNWRAPPED], UNCHANGED))
        k = 0
        while (begun := s.begin()) is not None:
            r, arm, _ = begun
            k += 1  # a deterministic wobble of `noise`, alternating in sign
            s.end(r, arm, (2.0 if arm == "v" else 1.0) * (1 + noise * (-1) ** (k * 7 // 3)))
        return s

    assert compared_pairs([UNCHANGED, "v", UNWRAPPED], UNCHANGED) == [
        (UNCHANGED, "v"), (UNWRAPPED, UNCHANGED)]
    quiet = run(0.001, 2.0)
    assert quiet.ended == (f"every interval narrower than 2 points after {UNTIL_CI_MIN} step "
                           "rounds (--until-ci)")
    loud = run(0.2, 2.0)  # steps 20 % apart: never that narrow, so --steps ends it
    assert loud.ended == "each arm has 200 measured steps (--steps 200)"


def test_a_lean_call_is_planned_once_per_arm_and_shape_for_the_whole_run(tmp_path) -> None:
    from sagetui.swap.interleaved import InterleavedSwapper, SwapDone

    il = Interleave(arms=[ArmSettings(name=UNCHANGED),
                          ArmSettings(name="ref", variant=VariantSpec.parse("ref=reference"))],
                    steps=4, max_warmup=2)
    swapper = InterleavedSwapper(ProcessSettings(arm="every arm", result=str(
        tmp_path / "r.json"), outputs=str(tmp_path / "o.st"), interleave=il))
    installed = Installed(lambda *_: None, wrap=swapper.wrap)
    api.active.marks = swapper
    q = torch.randn(1, 2, 32, 64, dtype=torch.bfloat16)
    try:
        with torch.no_grad():
            for _ in range(100):
                with sagetui.region("step"):
                    for _ in range(3):  # three layers of one shape
                        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    except SwapDone:
        pass
    finally:
        installed.remove()
        api.active.marks = None
    # one per arm and shape: a round's number is no part of the key
    assert {arm: len(plans) for arm, plans in swapper._plans.items()} == {UNCHANGED: 1, "ref": 1}
    result = swapper.finish()
    steps = [t for t in result.steps if t.kind == "step"]
    assert len(steps) == 8 and all(t.attention.count == 3 for t in steps)
    assert all(t.swapped.count == (3 if t.arm == "ref" else 0) for t in steps)


def test_outputs_of_any_shape_are_named_and_nan_is_a_problem_not_a_failure() -> None:
    x = torch.ones(3)
    tensors, problems = flatten("out", (x, {"a": x * 2, "b": [x, "word"]}, 7))
    assert set(tensors) == {"out[0]", "out[1].a", "out[1].b[0]"}
    assert problems == {"out[1].b[1]": "not a tensor (str): not compared",
                        "out[2]": "not a tensor (int): not compared"}
    same = compare(x, x)
    assert same.sums is not None and same.max_abs == 0.0 and same.problem is None
    bad = compare(torch.tensor([1.0, float("nan")]), x[:2])
    assert bad.sums is None and bad.problem is not None and "NaN or inf in this arm's" in \
        bad.problem
    assert compare(x, torch.ones(4)).problem == "shape [3] against the reference arm's [4]"


def _steps(clocks: dict[str, list[float]]) -> list[SwapProcess]:
    steps = [StepTime(round=r, arm=arm, kind="step", host_s=1e-3, gpu_s=1e-3 * (1 + 0.01 * r),
                      sm_clock_mhz=c) for arm, cs in clocks.items() for r, c in enumerate(cs)]
    return [SwapProcess(round=0, arm="every arm", status="ok", wall_s=1.0,
                        result=ProcessResult(arm="every arm", step_region="step", steps=steps))]


def test_unequal_clocks_make_the_comparison_inconclusive_with_the_reason() -> None:
    even = _steps({"unchanged": [1980.0] * 6, "sm90": [1965.0] * 6})
    assert derive.clock_problem(even, "sm90", "unchanged") is None  # within one clock step
    apart = _steps({"unchanged": [1980.0] * 6, "sm90": [1600.0] * 6})
    why = derive.clock_problem(apart, "sm90", "unchanged")
    assert why is not None and why.startswith("the arms ran at unequal clocks: sm90 1600 MHz")
    f = {x.arm: x for x in derive.arm_figures(apart, ["unchanged", "sm90"], "unchanged", 1.0)}
    assert f["sm90"].step is not None and f["sm90"].step.state == "INCONCLUSIVE"
    assert f["sm90"].clock_problem == why and f["sm90"].step_change_percent is None
