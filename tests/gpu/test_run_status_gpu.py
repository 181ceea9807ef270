"""On the GPU: what sagetui says of a run is what it measured. A runner killed by
SIGKILL mid-run, a variant that runs out of GPU memory beside one that fits, and a stop and
resume of an A/B in the console: each ends with the right status, rounds and exit code.
(sagetui run's JSON lines of events, --record-events, say when a round is done.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.report.io import load_report

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]


def _env(cwd: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "XDG_STATE_HOME": str(cwd / "state")}


def _sagetui(cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sagetui", *args], cwd=cwd,
                            env=_env(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _rounds_done(events: Path) -> int:
    try:
        lines = events.read_text().splitlines()
    except OSError:
        return 0
    return sum(1 for ln in lines if ln.startswith('{"event":"round_done"'))


def _runner_of(pid: int) -> int | None:
    out = subprocess.run(["pgrep", "-P", str(pid), "-f", "sagetui.runner"],
                         capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.stdout.split() else None


def test_a_runner_killed_by_sigkill_mid_run_ends_partial_with_exit_1(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    p = _sagetui(tmp_path, "run", "--backend", "sage2-sm90", "--q-len", "16384", "--heads",
                 "16", "--rounds", "30", "--iterations", "10", "--json", "r.json",
                 "--record-events", str(events))
    deadline = time.monotonic() + 240
    while _rounds_done(events) < 8:
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.02)
    runner = _runner_of(p.pid)
    assert runner is not None
    os.kill(runner, signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    report = load_report(tmp_path / "r.json")
    (v,) = report.variants
    assert report.status == "partial" and 8 <= report.rounds < 30, report.status
    assert v.status == "failed" and v.failed_round == report.rounds
    assert report.status_detail == [
        f"variant sage2-sm90 failed in round {report.rounds + 1}: the runner was killed by "
        f"SIGKILL; {report.rounds} of {report.rounds + 1} rounds kept"]
    print(f"\nkilled at round {report.rounds + 1} of 30: exit {p.returncode}, "
          f"status {report.status}: {report.status_detail}")


def test_a_variant_out_of_memory_never_shortens_the_other(tmp_path: Path) -> None:
    p = _sagetui(tmp_path, "run", "--variant", "sm90=sage2-sm90", "--variant",
                 "math=sdpa[backend=math]", "--q-len", "65536", "--heads", "32", "--rounds",
                 "2", "--json", "r.json")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 1, err
    report = load_report(tmp_path / "r.json")
    sm90, math = report.variants
    assert report.status == "partial" and report.rounds == 2
    assert sm90.status == "ok" and len(sm90.rounds) == 2 and sm90.timing.count == 20
    assert math.status == "failed" and "out of memory" in (math.error or "").lower()
    assert any(f.kind == "oom" for f in report.faults or [])
    print(f"\nsm90 {len(sm90.rounds)} of 2 rounds, math {math.status}: exit {p.returncode}, "
          f"status {report.status}: {report.status_detail}")


def test_a_stopped_ab_resumed_in_the_console_completes(tmp_path: Path) -> None:
    import asyncio

    from sagetui.tui.app import SageTUI
    from sagetui.tui.modals import ChoiceScreen

    cfg = RunConfig(shape=Shape(heads=16, q_len=8192, head_dim=128),
                    variants=[VariantSpec.parse("sm90=sage2-sm90"),
                              VariantSpec.parse("sm89=sage2-sm89")],
                    rounds=20, iterations=10, warmup=2)
    grace = 2.0

    async def drive() -> tuple[dict, list[str]]:
        app = SageTUI(config=cfg, recovery_path=tmp_path / "rec.json", export_dir=tmp_path)
        lines: list[str] = []
        async with app.run_test(size=(160, 48)) as pilot:
            write = app.write_log
            app.write_log = lambda line: (lines.append(line.text), write(line))  # type: ignore
            await pilot.press("r")
            while app.data.rounds_done < 3:
                await pilot.pause(0.05)
            app.run_control.stop(grace_s=grace)
            while app.running:
                await pilot.pause(0.05)
            stopped = app.final_report
            await pilot.press("r")
            await pilot.pause()
            assert isinstance(app.screen, ChoiceScreen)
            await pilot.press("r")  # resume
            await pilot.pause(2 * grace)  # the stop's timer has fired by now
            while app.running:
                await pilot.pause(0.1)
            done = app.final_report
            return {"stopped": (stopped.status, stopped.rounds),
                    "done": (done.status, done.rounds, [len(v.rounds or []) for v in
                                                        done.variants],
                             [v.status for v in done.variants], len(done.faults or []))}, lines

    got, lines = asyncio.run(drive())
    assert got["stopped"][0] == "cancelled" and 3 <= got["stopped"][1] < 20
    assert got["done"] == ("complete", 20, [20, 20], ["ok", "ok"], 0)
    assert not any("did not stop in time" in line for line in lines)
    print(f"\nstop + resume: {json.dumps(got)}")
