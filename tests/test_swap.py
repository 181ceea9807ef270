"""`sagetui swap` on the CPU: tests/swap_model.py (bf16 attention blocks of our own) swapped
between `reference` and `reference[slowdown=2]` and against the program unchanged, interleaved
step by step in one process (the default) and in a process per arm and round (--processes);
the report, its check, compare and the console's panel; the wrapper's reasons for passing calls
through; bad input; a program that fails in one arm only; Ctrl-C and SIGTERM. The schedule,
the outputs and the clocks' rule have tests of their own in tests/test_swap_parts.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from sagetui.cli.run_options import no_cuda_here
from sagetui.core.check.report import check_report
from sagetui.core.report.io import load_report

from .conftest import sagetui_here

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests" / "swap_model.py"


def _swap(cwd: Path, *args: str) -> SimpleNamespace:
    """`sagetui swap ARGS` in this process (what it printed, wrote and exited with; the
    program is still a process of its own): a `sagetui` process of its own cost 0.5 s of CPU
    a swap. The swaps stopped by a signal, and the one that replays a capture (its `sagetui
    run` writes to the swap's stderr as a file), run as processes."""
    return sagetui_here("swap", *args, cwd=cwd)


@pytest.fixture(scope="module")
def swapped(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                                Path]:
    """One interleaved swap of the model (4 arms and the unwrapped one, 6 measured steps each),
    with a capture of the same program replayed (--workload): the tests below read its
    report."""
    d = tmp_path_factory.mktemp("swap")
    out = d / "swap.json"
    env = dict(os.environ, XDG_STATE_HOME=str(d / "state"))
    subprocess.run([sys.executable, "-m", "sagetui", "capture", "--out", str(d / "cap"),
                    "--max-calls", "2", "--", "python", str(MODEL), "--steps", "0"], cwd=d,
                   env=env, check=True, capture_output=True, timeout=300)
    done = subprocess.run([sys.executable, "-m", "sagetui", "swap", "--variant", "ref=reference",
                           "--variant", "slow=reference[slowdown=2]", "--baseline", "ref",
                           "--steps", "6", "--workload", str(d / "cap"), "--json", str(out),
                           "--", "python", str(MODEL), "--tokens", "256", "--steps", "400"],
                          cwd=d, capture_output=True, text=True, timeout=300, env=env)
    return done, out


def test_the_step_change_matches_the_injected_work_and_outputs_are_compared(swapped) -> None:
    done, out = swapped
    assert done.returncode == 0, done.stderr
    assert "4 arms interleaved step by step in one process" in done.stderr
    report = load_report(out)
    s = report.swap
    assert s is not None and report.status == "complete" and s.step == "step"
    assert s.mode == "interleaved" and len(s.processes) == 1
    steps = s.processes[0].result.steps
    names = ["unchanged", "ref", "slow", "unwrapped"]
    # round by round, a Williams square's rows: no step follows a step of its own arm
    assert [t.arm for t in steps[:8]] == [names[i] for i in (0, 1, 3, 2, 1, 2, 0, 3)]
    assert all(a.arm != b.arm for a, b in zip(steps, steps[1:], strict=False))
    warm = {t.round for t in steps if t.kind == "warmup"}
    assert len(warm) >= 2 and all(t.round > max(warm) for t in steps if t.kind != "warmup")
    kinds = [t.kind for t in steps if t.kind != "warmup"]
    assert kinds == ["attention"] * 8 + ["step"] * 24  # 2 rounds timing each call, then 6
    f = {x.arm: x for x in s.figures}
    assert {x.rounds for x in s.figures} == {6}  # --steps 6: then the program was ended
    assert "each arm has 6 measured steps (--steps 6)" in done.stdout
    assert f["unchanged"].swapped == 0 and f["unchanged"].passed_reasons == {
        "the program unchanged": 16}  # 2 blocks a step, 8 measured steps: no warm-up call
    assert f["ref"].swapped == f["slow"].swapped == 2 and f["slow"].passed == 0
    slow = f["slow"]
    # the injected work: the swapped calls' extra time, against the baseline's step
    injected = slow.attention_added_s / f["ref"].step_s * 100
    assert injected > 5  # measurable (about 60 % on an idle machine)
    assert slow.step_change_low_percent <= injected <= slow.step_change_high_percent
    assert slow.step_change_percent > 0 and slow.attention_change_percent > 20
    o = {x.name: x for x in slow.outputs}["latents"]  # against the unchanged arm's
    assert o.rounds == 2 and 0 < o.relative_l1 < 0.05 and o.cosine_similarity > 0.99
    assert s.processes[0].result.repeatable is True
    assert "the step is repeatable" in done.stdout
    assert f["unchanged"].wrapper_change_percent is not None
    assert "unchanged: the wrapper's cost" in done.stdout
    assert check_report(report) == []
    assert "output 'latents': relative L1" in done.stdout
    # the replay: each arm's total from `sagetui run --workload`, its change beside the model's
    assert s.replay is not None and set(s.replay.totals_s) == {"ref", "slow"}
    assert s.replay.unchanged_as == "sdpa"  # the program's own function (no CUDA here)
    assert s.replay.report and Path(s.replay.report).exists()  # kept, beside the report
    assert slow.replay_change_percent is not None and slow.replay_change_percent > 0
    assert slow.replay_note and slow.replay_note.startswith(
        f"replay predicted {slow.replay_change_percent:+.0f} %, in the model "
        f"{slow.attention_change_percent:+.0f} %: ")
    assert f"slow: {slow.replay_note}" in done.stdout
    assert "slow: a swapped call in the model: host" in done.stdout
    from sagetui.core.export.report import to_markdown

    md = to_markdown(report)  # said as it ran: not "one process per arm a round"
    assert "| slow | 6 |" in md and "- 6 steps per arm asked, every arm in one process" in md


def test_check_recomputes_a_swap_and_compare_lines_arms_up(swapped, cli_here, tmp_path) -> None:
    _, out = swapped  # check and compare as main() runs them, in this process
    assert cli_here("check", out).returncode == 0
    data = json.loads(out.read_text())
    data["swap"]["figures"][2]["step_change_percent"] = -50.0
    data["swap"]["figures"][2]["outputs"][0]["relative_l1"] = 0.5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    done = cli_here("check", bad)
    assert done.returncode == 1
    assert "$.swap.figures[2].step_change_percent" in done.stdout
    assert "$.swap.figures[2].outputs[0].relative_l1" in done.stdout
    compared = cli_here("compare", out, out)
    assert compared.returncode == 0 and "B faster than A %" in compared.stdout
    mixed = cli_here("compare", out, ROOT / "sample_results" / "cpu_reference_default.json")
    assert mixed.returncode == 2 and "a swap report" in mixed.stderr


def test_the_console_shows_a_swap_report(swapped) -> None:
    import asyncio

    from tests.tui.conftest import screen_text, settle, viewer

    _, out = swapped

    async def look() -> str:
        app = viewer(out)
        async with app.run_test(size=(170, 48)) as pilot:
            await settle(pilot, app)
            return screen_text(app)

    text = asyncio.run(look())
    assert "sagetui swap · step: step (cpu time) · baseline ref" in text
    assert "slow" in text and "output 'latents': relative L1" in text
    assert "no phase timings yet" not in text  # the run's panels give way to the swap's


def test_the_wrapper_swaps_what_the_backend_runs_and_says_why_it_passes_the_rest(
        tmp_path) -> None:
    """In this process: the recorder's wrappers with the swap's in their place (no mock)."""
    import torch
    import torch.nn.functional as F

    from sagetui.core.blocks.swap import ProcessSettings
    from sagetui.core.config import VariantSpec
    from sagetui.recorder.install import Installed
    from sagetui.runner.backends.base import Inputs, NullClock
    from sagetui.swap.inside import Swapper, load_backend

    spec = VariantSpec.parse("ref=reference")
    swapper = Swapper(ProcessSettings(arm="ref", variant=spec, result=str(tmp_path / "r.json"),
                                      outputs=str(tmp_path / "o.safetensors")))
    q, k, v = (torch.randn(1, 2, 64, 64, dtype=torch.bfloat16) for _ in range(3))
    kv = [torch.randn(1, 1, 64, 64, dtype=torch.bfloat16) for _ in range(2)]
    installed = Installed(lambda *_: None, wrap=swapper.wrap)
    try:
        swapped = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.2)
        F.scaled_dot_product_attention(q, *kv, enable_gqa=True)  # GQA: swapped
        F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(64, 64, dtype=torch.bool))
        F.scaled_dot_product_attention(q.float(), k.float(), v.float())
        F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
    finally:
        installed.remove()
    want = load_backend(spec).run(Inputs(q=q, k=k, v=v, layout="HND", causal=True,
                                         sm_scale=0.2), NullClock())
    assert torch.equal(swapped, want)  # the backend's output, same tensors and options
    result = swapper.finish()
    assert result.swapped.count == 2 and result.attention.count == 5
    assert result.passed == {"its bool attn_mask is not part of a run": 1,
                             "float32: a run is fp16 or bf16": 1,  # no replay's --dtype
                             "dropout_p 0.1 is not part of a run": 1}
    assert F.scaled_dot_product_attention.__name__ == "scaled_dot_product_attention"

    # --calls: only the selected calls are swapped; the rest pass through, said so
    chosen = Swapper(ProcessSettings(arm="ref", variant=spec, calls="1", result=str(
        tmp_path / "r2.json"), outputs=str(tmp_path / "o2.safetensors")))
    installed = Installed(lambda *_: None, wrap=chosen.wrap)
    try:
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v)
    finally:
        installed.remove()
    assert [c[1] for c in chosen.calls] == [False, True, False]
    assert chosen.passed == {"not selected by --calls": 2}


def test_region_and_output_do_nothing_outside_a_swap() -> None:
    import sagetui

    with sagetui.region("step"):
        sagetui.output("latents", object())


@pytest.mark.parametrize(("args", "said"), [
    (["--", "python", str(MODEL)], "give at least one --variant"),
    (["--variant", "x=nosuch", "--", "python", str(MODEL)], "unknown backend 'nosuch'"),
    (["--variant", "unchanged=reference", "--", "python", str(MODEL)], "'unchanged' is the"),
    (["--variant", "a=reference", "--baseline", "b", "--", "python", str(MODEL)],
     "--baseline b: no such arm"),
    (["--variant", "a=reference", "--", "python", "missing.py"], "does not exist"),
    (["--variant", "a=reference", "--calls", "x-y", "--", "python", str(MODEL)],
     "is not a selection"),
    (["--variant", "a=reference", "--workload", "nodir", "--", "python", str(MODEL)],
     "nodir: no such directory"),
    (["--variant", "a=reference"], "no program given"),
    (["--variant", "a=reference", "--threshold", "0", "--", "python", str(MODEL)],
     "--threshold 0.0: give a percentage above 0"),
    (["--variant", "a=reference", "--threshold", "nan", "--", "python", str(MODEL)],
     "--threshold nan: give a percentage above 0"),
    (["--variant", "a=reference", "--threshold", "-1", "--", "python", str(MODEL)],
     "give a percentage above 0"),
    (["--variant", "mine=reference@/no/such.so", "--", "python", str(MODEL)],
     "/no/such.so does not exist"),
    pytest.param(["--variant", "a=sage2-sm90", "--", "python", str(MODEL)],
                 "sage2-sm90 CUDA is not available", marks=pytest.mark.skipif(
                     no_cuda_here("cuda") is None, reason="torch here is a CUDA build")),
    (["--variant", "a=reference", "--rounds", "3", "--", "python", str(MODEL)],
     "--rounds is for --processes"),
    (["--variant", "a=reference", "--steps", "1", "--", "python", str(MODEL)],
     "--steps 1: give a whole number >= 2"),
    (["--variant", "unwrapped=reference", "--", "python", str(MODEL)], "'unwrapped' is the"),
    (["--variant", "a=reference", "--until-ci", "0", "--", "python", str(MODEL)],
     "--until-ci 0.0: give percentage points above 0"),
    (["--variant", "a=reference", "--affinity", "1-0", "--", "python", str(MODEL)],
     "--affinity '1-0': give CPUs as 2, 0-3 or 0,2-3"),
    (["--variant", "a=reference", "--affinity", "4095", "--", "python", str(MODEL)],
     "--affinity 4095: CPU 4095 is not one this process may run on"),
    (["--variant", "a=reference", "--processes", "--affinity", "4095", "--", "python",
      str(MODEL)], "--affinity 4095: CPU 4095 is not one this process may run on"),
    (["--variant", "a=reference", "--processes", "--until-ci", "2", "--", "python",
      str(MODEL)], "--until-ci is for the interleaved mode"),
])
def test_bad_input_is_one_line_and_exit_2(cli_here, args, said) -> None:
    # in this process (main() as `python -m sagetui` calls it, its exit status and stderr):
    # a refusal needs no interpreter of its own; test_cli's refusals run as a child process
    done = cli_here("swap", *args)
    assert done.returncode == 2 and said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "round 1/" not in done.stderr


def test_a_program_failing_in_one_arm_is_a_failed_arm_and_the_others_kept(tmp_path) -> None:
    out = tmp_path / "failed.json"
    done = _swap(tmp_path, "--variant", "ref=reference", "--processes", "--rounds", "3",
                 "--json", str(out), "--", "python", str(MODEL), "--fail-if-swapped",
                 "--steps", "1")
    assert done.returncode == 1, done.stderr
    report = load_report(out)
    assert report.status == "partial"
    assert report.status_detail and "arm ref failed in round 1" in report.status_detail[0]
    s = report.swap
    assert s is not None
    failed = [p for p in s.processes if p.status == "failed"]
    assert [p.arm for p in failed] == ["ref"] and failed[0].exit_status == 1
    assert any("refuses a swapped attention" in line for line in failed[0].error or [])
    assert {p.arm for p in s.processes if p.status == "ok"} == {"unchanged"}
    assert "ref failed in round 1; its last lines:" in done.stdout
    assert "fewer than two arms left to compare: no more rounds" in done.stderr
    assert check_report(report) == []


def _ctrl_c_as_from_a_terminal() -> None:
    """In the child: Ctrl-C as a shell hands it to a command it starts, default and unblocked.
    In .ci/run (two xdist workers, loaded) the swap twice ran all its rounds through the
    SIGINT and exited 0, though alone and in every targeted run it stopped; no test was found
    to leave SIGINT ignored (a probe after each test of the in-process ones), so the
    disposition and mask the child inherits from the test's worker are set here, and the
    assertion says what the worker had."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_keeps_the_rounds_done(tmp_path) -> None:
    out = tmp_path / "stopped.json"
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    proc = subprocess.Popen([sys.executable, "-m", "sagetui", "swap", "--variant",
                             "ref=reference", "--no-unchanged", "--variant",
                             "slow=reference[slowdown=2]", "--baseline", "ref", "--processes",
                             "--rounds", "5",
                             "--json", str(out), "--", "python", str(MODEL), "--steps", "1"],
                            cwd=tmp_path, stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env, preexec_fn=_ctrl_c_as_from_a_terminal)
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 240
    for line in proc.stderr:  # the first round done: its second process has reported
        seen.append(line)
        if line.startswith("round 1/5 · slow") or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=120)
    worker = (f"\n(this test's process: SIGINT {signal.getsignal(signal.SIGINT)}, blocked "
              f"{sorted(signal.pthread_sigmask(signal.SIG_BLOCK, []))})")
    assert proc.returncode == 1, "".join(seen) + "<- SIGINT sent here\n" + err + worker
    assert "keeping the 1 round(s) done" in err, err
    report = load_report(out)
    assert report.status == "partial"
    assert report.swap is not None and {p.round for p in report.swap.processes} == {0}
    assert any("stopped by SIGINT after 1 of 5 rounds" in x for x in report.status_detail or [])


@pytest.mark.parametrize("where", ["between two rounds", "at the round's last line"])
def test_a_ctrl_c_wherever_it_lands_keeps_whole_rounds_only(monkeypatch, where) -> None:
    """Ctrl-C lands where it lands: between two rounds (once it ended `sagetui swap` with 130
    and no report), or on the last progress line of a round. The rounds' bookkeeping alone is
    under test, so the processes are stand-ins; real ones stopped by a real SIGINT are the
    test above's."""
    from sagetui.core.blocks.swap import SwapProcess
    from sagetui.session import swap

    def process(self, tmp, r, arm, earlier, forwarded):
        return (SwapProcess(round=r, arm=arm.name, status="ok", wall_s=0.1),
                [f"round {r + 1}/3 · {arm.name}"])

    monkeypatch.setattr(swap.SwapRounds, "_process", process)
    order = swap.round_order

    def interrupted_order(arms, r):
        if where == "between two rounds" and r == 1:
            raise KeyboardInterrupt
        return order(arms, r)

    monkeypatch.setattr(swap, "round_order", interrupted_order)
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if line == "round 1/3 · b":  # round 1 runs a then b
            raise KeyboardInterrupt

    arms = [swap.Arm("a", None), swap.Arm("b", None)]
    rounds = swap.SwapRounds(["python", "x.py"], arms, 3,
                                      say=say if where != "between two rounds" else said.append)
    kept = rounds.run()
    assert rounds.interrupted
    assert [(p.round, p.arm) for p in kept] == [(0, "a"), (0, "b")]
    assert said[-1] == "interrupted in round {}: keeping the 1 round(s) done".format(
        2 if where == "between two rounds" else 1)


def test_telemetry_is_shown_per_round_from_the_processes_summaries() -> None:
    from sagetui.core.blocks.swap import ProcessResult, Swap, SwapProcess
    from sagetui.core.swap.view import telemetry_lines
    from sagetui.core.telemetry import summarize_samples, unavailable

    def sample(clock: float) -> dict[str, object]:
        return {"sm_clock_mhz": clock, "mem_clock_mhz": 3201.0, "temperature_c": 40.0,
                "power_w": 300.0, "throttle_reasons": ["sw_power_cap"]}

    def proc(r: int, arm: str, telemetry: dict[str, object]) -> SwapProcess:
        return SwapProcess(round=r, arm=arm, status="ok", wall_s=1.0,
                           result=ProcessResult(arm=arm, telemetry=telemetry))

    s = Swap(argv=["python", "x.py"], arms=[], baseline="unchanged", rounds_asked=2,
             step="step", clock="cuda events", threshold_percent=1.0, figures=[],
             processes=[proc(0, "unchanged", summarize_samples([sample(1980.0)])),
                        proc(0, "a", summarize_samples([sample(1965.0), sample(1980.0)])),
                        proc(1, "a", unavailable("NVML cannot open the GPU"))])
    assert telemetry_lines(s) == [
        "round 1: SM clock 1965-1980 MHz, temperature 40 °C, power 300 W; clock events: "
        "sw_power_cap", "round 2: no telemetry (NVML cannot open the GPU)"]


def test_the_unchanged_arm_is_replayed_as_the_function_the_program_called() -> None:
    from sagetui.cli.swap import REPLAYED_AS, replayed_as
    from sagetui.core.capture.manifest import FUNCTIONS
    from sagetui.core.config import BACKEND_NAMES

    assert set(REPLAYED_AS) == set(FUNCTIONS) and set(REPLAYED_AS.values()) <= set(BACKEND_NAMES)
    assert replayed_as("sageattention.sageattn") == "sage2-auto"
    assert replayed_as(None) == "sdpa"


def test_the_replay_note_names_the_difference() -> None:
    from sagetui.core.swap.derive import replay_note

    assert replay_note(-54.0, -52.0) == "replay predicted -54 %, in the model -52 %: the " \
        "replay holds"
    assert replay_note(-54.0, -48.0) == "replay predicted -54 %, in the model -48 %: host " \
        "time the replay cannot see (the wrapper's, or a host-bound call)"  # the issue's words
    assert replay_note(-20.0, -40.0).endswith("the model gains more than the replay predicts "
                                              "(caches, overlap)")
    assert replay_note(None, -40.0) is None


def test_a_stock_backend_is_swapped_in_through_its_public_function(tmp_path) -> None:
    """What a user's swap pays is the library's public function (its Python and launches), so
    a variant without another build goes through `public`; one with a path runs its own build
    through `run`. SageAttention's public functions need CUDA: a subclass of the reference
    backend with a public function of its own stands in for one here."""
    import torch
    import torch.nn.functional as F

    from sagetui.core.blocks.swap import ProcessSettings
    from sagetui.core.config import VariantSpec
    from sagetui.recorder.install import Installed
    from sagetui.runner.backends.reference import ReferenceBackend
    from sagetui.swap.inside import Swapper

    class WithPublic(ReferenceBackend):
        def public(self, inputs):  # a marked output: which path ran
            return torch.full_like(inputs.q, 7.0)

    q, k, v = (torch.randn(1, 2, 64, 64, dtype=torch.bfloat16) for _ in range(3))
    outs = {}
    for spec in ("s=reference", "s=reference@/some/build/_qattn_sm89.so"):
        swapper = Swapper(ProcessSettings(arm="s", variant=VariantSpec.parse(spec),
                                          result=str(tmp_path / "r.json"),
                                          outputs=str(tmp_path / "o.safetensors")))
        swapper.backend = WithPublic()
        installed = Installed(lambda *_: None, wrap=swapper.wrap)
        try:
            outs[spec] = F.scaled_dot_product_attention(q, k, v)
        finally:
            installed.remove()
    assert bool((outs["s=reference"] == 7.0).all())
    assert not bool((outs["s=reference@/some/build/_qattn_sm89.so"] == 7.0).all())


def test_the_unchanged_arm_against_itself_reads_same_and_the_wrapper_is_costed(tmp_path) -> None:
    out = tmp_path / "aa.json"
    # a step of some 10 ms: a loaded machine's interference in a 3 ms one read an A/A
    # interval of [-27.7, +13.3] in one .ci/run
    done = _swap(tmp_path, "--variant", "twin=unchanged", "--steps", "30", "--threshold", "10",
                 "--json", str(out), "--", "python", str(MODEL), "--tokens", "1024",
                 "--blocks", "4", "--steps", "400")
    assert done.returncode == 0, done.stderr
    report = load_report(out)
    f = {x.arm: x for x in report.swap.figures}
    assert f["twin"].step.state == "SAME", done.stdout
    assert f["twin"].outputs[0].relative_l1 == 0.0  # the same program, the same bytes
    w = f["unchanged"]
    assert w.wrapper_change_low_percent <= w.wrapper_change_percent \
        <= w.wrapper_change_high_percent and w.wrapper_per_call_s is not None
    assert check_report(report) == []


def test_a_step_that_is_not_repeatable_is_said_and_outputs_come_from_processes(tmp_path) -> None:
    out = tmp_path / "random.json"
    # 64 tokens: where the outputs come from is the point, not the step's time (a quarter of
    # the CPU of 256 tokens' steps, 3 s of 11)
    done = _swap(tmp_path, "--variant", "ref=reference", "--steps", "2", "--json", str(out),
                 "--", "python", str(MODEL), "--random", "--steps", "400", "--tokens", "64")
    assert done.returncode == 0, done.stderr
    assert "the step is not repeatable (the unchanged arm's own steps disagree" in done.stdout
    s = load_report(out).swap
    assert s.processes[0].result.repeatable is False
    assert [p.arm for p in s.output_processes] == ["unchanged", "ref"]  # a process per arm
    o = {x.arm: x for x in s.figures}["ref"].outputs[0]
    assert o.rounds == 1 and 0 < o.relative_l1 < 0.05  # from the processes: same seed
    assert check_report(load_report(out)) == []


def test_too_few_steps_no_step_and_no_attention_call_are_said(tmp_path) -> None:
    few = _swap(tmp_path, "--variant", "ref=reference", "--json", str(tmp_path / "few.json"),
                "--", "python", str(MODEL), "--steps", "7")
    assert few.returncode == 1
    # 2 warm-up rounds at least, more while the steps have not settled (a loaded machine)
    said = re.search(r"the program ran its step 7 times: 3 arms need (\d+) at least \((\d+) "
                     r"warm-up, 2 attention and 2 measured rounds of 3 steps\); make its loop "
                     r"longer", few.stdout)
    assert said and int(said[1]) == 3 * (int(said[2]) + 4) and int(said[2]) >= 2, few.stdout
    assert load_report(tmp_path / "few.json").status == "failed"
    # not asked for with --json: the failed swap's report stays in its recovery file alone
    unasked = _swap(tmp_path, "--variant", "ref=reference", "--", "python", str(MODEL),
                    "--steps", "7")
    assert unasked.returncode == 1 and not list(tmp_path.glob("sagetui-report-*.json"))
    (kept,) = (tmp_path / "state" / "sagetui" / "recovery").glob("*.json")
    assert load_report(kept).status == "failed"
    assert f"the report of this failed swap is the recovery file {kept}" in unasked.stderr
    plain = _swap(tmp_path, "--variant", "ref=reference", "--json", str(tmp_path / "p.json"),
                  "--", "python", str(MODEL), "--plain")
    assert plain.returncode == 1 and "the program marked no step" in plain.stdout
    quiet = tmp_path / "quiet.py"
    quiet.write_text("import sagetui\nfor _ in range(50):\n    with sagetui.region('step'):\n"
                     "        pass\n")
    none = _swap(tmp_path, "--variant", "ref=reference", "--", "python", str(quiet))
    assert none.returncode == 2 and none.stderr.strip().endswith(
        "the program made no attention call (torch's scaled_dot_product_attention or "
        "sageattention's): nothing to swap; no report was written")
    assert not list(tmp_path.glob("sagetui-report-*.json"))


def test_sigterm_keeps_the_steps_done_ends_the_programs_children_and_checks(tmp_path) -> None:
    out, touched, pidfile = tmp_path / "term.json", tmp_path / "measuring", tmp_path / "child"
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    proc = subprocess.Popen([sys.executable, "-m", "sagetui", "swap", "--variant",
                             "ref=reference", "--steps", "100000", "--max-seconds", "600",
                             "--json", str(out), "--", "python", str(MODEL), "--steps", "100000",
                             "--touch-after", "90", str(touched), "--child", str(pidfile)],
                            # step 90: past 10 warm-up and 2 attention rounds of 3 arms, the
                            # most there can be
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    deadline = time.monotonic() + 240
    while not touched.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert touched.exists(), proc.communicate()[1]
    child = int(pidfile.read_text())
    proc.send_signal(signal.SIGTERM)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    report = load_report(out)
    s = report.swap
    assert report.status == "partial" and s.stopped_by == "SIGTERM"
    assert any(line.startswith("stopped by SIGTERM after") for line in report.status_detail)
    assert {x.arm: x for x in s.figures}["ref"].rounds >= 2  # the steps measured are kept
    assert check_report(report) == []
    assert not _alive(child)  # the program's own child went with it


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_outputs_of_any_shape_nested_regions_and_forked_calls(tmp_path) -> None:
    out = tmp_path / "outputs.json"
    done = _swap(tmp_path, "--variant", "ref=reference", "--steps", "2", "--no-wrapper-cost",
                 "--json", str(out), "--", "python", str(MODEL), "--outputs", "--nested",
                 "--fork", "--steps", "400", "--tokens", "64")  # outputs, not times
    assert done.returncode == 0, done.stderr + done.stdout
    s = load_report(out).swap
    o = {x.name: x for x in {f.arm: f for f in s.figures}["ref"].outputs}
    assert set(o) == {"latents", "pair[0]", "pair[1].twice", "count", "__metadata__", "nan"}
    assert o["pair[1].twice"].relative_l1 is not None and o["__metadata__"].rounds == 2
    assert o["count"].problem == "not a tensor (int): not compared"
    assert o["nan"].problem.startswith("NaN or inf in this arm's output (2 of 2 elements)")
    r = s.processes[0].result
    assert r.forked_calls == 2  # the forked child's pass: 2 blocks
    assert "2 attention calls in processes the program forked" in done.stdout
    # a step holds a nested block of its name: the outer block is the step (4 calls, not 2)
    assert {t.attention.count for t in r.steps} == {4}
    assert check_report(load_report(out)) == []
