"""On a GPU: `sagetui swap` of benchmarks/swap_models.py's blocks (small: 1,024 tokens) to
sage2-sm90 against the program unchanged, interleaved in one process (the default) and in a
process per arm and round (--processes): every call of a step swapped, the steps timed with
CUDA events at the GPU's clocks (read as each step ended), the wrapper's cost measured against
the unwrapped arm, the output compared, and `check` passing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpu_stats import GPU_MARKS

from sagetui.core.check.report import check_report
from sagetui.core.report.io import load_report

pytestmark = GPU_MARKS
ROOT = Path(__file__).resolve().parents[2]
PROGRAM = [str(ROOT / "benchmarks" / "swap_models.py"), "--tokens", "1024", "--warmup", "1"]


def _swap(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sagetui", "swap", "--variant", "sm90=sage2-sm90", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")))


def test_an_interleaved_swap_to_sm90_is_timed_at_the_gpus_clocks_and_checks(tmp_path) -> None:
    out = tmp_path / "swap.json"
    done = _swap(tmp_path, "--steps", "6", "--json", str(out), "--", "python", *PROGRAM,
                 "--steps", "200")
    assert done.returncode == 0, done.stderr + done.stdout
    report = load_report(out)
    s = report.swap
    assert s is not None and s.mode == "interleaved" and s.clock == "cuda events"
    f = {x.arm: x for x in s.figures}
    assert set(f) == {"unchanged", "sm90", "unwrapped"}
    assert f["sm90"].swapped == 8 and f["sm90"].passed == 0  # 8 blocks a step
    assert f["sm90"].rounds == 6 and f["sm90"].call_gpu_s and f["sm90"].attention_share_percent
    assert f["sm90"].sm_clock_mhz and s.sustained_clock_mhz
    assert f["unchanged"].wrapper_change_percent is not None
    assert 0 < f["sm90"].outputs[0].relative_l1 < 0.1
    assert s.processes[0].result is not None and s.processes[0].result.repeatable
    assert check_report(report) == []


def test_a_swap_in_processes_brings_the_gpu_to_its_clocks_first(tmp_path) -> None:
    out = tmp_path / "swap.json"
    done = _swap(tmp_path, "--processes", "--rounds", "2", "--json", str(out), "--",
                 "python", *PROGRAM, "--steps", "2")
    assert done.returncode == 0, done.stderr + done.stdout
    s = load_report(out).swap
    assert s is not None and s.mode == "processes"
    for p in s.processes:
        assert p.result is not None and p.result.warmed_clocks
        assert p.result.warmed_clocks.startswith("SM clock") and p.result.step_clocks_mhz
    f = {x.arm: x for x in s.figures}
    assert f["sm90"].swapped == 24 and f["sm90"].sm_clock_mhz
    assert check_report(load_report(out)) == []
