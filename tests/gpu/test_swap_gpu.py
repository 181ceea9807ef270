"""Issue 31 on a GPU: `sagetui swap` of benchmarks/swap_models.py's blocks (small: 1,024
tokens, 2 steps) to sage2-sm90 against the program unchanged, 2 rounds: every call swapped, the
step and the attention timed with CUDA events, the output compared, and `check` passing."""

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


def test_a_swap_to_sm90_is_timed_with_cuda_events_and_checks(tmp_path) -> None:
    out = tmp_path / "swap.json"
    done = subprocess.run(
        [sys.executable, "-m", "sagetui", "swap", "--variant", "sm90=sage2-sm90", "--rounds",
         "2", "--json", str(out), "--", "python", str(ROOT / "benchmarks" / "swap_models.py"),
         "--tokens", "1024", "--warmup", "1", "--steps", "2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")))
    assert done.returncode == 0, done.stderr + done.stdout
    report = load_report(out)
    s = report.swap
    assert s is not None and s.clock == "cuda events" and s.step == "step"
    f = {x.arm: x for x in s.figures}
    assert f["sm90"].swapped == 24 and f["sm90"].passed == 0  # 8 blocks x 3 passes
    assert f["sm90"].call_gpu_s and f["sm90"].attention_share_percent
    assert 0 < f["sm90"].outputs[0].relative_l1 < 0.1
    assert any(p.result and p.result.telemetry for p in s.processes)
    assert check_report(report) == []
