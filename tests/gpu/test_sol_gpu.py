"""On the GPU: a run of sage2-sm89 records the copy bandwidth and a speed-of-light
block per variant, and `sagetui check` recomputes every figure of it. On an H200 the measured
copy bandwidth lies in a plausible band (the HBM3e's 4.8 TB/s datasheet figure bounds it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
from gpu_stats import GPU_MARKS

from sagetui.core.report.io import load_report

pytestmark = GPU_MARKS
ROOT = Path(__file__).resolve().parents[2]


def _sagetui(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "XDG_STATE_HOME": str(cwd / "state")}
    return subprocess.run([sys.executable, "-m", "sagetui", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_sm89_run_records_sol_figures_that_pass_check(tmp_path: Path) -> None:
    out = tmp_path / "sm89.json"
    run = _sagetui(tmp_path, "run", "--backend", "sage2-sm89", "--q-len", "16384", "--heads",
                   "32", "--rounds", "3", "--iterations", "10", "--warmup", "3",
                   "--json", str(out))
    assert run.returncode == 0, run.stderr[-2000:]
    report = load_report(out)
    gpu = (report.environment or {})["gpu"]
    bw = gpu["copy_bandwidth"]
    assert bw["moved_bytes"] == 2 * bw["buffer_bytes"] >= 2 * 2**30, bw
    assert len(bw["seconds"]) == bw["repeats"]
    if "H200" in torch.cuda.get_device_name():
        assert 3000 <= bw["gbps"] <= 4900, bw  # GB/s: read + written
    v = report.variants[0]
    assert v.sol is not None and v.sol.phases
    assert v.sol.copy_gbps == bw["gbps"]
    for name in ("q_int8_quantization", "k_int8_subtract_mean_quantization",
                 "v_transpose_pad_permute", "v_scale_fp8_quantization", "fused_mainloop"):
        p = v.sol.phases[name]
        assert p.gbps and p.share_of_copy and p.share_of_copy < 1.2, (name, p)
    assert v.sol.compute_phase == "fused_mainloop"
    assert v.sol.clock_ceiling_tops and v.sol.clock_ceiling_tops <= v.sol.peak_tops
    assert v.sol.share_of_clock_ceiling >= v.sol.share_of_peak
    check = _sagetui(tmp_path, "check", str(out))
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
