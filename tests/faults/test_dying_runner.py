"""A dying runner: killed mid-round (SIGKILL), hung (SIGSTOP, caught by the watchdog), out of
GPU memory (injected), a CUDA error (injected; fatal: the runner exits and is restarted), an
exit in the middle of a block. The session (and the headless run) report which variant and
phase were running and the runner's last stderr lines, keep every completed round, and go on
without the failed variant."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time

import pytest

from sagetui.core.events import LogMessage
from sagetui.core.report.model import Report
from sagetui.session.session import Session

from ..conftest import sagetui_here
from .conftest import (
    alive,
    children,
    freeze_in,
    no_traceback,
    sagetui,
    start_sagetui,
    status_file_of,
    tiny_config,
    wait_for,
)

LEAVES = {"k_mean_and_smoothing_preparation", "q_int8_quantization",
          "k_int8_subtract_mean_quantization", "v_transpose_pad_permute",
          "v_scale_fp8_quantization", "fused_mainloop"}
# the runner as usual, after one line on its stderr: the words a fault must carry back
TALKING_RUNNER = [sys.executable, "-c", (
    "import sys\n"
    "print('runner: CUDA_LAUNCH_BLOCKING is not set', file=sys.stderr, flush=True)\n"
    "from sagetui.runner.main import main\n"
    "raise SystemExit(main())\n")]


def log_texts(stderr: str) -> list[str]:
    """`sagetui run`'s progress lines without their "  12.3 s  " prefix (the lines under them,
    a fault's stderr, as they are)."""
    return [re.sub(r"^\s*\d+\.\d s  ", "", ln) for ln in stderr.splitlines()]


def _run_and_stop_b(session: Session, then: signal.Signals) -> tuple[Report, dict, int]:
    """Run; in round 1 stop the runner inside one of b's phases, then send it `then`."""
    seen: dict = {}

    def watch() -> None:
        client = wait_for(lambda: session.client, what="the runner")
        pid = client.proc.pid
        seen["status"] = freeze_in(pid, client.status_path, "b", 1)
        seen["pid"] = pid
        if then != signal.SIGSTOP:
            os.kill(pid, then)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    report = session.run()
    t.join(timeout=5)
    return report, seen["status"], seen["pid"]


def _kept_rounds(report: Report, rounds: int, iterations: int = 20) -> None:
    """a: every round, whole; b: round 0 only (it died in round 1); faults listed."""
    a, b = report.variant("a"), report.variant("b")
    # b failed: the run is partial, never complete, and says when and what was kept
    assert report.rounds == rounds and report.status == "partial"
    assert any(line.startswith("variant b failed in round 2:") and "1 of 2 rounds kept" in line
               for line in report.status_detail or []), report.status_detail
    assert a.status == "ok" and len(a.rounds) == rounds
    assert all(len(r) == rounds and all(len(x) == iterations for x in r)
               for r in report.samples["a"].values())
    assert b.status == "failed" and len(b.rounds) == 1
    assert all(len(r) == 1 for r in report.samples["b"].values())
    assert b.error == report.faults[0].message


def test_runner_killed_mid_round(tmp_path):
    rec = tmp_path / "rec.json"
    s = Session(tiny_config("a=reference", "b=reference", iterations=20), recovery_path=rec,
                runner_argv=TALKING_RUNNER)
    events = []
    s.on_event = events.append
    report, status, pid = _run_and_stop_b(s, signal.SIGKILL)
    (fault,) = report.faults
    assert fault.kind == "died" and fault.message == "the runner was killed by SIGKILL"
    assert (fault.variant, fault.phase, fault.round) == ("b", status["phase"], 1)
    assert fault.phase in LEAVES
    assert fault.stderr_tail == ["runner: CUDA_LAUNCH_BLOCKING is not set"]
    _kept_rounds(report, 3)
    assert not alive(pid)
    assert any(isinstance(e, LogMessage) and "restarting the runner without b" in e.message
               for e in events)
    assert Report.model_validate_json(rec.read_text()) == report


def test_runner_hung_is_killed_by_the_watchdog(tmp_path):
    watchdog = 3.0
    s = Session(tiny_config("a=reference", "b=reference", iterations=20, watchdog_s=watchdog))
    t0 = time.monotonic()
    report, status, pid = _run_and_stop_b(s, signal.SIGSTOP)
    (fault,) = report.faults
    assert fault.kind == "hung"
    assert fault.message == "the runner stopped answering and was killed by the watchdog"
    assert (fault.variant, fault.phase, fault.round) == ("b", status["phase"], 1)
    _kept_rounds(report, 3)
    assert not alive(pid)  # SIGKILL ends a stopped process too
    assert watchdog <= time.monotonic() - t0 < watchdog + 30


@pytest.mark.parametrize("kind", ["oom", "cuda", "exit"])
def test_injected_gpu_faults(kind, tmp_path):
    """oom: the variant is dropped, the runner stays; cuda (fatal) and exit: the runner is
    gone, a new one goes on without the variant."""
    s = Session(tiny_config("a=reference", "b=reference", iterations=4),
                runner_env={"SAGETUI_INJECT_FAULT": f"{kind}@b:1"})
    pids: set[int] = set()
    s.on_event = lambda e: pids.add(s.client.proc.pid) if s.client else None
    report = s.run()
    (fault,) = report.faults
    assert (fault.variant, fault.round) == ("b", 1)
    assert fault.phase == "k_mean_and_smoothing_preparation"  # where the fault surfaced
    if kind == "oom":
        assert fault.kind == "oom" and "CUDA out of memory" in fault.message
        assert len(pids) == 1  # not fatal: the same runner goes on
    elif kind == "cuda":
        assert fault.kind == "cuda" and "an illegal memory access" in fault.message
        assert "RuntimeError: CUDA error" in fault.stderr_tail[-1]
        assert len(pids) == 2
    else:
        assert fault.kind == "died" and fault.message == "the runner exited with status 7"
        assert len(pids) == 2
    _kept_rounds(report, 3, iterations=4)
    # a clean run's runner stops beside its report (session/warm.py): gone soon, not at once
    wait_for(lambda: not any(alive(p) for p in pids), timeout=10, what="the runners to exit")


def test_headless_run_with_a_runner_killed_from_outside(tmp_path, started_runners):
    """`sagetui run`; the runner is killed with SIGKILL (as the OOM killer would) while b
    runs in round 1. The user sees the variant, the phase and what was kept; the report has
    a's rounds intact and b's round 0, the fault listed, and passes check."""
    p = start_sagetui("run", "--variant", "a=reference", "--variant", "b=reference",
                      "--heads", "2", "--q-len", "256", "--head-dim", "64", "--warmup", "1",
                      "--rounds", "3", "--iterations", "20", "--json", "r.json",
                      "--recovery-dir", "rec", cwd=tmp_path)
    seen: set[int] = set()  # runners
    others: set[int] = set()  # the recovery file's writer
    try:
        runner = wait_for(lambda: children(p.pid, "sagetui.runner"), what="the runner")[0]
        seen.add(runner)
        status_path = wait_for(lambda: status_file_of(runner), what="its status file")
        status = freeze_in(runner, status_path, "b", 1)
        os.kill(runner, signal.SIGKILL)
        while p.poll() is None:
            seen.update(children(p.pid, "sagetui.runner"))
            others.update(children(p.pid))
            time.sleep(0.05)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, err
    assert no_traceback(err)
    assert (f"FAULT died: the runner was killed by SIGKILL (variant b, phase {status['phase']}, "
            "round 1)") in log_texts(err)
    assert "restarting the runner without b" in err
    report = json.loads((tmp_path / "r.json").read_text())
    a, b = report["variants"]
    assert report["rounds"] == 3 and len(a["rounds"]) == 3 and len(b["rounds"]) == 1
    assert report["faults"][0]["variant"] == "b" and report["faults"][0]["round"] == 1
    assert "a (ok)" not in out and "b (failed)" in out  # the summary table
    check = sagetui_here("check", "r.json", *(tmp_path / "rec").iterdir(), cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert len(seen) == 2 and not any(alive(pid) for pid in seen | others)  # no orphan


def test_headless_run_shows_a_cuda_error_and_its_stderr(tmp_path):
    p = sagetui("run", "--variant", "a=reference", "--variant", "b=reference", "--heads", "2",
                "--q-len", "256", "--head-dim", "64", "--warmup", "1", "--rounds", "2",
                "--iterations", "3", "--json", "r.json", cwd=tmp_path,
                extra_env={"SAGETUI_INJECT_FAULT": "cuda@b:0"})
    assert p.returncode == 1 and no_traceback(p.stderr)
    lines = log_texts(p.stderr)
    i = next(i for i, ln in enumerate(lines)
             if ln.startswith("FAULT cuda: RuntimeError: CUDA error"))
    assert lines[i].endswith("(variant b, phase k_mean_and_smoothing_preparation, round 0)")
    assert any("RuntimeError: CUDA error: an illegal memory access" in ln
               for ln in lines[i + 1:i + 9])  # its last 8 stderr lines, indented below
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["rounds"] == 2 and report["variants"][0]["status"] == "ok"
    assert report["faults"][0]["kind"] == "cuda"


def test_a_dead_runner_of_the_only_variant_is_partial_not_complete(tmp_path):
    """Once, a runner killed by SIGKILL in round 2 of 4 read `complete, 1 rounds`. Its
    variant failed in round 2 with one round kept: the run is partial, and says so."""
    s = Session(tiny_config("b=reference", rounds=4, iterations=20))
    report, status, _ = _run_and_stop_b(s, signal.SIGKILL)
    (b,) = report.variants
    assert report.status == "partial" and report.rounds == 1
    assert b.status == "failed" and b.failed_round == 1 and b.rounds_asked == 2
    assert report.status_detail == [
        "variant b failed in round 2: the runner was killed by SIGKILL; 1 of 2 rounds kept"]


def test_a_variant_out_of_memory_at_its_warm_up_never_shortens_the_others(tmp_path):
    """Once, a variant whose first call runs out of memory (SDPA's math backend at a large
    shape on the H200) dropped that round for every variant, never made up: the other got 1
    round of 2 and the run read complete. Now the others get every round, the run is
    partial."""
    s = Session(tiny_config("sm=reference", "math=reference", rounds=2, iterations=3),
                runner_env={"SAGETUI_INJECT_FAULT": "oom@math:warmup"})
    report = s.run()
    sm, math = report.variants
    assert report.rounds == 2 and len(sm.rounds) == 2 and sm.status == "ok"
    assert math.status == "failed" and "out of memory" in (math.error or "")
    assert report.status == "partial"
    (line,) = [x for x in report.status_detail or [] if x.startswith("variant math failed")]
    assert "CUDA out of memory" in line and ".;" not in line, line  # its sentence, then kept
    assert {f.kind for f in report.faults} == {"oom"}


def test_an_out_of_memory_fault_says_what_was_asked_and_what_was_free() -> None:
    """torch's own message, as the H200 raised it for sdpa[backend=math] at q_len 65,536: the
    fault line keeps the sizes and drops the advice that follows them in every such error."""
    import torch

    from sagetui.core import events as ev
    from sagetui.core.status_board import StatusBoard
    from sagetui.runner.main import describe

    text = ("CUDA out of memory. Tried to allocate 512.00 GiB. GPU 0 has a total capacity of "
            "139.80 GiB of which 130.11 GiB is free. Process 593 has 782.00 MiB memory in use. "
            "Including non-PyTorch memory, this process has 8.91 GiB memory in use. If reserved "
            "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_"
            "segments:True to avoid fragmentation.  See documentation for Memory Management")
    fault = describe(torch.OutOfMemoryError(text), StatusBoard(None),
                     ev.Block(variant="math", round=0, half=0, iterations=10))
    assert fault.kind == "oom" and fault.variant == "math"
    assert fault.message == ("OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 GiB. "
                             "GPU 0 has a total capacity of 139.80 GiB of which 130.11 GiB is "
                             "free.")
